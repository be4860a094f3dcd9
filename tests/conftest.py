"""Make tests/ importable as a root, so tests share helpers (answers, course, mistakes); run the heaviest
modules first.

`make test` spreads test files over two workers (`--dist loadfile --no-loadscope-reorder`): each worker
takes the next file when it runs dry. Files marked `heavy(seconds)` (a module whose shared fixture takes a
minute or more) are handed out first, heaviest first, so no long file starts last while the other worker
idles. The marks only order the run; a wrong guess costs time, never a result.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def _weight(item) -> float:
    mark = item.get_closest_marker("heavy")
    return float(mark.args[0]) if mark else 0.0


def pytest_collection_modifyitems(config, items) -> None:
    items.sort(key=lambda item: -_weight(item))  # stable: each file's tests keep their order
