"""Execute solution notebooks in place so their stored outputs are fresh (`make outputs`).

nbval compares against these outputs, so they are produced the way nbval runs them: in a
kernel whose TensorFlow logging is quiet, from the notebook's own folder, widget state unsaved.
"""
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"executed {path}")


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    names = sys.argv[1:] or sorted(p.stem for p in (root / "solutions").glob("[0-9][0-9]_*.ipynb"))
    for name in names:
        execute(root / "solutions" / f"{name}.ipynb")
