"""TPL0xx: the file itself could not be checked, because it does not parse or cannot be read.

The family number 0 sets these apart from what the code does (TPL1 tapes, TPL2 Keras), as pycodestyle's E9
(E902 IOError, E999 SyntaxError) sits apart from its style codes, and sorts them first: nothing else in such a
file was checked. No checker runs them: `files` reports them while reading. As in Ruff, a syntax error is
always reported (no selection, ignore or comment hides it: a file that does not parse would otherwise pass
unchecked); an unreadable file is an ordinary rule, like Ruff's E902.
"""
from __future__ import annotations

from tapelab.lint.model import define

__all__ = ["SYNTAX_ERROR", "UNREADABLE_FILE"]

SYNTAX_ERROR = define("TPL001", "syntax-error", """
**What it does**: reports a `.py` file, or a notebook's code cell, that Python's parser rejects, at the
error's line and column (in a notebook: that cell; the other cells are still linted). A notebook whose
JSON does not parse is reported at the JSON error. Every file is parsed, whatever it names. A cell is read
as IPython reads it: magics, shell escapes and help requests are not syntax errors, and a cell in another
language (`%%bash`) is skipped. Always reported: `select`, `ignore`, `per-file-ignores` and `# noqa` do not
apply.

**Why is this bad?** No rule can read a file that does not parse, so its tape code went unchecked; the
code also fails as soon as Python imports or runs it.

**Example**
```python
with tf.GradientTape() as tape
    y = x * x
```

**Use instead**
```python
with tf.GradientTape() as tape:
    y = x * x
```
""")

UNREADABLE_FILE = define("TPL002", "unreadable-file", """
**What it does**: reports a file named or found that cannot be read (permission denied, not UTF-8), at
its first line (the line of the first byte that is not UTF-8). Like any rule, `ignore` and
`per-file-ignores` can turn it off; there is no line to put a `# noqa` on.

**Why is this bad?** The file was not checked at all. tapelab reads source as UTF-8 only, as Ruff does
(Python's default source encoding); a coding comment naming another encoding is not followed.

**Example**
```python
# saved as Latin-1
nom = "é"
```

**Use instead**
```python
# saved as UTF-8
nom = "é"
```
""")
