"""Is Binder ready? A fresh environment built only from binder/ runs notebook 01 headless.

Like repo2docker: a copy of the repository, a new venv, `pip install -r binder/requirements.txt`,
then `binder/postBuild`; the notebook runs under `binder/start` with that venv's kernel. Slow
(a ~2 GB venv, from pip's cache and local wheels), so it carries the `slow_env` marker.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "solutions/01_basic_tape.ipynb"
# What repo2docker would not see or need: local environments, caches, build and test output.
IGNORED = shutil.ignore_patterns(".git", ".venv", "test-output", "build", "*.egg-info", "__pycache__",
                                 ".pytest_cache", ".ipynb_checkpoints")

pytestmark = [pytest.mark.slow_env, pytest.mark.heavy(65)]

RUN_NOTEBOOK = textwrap.dedent("""
    import json, sys
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    stderr = [(i, o.text) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              and "raises-exception" not in c.metadata.get("tags", [])
              for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    print(json.dumps({"kernel_python": nb.cells[-1].outputs[0].text.strip(), "stderr": stderr}))
""")


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> str:
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (f"`{' '.join(map(str, argv))}` failed ({result.returncode}):\n"
                                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def test_binder_files_alone_build_an_environment_that_runs_notebook_01(tmp_path):
    """Does a venv made only from binder/requirements.txt and binder/postBuild run notebook 01 cleanly?"""
    try:
        _build_and_run(tmp_path)
    finally:  # ~2 GB: do not leave it to pytest's tmp_path retention
        shutil.rmtree(tmp_path / "venv", ignore_errors=True)


def _build_and_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo, ignore=IGNORED, symlinks=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    # Nothing from this test run leaks in: not our venv, our PYTHONPATH, or pytest's kernel flags.
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != Path(sys.executable).parent.resolve())
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTEST_CURRENT_TEST", "JUPYTER_PATH",
                        "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS"}}  # binder/start sets these two
    # Jupyter and IPython user folders are fresh too (a user kernelspec must not be picked up).
    env.update(PATH=f"{bin_dir}{os.pathsep}{path}", VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1",
               JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"), JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"), IPYTHONDIR=str(tmp_path / "ipython"))

    # --no-compile: byte-compiling all of TensorFlow's ~2 GB is most of the install's CPU and tests nothing of
    # binder/; the kernel compiles the modules it imports.
    _run([bin_dir / "pip", "install", "-q", "--no-compile", "-r", "binder/requirements.txt"], env, repo, timeout=1200)
    _run(["bash", "binder/postBuild"], env, repo, timeout=600)
    _run([bin_dir / "pip", "check"], env, repo, timeout=120)

    script = tmp_path / "run_notebook.py"
    script.write_text(RUN_NOTEBOOK)
    out = _run(["bash", "binder/start", bin_dir / "python", script, repo / NOTEBOOK], env, repo, timeout=900)
    report = json.loads(out.strip().splitlines()[-1])
    assert Path(report["kernel_python"]).parent == bin_dir, f"the kernel ran on {report['kernel_python']}"
    assert not report["stderr"], f"cells wrote to stderr: {report['stderr']}"
