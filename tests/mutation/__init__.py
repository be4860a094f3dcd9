"""Mutation testing of the exercise checkers: generated tape mistakes, graded as students are."""
