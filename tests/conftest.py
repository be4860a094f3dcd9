"""Shared test setup: quiet TensorFlow before any import; make tests/ importable as a root."""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
