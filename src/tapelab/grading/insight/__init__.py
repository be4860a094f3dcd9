"""Stage 5 beside handback, insight: what the instructor reads about the class.

`tables` builds insight.json and its CSVs from the gradebook and the autograded notebooks, `page` the
self-contained HTML report, `review` one exercise's answers grouped by cause (`tapelab review`). Runs in
the coordinator, after grading; writes no grade. May import the shared modules and `grades`.
"""
from tapelab.lazy import face

__all__ = ["ReviewError", "build", "render", "write"]

__getattr__, __dir__ = face(__name__, {
    "build": "tables", "write": "tables", "render": "page", "ReviewError": "review"})
