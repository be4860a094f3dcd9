"""`tapelab lint solutions notebooks src`, the command CI runs, passes on the course: every solution and
teaching cell meant to be right is clean, and every cell that shows a mistake on purpose names it in a pragma."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_course_passes_tapelab_lint():
    """Does the real CLI, in a subprocess as CI runs it, exit 0 on solutions/, notebooks/ and src/?"""
    tapelab = Path(sys.executable).with_name("tapelab")
    done = subprocess.run([str(tapelab), "lint", "solutions", "notebooks", "src"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "0 findings" and done.stderr == ""
