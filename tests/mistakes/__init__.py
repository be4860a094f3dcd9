"""Catalogued mistakes per notebook, shared by the checker tests and the grading round trip."""
