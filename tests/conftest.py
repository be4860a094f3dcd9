"""Make tests/ importable as a root, so tests share helpers (answers, course, mistakes)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
