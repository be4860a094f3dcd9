"""`tapelab lint` over the installed TensorFlow and Keras Python sources: files per second, parallel over
cores against one process in the same run, and the findings per rule (precision: the aim is zero)."""
from __future__ import annotations

import collections
import sys
import sysconfig
import time
from pathlib import Path

from tapelab.lint import lint_paths

SITE = Path(sysconfig.get_paths()["purelib"])
TREES = [SITE / "tensorflow", SITE / "keras"]


def main() -> int:
    timings = {}
    for jobs in (1, None):
        start = time.perf_counter()
        findings, warnings, files = lint_paths(TREES, jobs=jobs)
        timings[jobs] = time.perf_counter() - start
    per_rule = collections.Counter(f"{f.number} {f.code}" for f in findings)
    print(f"files: {files}  warnings (not parsed): {len(warnings)}")
    print(f"one process: {files / timings[1]:.0f} files/s; all cores: {files / timings[None]:.0f} files/s "
          f"({timings[1] / timings[None]:.2f}x)")
    print(f"findings on TensorFlow and Keras: {len(findings)}")
    for rule, count in sorted(per_rule.items()):
        print(f"  {rule}: {count}")
    for finding in findings[:40]:
        print(f"  {finding.where()}: {finding.code}: {finding.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
