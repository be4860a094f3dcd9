"""The cause catalogue: every code the package raises is catalogued, and every catalogued code is used."""
import ast
from pathlib import Path

from tapelab.causes import CAUSES
from tapelab.diagnose import CAUSES as DIAGNOSED
from tapelab.checker.known_errors import KNOWN_ERRORS

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tapelab"
_SOURCES = {p: p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "causes.py"}


def _raised_codes() -> set[str]:
    """Codes given as `cause="..."` or as the second argument of `Explanation(...)` / `Why(...)`."""
    codes = set()
    for text in _SOURCES.values():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            codes |= {k.value.value for k in node.keywords if k.arg == "cause" and isinstance(k.value, ast.Constant)}
            name = getattr(node.func, "id", "")
            if name in ("Explanation", "Why") and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                codes.add(node.args[1].value)
    return codes | {code for _, code, _ in KNOWN_ERRORS} | set(DIAGNOSED)


def test_every_cause_code_raised_is_catalogued():
    """Is each code the package attaches to feedback (`cause="..."`, an Explanation's code) catalogued?"""
    used = _raised_codes() - {None}
    assert len(used) > 10 and used <= set(CAUSES), used - set(CAUSES)


def test_every_catalogued_cause_is_used_or_documented():
    """Does some module of the package (or docs/) name each catalogued code, so none is dead?"""
    docs = Path(__file__).resolve().parents[1] / "docs"
    texts = list(_SOURCES.values()) + [p.read_text() for p in docs.rglob("*.md")] if docs.exists() else list(_SOURCES.values())
    unused = [code for code in CAUSES if not any(f'"{code}"' in text or f"`{code}`" in text for text in texts)]
    assert not unused, unused


def test_each_cause_has_a_title_and_a_fix():
    """Does every catalogue entry carry a one-line title and a one-line fix?"""
    for cause in CAUSES.values():
        assert cause.title and cause.fix and "\n" not in cause.title + cause.fix, cause


def test_each_code_is_catalogued_once():
    """Does every code appear once in the catalogue, so no entry silently replaces another?"""
    from collections import Counter
    from tapelab.causes import _CATALOGUE
    twice = [code for code, n in Counter(c.code for c in _CATALOGUE).items() if n > 1]
    assert not twice, twice
