"""bench/corpus.py's precision report, on made-up findings and labels (the corpus itself is fetched only by
the bench, never by the suite), and the labels file's shape."""
from __future__ import annotations

import importlib.util
import tomllib

from answers import REPO

_spec = importlib.util.spec_from_file_location("bench_corpus", REPO / "bench" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)


def _finding(path: str, line: int, rule: str, cell: int | None = None) -> dict:
    return {"path": path, "line": line, "rule": rule, "cell": cell, "message": f"message of {rule}"}


def test_precision_per_family_lists_false_unlabelled_and_lost(capsys):
    found = [_finding("./a-1/x.py", 3, "TPL101"), _finding("./a-1/x.py", 9, "TPL111"),
             _finding("b-2/n.ipynb", 4, "TPL204", cell=2), _finding("b-2/y.py", 1, "TPL205")]
    labels = [{"at": "a-1/x.py:3", "rule": "TPL101", "verdict": True, "why": "right"},
              {"at": "a-1/x.py:9", "rule": "TPL111", "verdict": False, "why": "rebound in a loop"},
              {"at": "b-2/n.ipynb:cell 2:4", "rule": "TPL204", "verdict": True, "why": "built"},
              {"at": "b-2/gone.py:7", "rule": "TPL202", "verdict": True, "why": "a metric"}]
    assert corpus.report(found, labels) == 1  # one finding is not labelled
    out = capsys.readouterr().out
    assert "tape rules: 2 findings (TPL101 1, TPL111 1); 1 true, 1 false: precision 50%" in out
    assert "false: a-1/x.py:9 TPL111: rebound in a loop" in out
    assert "Keras 2 -> 3 rules: 2 findings (TPL204 1, TPL205 1); 1 true, 0 false: precision 100%" in out
    assert "not labelled yet: b-2/y.py:1 TPL205" in out
    assert "true positive no longer found: b-2/gone.py:7 TPL202: a metric" in out


def test_every_pinned_package_and_label_is_complete():
    """Does every pin name a file and its SHA-256, and every label its place, rule, verdict and reason?"""
    pins = tomllib.loads((REPO / "bench" / "corpus.toml").read_text())["package"]
    assert len(pins) >= 20 and all(len(p["sha256"]) == 64 and p["file"] for p in pins)
    labels = tomllib.loads((REPO / "bench" / "corpus_labels.toml").read_text())["label"]
    assert labels and all(isinstance(label["verdict"], bool) and label["why"] and label["rule"].startswith("TPL")
                          for label in labels)
    assert len({(label["at"], label["rule"]) for label in labels}) == len(labels)
