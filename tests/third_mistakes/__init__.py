"""The third catalogue of mistakes: 4 per exercise, each a wrong answer met in a public bug report or forum
thread (its address in `source`), moved into one of the course's exercises, with what is wrong in a tutor's
words. Written before any engine change it measures, and never tuned to: `tools/judging_sheet.py` writes
what a blind judge sees of each (task, code, what is wrong, the message the student gets)."""
