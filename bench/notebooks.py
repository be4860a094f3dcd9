"""How long each solution notebook takes, how much memory its kernel needs, how fast widgets redraw.

    python bench/notebooks.py [NAME ...]      (`make bench`; names like 01_basic_tape, default all)

Each notebook runs headless with nbclient, exactly as `make outputs` does, and is compared with
the floor measured in the same run: a kernel that only imports TensorFlow and Keras. Targets:
at most 10 s over the floor and a kernel peak (VmHWM) under 900 MB per notebook (Binder gives
1-2 GB), and a median redraw under 100 ms per widget control (the first, cold redraw is shown
too). A missed target prints MISSED; only errors (a cell that fails, a widget that cannot be
built) make the exit status non-zero. Kernels' own stderr goes to test-output/bench-kernels.log.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pkgutil
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KERNEL_LOG = REPO / "test-output" / "bench-kernels.log"
MAX_OVER_FLOOR_S = 10.0
MAX_PEAK_MB = 900.0
MAX_REDRAW_MS = 100.0
REDRAWS = 30

FLOOR_SOURCE = """import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import tensorflow as tf
import keras"""
# Appended to every run: the kernel's peak resident memory (ru_maxrss is VmHWM, in kB on Linux).
PEAK_SOURCE = 'import resource as _r; print("TAPELAB_PEAK_KB", _r.getrusage(_r.RUSAGE_SELF).ru_maxrss)'


@dataclass
class Run:
    name: str
    wall_s: float
    peak_mb: float | None
    error: str = ""
    slowest: list[tuple[int, float]] = field(default_factory=list)  # (cell index, seconds), slowest first


def run_notebook(name: str, nb: nbformat.NotebookNode, cwd: Path) -> Run:
    """Execute `nb` in a fresh kernel (start to shutdown is the wall time) and read its peak memory."""
    nb.cells.append(nbformat.v4.new_code_cell(PEAK_SOURCE))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=False,
                            resources={"metadata": {"path": str(cwd)}})
    KERNEL_LOG.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        with KERNEL_LOG.open("ab") as log:  # kernels' own stderr (start-up warnings, shutdown races)
            client.execute(stderr=log)
    except Exception as error:  # a failing cell: report it, keep benchmarking the others
        return Run(name, time.perf_counter() - start, None, f"{type(error).__name__}: {_first_lines(error)}")
    wall = time.perf_counter() - start
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    kb = next((int(line.split()[1]) for line in text.splitlines() if line.startswith("TAPELAB_PEAK_KB")), None)
    return Run(name, wall, kb / 1024 if kb else None, "" if kb else "peak memory not reported",
               _slowest_cells(nb.cells[:-1]))


def _slowest_cells(cells: list, top: int = 3) -> list[tuple[int, float]]:
    """The cells that took longest, from the timestamps nbclient records in each cell's metadata."""
    times = []
    for index, cell in enumerate(cells):
        stamps = cell.get("metadata", {}).get("execution", {})
        start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
        if start and end:
            seconds = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                       - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
            times.append((index, seconds))
    return sorted(times, key=lambda item: -item[1])[:top]


def _first_lines(error: Exception, lines: int = 6) -> str:
    return " | ".join(str(error).strip().splitlines()[-lines:])


def floor() -> Run:
    return run_notebook("floor (tf + keras import)",
                        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_SOURCE)]), REPO)


# --- widgets -------------------------------------------------------------------------------------

@dataclass
class Redraw:
    widget: str
    control: str
    median_ms: float | None
    first_ms: float | None = None  # the first change: caches still cold
    error: str = ""


def widget_classes() -> list[type]:
    """Every public class in tapelab.widgets' modules that defines `update()` in a module using ipywidgets."""
    import tapelab.widgets as package

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        if "ipywidgets" not in inspect.getsource(module):
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not cls.__name__.startswith("_") \
                    and callable(vars(cls).get("update")):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[key] for key in sorted(found)]


def _controls(view: Any) -> dict[str, Any]:
    """The view's controls a student can move: its attributes that are value widgets with a choice."""
    import ipywidgets

    controls = {}
    for attr, value in vars(view).items():
        if isinstance(value, (ipywidgets.widgets.widget_int._Int, ipywidgets.widgets.widget_float._Float,
                              ipywidgets.widgets.widget_selection._Selection,
                              ipywidgets.widgets.widget_bool._Bool)) \
                and not isinstance(value, (ipywidgets.IntProgress, ipywidgets.FloatProgress)):
            controls[attr] = value
    return controls


def _two_values(control: Any) -> tuple[Any, Any]:
    """Two different legal values for `control`, so each assignment is a real change."""
    import ipywidgets

    current = control.value
    if isinstance(control, ipywidgets.widgets.widget_selection._Selection):
        return current, next(v for v in control._options_values if v != current)
    if isinstance(control, ipywidgets.widgets.widget_bool._Bool):
        return current, not current
    step = getattr(control, "step", None) or 1
    low, high = control.min, control.max

    def moved(value: float) -> float:
        return value + step if value + step <= high else value - step

    if isinstance(current, tuple):  # a range slider: move its lower end
        return current, (max(low, moved(current[0])), current[1]) if moved(current[0]) <= current[1] \
            else (current[0] - step, current[1])
    return current, max(low, min(high, moved(current)))


def time_redraws(cls: type) -> list[Redraw]:
    """Per control: set it (alternating between two values) and redraw; median of REDRAWS rounds.

    Setting the control fires the view's observer, which calls `update()`; if the view does not
    observe that control, `update()` is called explicitly, so each round is exactly one redraw.
    """
    name = cls.__qualname__
    calls = [0]
    original = cls.update

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(self, *args, **kwargs)

    cls.update = counted  # patched before building, so observers bound in __init__ count too
    try:
        view = cls()
    except Exception as error:
        cls.update = original
        return [Redraw(name, "-", None, error=f"cannot build with defaults: {type(error).__name__}: {error}")]
    try:
        return _time_controls(name, view, calls)
    finally:
        cls.update = original


def _time_controls(name: str, view: Any, calls: list[int]) -> list[Redraw]:
    """One Redraw per control of `view`: the median time from setting its value to a finished redraw."""
    controls = _controls(view)
    if not controls:
        return [Redraw(name, "-", None, error="no control found to move")]
    results = []
    for attr, control in controls.items():
        try:
            values = _two_values(control)
            times = []
            for round_ in range(REDRAWS):
                before = calls[0]
                start = time.perf_counter()
                control.value = values[(round_ + 1) % 2]
                if calls[0] == before:
                    view.update()
                times.append((time.perf_counter() - start) * 1000)
            results.append(Redraw(name, attr, statistics.median(times), times[0]))
        except Exception as error:
            results.append(Redraw(name, attr, None, error=f"{type(error).__name__}: {error}"))
    return results


# --- report --------------------------------------------------------------------------------------

def notebook_table(names: list[str]) -> int:
    """Run the floor, each notebook, the floor again; print the table. The number of errors."""
    print(f"Measuring the floor, then {len(names)} notebook(s), then the floor again "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores) ...", flush=True)
    floors = [floor()]
    runs = []
    for name in names:
        path = REPO / "solutions" / f"{Path(name).stem}.ipynb"
        try:
            nb = nbformat.read(path, as_version=4)
        except (OSError, ValueError) as error:  # missing or not a notebook
            runs.append(Run(path.stem, 0.0, None, f"cannot read {path.name}: {error}"))
            continue
        runs.append(run_notebook(path.stem, nb, path.parent))
        print(f"  {path.stem}: {runs[-1].wall_s:.1f} s", flush=True)
    floors.append(floor())
    base = min(f.wall_s for f in floors)  # the quieter measurement: over-floor errs on the high side

    print(f"\nNotebooks (floor = min of {len(floors)} runs: " + ", ".join(f"{f.wall_s:.1f} s" for f in floors)
          + f"; targets: <= {MAX_OVER_FLOOR_S:.0f} s over floor, peak < {MAX_PEAK_MB:.0f} MB)")
    header = f"{'notebook':<26} {'wall s':>7} {'floor s':>7} {'over s':>7} {'ratio':>6} {'peak MB':>8}  within targets"
    print(header + "\n" + "-" * len(header))
    errors = 0
    for run in [floors[0], *runs]:
        over = run.wall_s - base
        if run.error:
            errors += 1
            verdict = f"ERROR {run.error}"
        elif run is floors[0]:
            verdict = "(baseline)"
        else:
            missed = [f"{over:.1f} s over floor"] if over > MAX_OVER_FLOOR_S else []
            missed += [f"peak {run.peak_mb:.0f} MB"] if run.peak_mb >= MAX_PEAK_MB else []
            verdict = "yes" if not missed else "MISSED: " + ", ".join(missed)
            if missed and run.slowest:
                verdict += "; slowest cells: " + ", ".join(f"[{i}] {t:.1f} s" for i, t in run.slowest)
        peak = f"{run.peak_mb:8.0f}" if run.peak_mb is not None else f"{'?':>8}"
        print(f"{run.name[:26]:<26} {run.wall_s:7.1f} {base:7.1f} {over:7.1f} {run.wall_s / base:6.2f} {peak}  {verdict}")
    return errors


def widget_table() -> int:
    """Time every widget control's redraw; print the table. The number of errors."""
    print(f"\nWidgets (median of {REDRAWS} redraws after a control change; target < {MAX_REDRAW_MS:.0f} ms)")
    header = f"{'widget':<26} {'control':<14} {'median ms':>9} {'first ms':>9}  within target"
    print(header + "\n" + "-" * len(header))
    try:
        classes = widget_classes()
    except Exception:
        traceback.print_exc()
        return 1
    if not classes:
        print("(no widget classes found in tapelab.widgets)")
    errors = 0
    for cls in classes:
        for redraw in time_redraws(cls):
            if redraw.error:
                errors += 1
                print(f"{redraw.widget[:26]:<26} {redraw.control[:14]:<14} {'?':>9} {'?':>9}  ERROR {redraw.error}")
            else:
                verdict = "yes" if redraw.median_ms < MAX_REDRAW_MS else "MISSED"
                print(f"{redraw.widget[:26]:<26} {redraw.control[:14]:<14} {redraw.median_ms:9.1f} "
                      f"{redraw.first_ms:9.1f}  {verdict}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="solution notebooks to run, like 01_basic_tape (default: all)")
    parser.add_argument("--no-widgets", action="store_true", help="skip the widget redraw timings")
    args = parser.parse_args(argv)
    names = args.names or sorted(p.stem for p in (REPO / "solutions").glob("[0-9][0-9]_*.ipynb"))
    errors = notebook_table(names)
    if not args.no_widgets:
        errors += widget_table()
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(other work on the machine inflates wall times).")
    if errors:
        print(f"{errors} error(s)", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
