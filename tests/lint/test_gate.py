"""What keeps lint fast on a large tree (bench/lint.py): every file is parsed (so every syntax error is found),
but a rule family walks a module only when it names, as a whole word, a name that family needs, and the
families share one walk of each module."""
import ast

import pytest

from tapelab.lint import lint_source
from tapelab.lint.model import Gate
from tapelab.lint.tapes import nodes


@pytest.mark.parametrize("source", ["opt.lr = 0.1", "Adam(lr=0.1)", "x = optimizer.lr\n", "lr", "f(lr =1)",
                                    "a = opt . lr"])
def test_the_gate_passes_a_name_written_as_a_word(source):
    """Does the gate pass `lr` where Python reads the identifier `lr`, at either end of the text too?"""
    assert Gate(("get_updates", "lr"))(source)


@pytest.mark.parametrize("source", ["url = 'http://x'", "ctrl.lr_schedule", "self.clr", "_lr = 1", "lr2 = 0",
                                    "get_updates_v2()"])
def test_the_gate_stops_a_name_inside_a_longer_identifier(source):
    """Does the gate stop text whose `lr` (or `get_updates`) is only part of a longer identifier?"""
    assert not Gate(("get_updates", "lr"))(source)


def test_only_a_file_that_passes_the_gate_is_walked(monkeypatch):
    """Is a file whose only `lr` is inside `url` checked for syntax but given no tree and no walk, while
    `opt.lr` beside it is parsed, walked and found?"""
    from tapelab.lint import tapes

    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parsed.append(a[0]) or real_parse(*a, **k))
    tapes.nodes.cache_clear()
    assert lint_source("url = 'http://x'\nctrl = 1\n") == [] and parsed == []
    assert tapes.nodes.cache_info().misses == 0
    found = lint_source("import keras\nurl = 'x'\nopt = keras.optimizers.Adam(lr=0.1)\n")
    assert [f.code for f in found] == ["keras2-lr"] and tapes.nodes.cache_info().misses == 1 and len(parsed) == 1


def test_the_syntax_check_without_a_tree_agrees_with_the_parser():
    """Does the cheap syntax check of a file no rule reads reject what `ast.parse` rejects, at the same place,
    and accept what it accepts (`nonlocal` at module level, which only the symbol table refuses)?"""
    with pytest.raises(SyntaxError) as raised:
        lint_source("x = 1\ndef f(:\n    pass\n")
    assert (raised.value.lineno, raised.value.offset) == (2, 7)
    assert lint_source("nonlocal x\n") == []


def test_a_module_is_walked_once_for_every_family():
    """Does `nodes` give ast.walk's nodes, in its order, and the same tuple for the same module, not for another?"""
    tree = ast.parse("def f(x):\n    return g(x) + 1\n")
    assert nodes(tree) == tuple(ast.walk(tree)) and nodes(tree) is nodes(tree)
    other = ast.parse("y = 2\n")
    assert nodes(other) == tuple(ast.walk(other)) and nodes(tree) == tuple(ast.walk(tree))


def test_a_group_of_names_passes_only_when_all_are_named():
    """Does a tuple in a gate pass a source that names every name of it, as whole words, and no other?"""
    gate = Gate(("Lambda", ("compile", "Input")))
    assert gate("model.compile(loss='mse')\nx = Input((3,))") and gate("Lambda(f)")
    assert not gate("re.compile('x')") and not gate("compiled = Inputs()")
