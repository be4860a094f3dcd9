"""The second catalogue of mistakes: 4 per exercise, written from each exercise's text as a student would,
before the diagnosis engine (tapelab.checker.differential) existed, and never tuned to. `tools/named.py`
measures how many of them the feedback names."""
