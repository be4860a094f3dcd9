"""Interactive widgets for the course notebooks, each with its maths kept apart from its drawing."""
from tapelab.widgets.tangent import TangentExplorer, TangentModel, TangentState

__all__ = ["TangentExplorer", "TangentModel", "TangentState"]
