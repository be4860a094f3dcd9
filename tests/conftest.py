"""Make tests/ importable as a root, so tests share helpers (answers, course, mistakes); run the heaviest
modules first.

`make test` spreads test files over two workers (`--dist loadfile --no-loadscope-reorder`): each worker
takes the next file when it runs dry. Files marked `heavy(seconds)` (a module whose shared fixture takes a
minute or more) are handed out first, heaviest first, so no long file starts last while the other worker
idles. The marks only order the run; a wrong guess costs time, never a result.
"""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def _weight(item) -> float:
    mark = item.get_closest_marker("heavy")
    return float(mark.args[0]) if mark else 0.0


def pytest_collection_modifyitems(config, items) -> None:
    items.sort(key=lambda item: -_weight(item))  # stable: each file's tests keep their order


def pytest_terminal_summary(terminalreporter) -> None:
    """Seconds per test file (setup, call and teardown summed), the largest first: what the `heavy` marks
    should follow. `--durations` names single phases; this names the files that make the suite long. All
    files go to test-output/durations-by-file.json."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(getattr(report, "duration", None), float) and hasattr(report, "nodeid"):
                name = report.nodeid.split("::", 1)[0]
                seconds[name] = seconds.get(name, 0.0) + report.duration
    if not seconds:
        return
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    output = Path(terminalreporter.config.rootpath) / "test-output"
    output.mkdir(exist_ok=True)
    (output / "durations-by-file.json").write_text(json.dumps(dict(ranked), indent=1) + "\n")
    terminalreporter.write_sep("=", f"seconds per file, top 15 of {len(ranked)} ({sum(seconds.values()):.0f} s in all)")
    for name, total in ranked[:15]:
        terminalreporter.write_line(f"{total:8.1f} s  {name}")


@pytest.fixture
def keras_may_compile_with_xla():
    """Op determinism off for one test, as it was before. Keras falls back to `jit_compile=False` (with a
    warning) while op determinism is on, and every course notebook's setup cell turns it on for the whole
    process: a test that ran a setup cell in-process earlier in the same worker would leave it on."""
    from tensorflow.python.framework import config  # where Keras itself reads the switch

    was_on = config.is_op_determinism_enabled()
    config.disable_op_determinism()
    yield
    if was_on:
        config.enable_op_determinism()


@pytest.fixture
def shown(monkeypatch):
    """The messages tapelab's "predict, then run" questions show, in order (tapelab.checker.predictions.show)."""
    from tapelab.checker import predictions

    seen = []
    monkeypatch.setattr(predictions, "show", seen.append)
    return seen
