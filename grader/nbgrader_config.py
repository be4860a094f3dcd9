"""nbgrader configuration for the tapelab course, used by `tapelab release` and the grading pipeline."""
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "tapelab"
# Each notebook is its own assignment named like the notebook (01_basic_tape, ...).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# The nbgrader exchange lives in the course folder, private like it: formgrader lists the released
# assignments, and `nbgrader release_feedback NAME` copies feedback into exchange/<course_id>/feedback/.
import os  # noqa: E402

c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Per-cell timeout: nbgrader 0.9 reads both names.
c.Execute.timeout = 120
c.ExecutePreprocessor.timeout = 120
# Deleted graded cells come back from the gradebook rather than costing the student silently.
c.OverwriteCells.add_missing_cells = True

# Safety net: TensorFlow's C++ start-up lines never cost a student marks. Only stderr chunks that
# start with TensorFlow's own log prefix are dropped; the notebooks keep them away at the source.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = (
    r"^(WARNING: All log messages before absl::InitializeLog\(\)"
    r"|[IWE]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] (tensorflow|external)/)"
)

# Feedback: `tapelab grade`, `nbgrader generate_feedback` and formgrader's "Generate Feedback" button
# render it alike, with tapelab's steps: hidden tests cut, the student's HTML sanitised, no script
# on the page (see tapelab/grading/handback/page.py).
from tapelab.grading.handback.page import configure_feedback  # noqa: E402

configure_feedback(c)
