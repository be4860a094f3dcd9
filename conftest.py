"""Pytest setup for the whole repository (tests/ and the nbval run over solutions/)."""
import os

# Before anything imports TensorFlow, here and in the notebook kernels nbval starts.
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
