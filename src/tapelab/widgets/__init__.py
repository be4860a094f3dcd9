"""Interactive widgets for the course notebooks, each with its maths kept apart from its drawing.

Runs in the student's kernel, with ipywidgets; a notebook imports the widget's module
(`tapelab.widgets.none_map`, ...). May import `tapelab.diagnose` (the None map draws its report), never
the checker, grading or the CLI. Every explorer takes `ask=` (its section's question) and `truth=` (the
answer the notebook computed), and then asks first (tapelab.widgets.ask).
"""
from tapelab.widgets.tangent import TangentExplorer, TangentModel, TangentState

__all__ = ["TangentExplorer", "TangentModel", "TangentState"]
