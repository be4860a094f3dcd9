"""The "predict, then run" questions of each notebook (tapelab.checker.predictions), one module per notebook named
like its exercises' module; a notebook's setup cell imports its questions (`from tapelab.exercises.questions.basic_tape
import q1_2, ...`). A question is numbered like the section it closes: `q1_5` closes section 5 of notebook 01."""
