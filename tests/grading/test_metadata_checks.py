"""`records.metadata_checked_once`: while a grading run lasts, nbgrader's check of each cell's nbgrader metadata
(`CheckCellMetadata`, run twice per submission) checks its schema once, not at every cell; it finds the same
errors, and nbgrader's own check is back after the run."""
import jsonschema
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.nbgraderformat import ValidationError, common
from nbgrader.preprocessors import CheckCellMetadata

from tapelab.grading.records import metadata_checked_once


def _notebook(points=2) -> nbformat.NotebookNode:
    cells = []
    for n in range(6):
        cell = new_code_cell(f"assert {n} == {n}")
        cell.metadata["nbgrader"] = {"schema_version": 3, "grade": True, "solution": False, "locked": True,
                                     "task": False, "grade_id": f"test_{n}", "points": points}
        cells.append(cell)
    return new_notebook(cells=cells)


@pytest.fixture
def schema_checks(monkeypatch):
    """How often a schema is checked against its meta-schema (nbgrader's metadata schema is draft 4)."""
    counted = []
    real = jsonschema.Draft4Validator.check_schema.__func__

    def check_schema(cls, schema, *args, **kwargs):
        counted.append(schema.get("title"))
        return real(cls, schema, *args, **kwargs)
    monkeypatch.setattr(jsonschema.Draft4Validator, "check_schema", classmethod(check_schema))
    return counted


def test_the_metadata_schema_is_checked_once_for_every_cell_of_every_notebook(schema_checks):
    """Does nbgrader's CheckCellMetadata check its schema once for three notebooks of six graded cells while the
    context lasts, where nbgrader alone checks it once per cell?"""
    CheckCellMetadata()(_notebook(), {})
    alone = len(schema_checks)
    with metadata_checked_once():
        for _ in range(3):
            CheckCellMetadata()(_notebook(), {})
    assert alone == 6
    assert len(schema_checks) - alone == 1


def test_a_broken_cell_fails_as_with_nbgrader_alone_and_nbgraders_check_is_back_after(schema_checks):
    """Is a cell whose points are text refused with nbgrader's ValidationError, and the schema's own error the
    same (message and path) as jsonschema's; is nbgrader's `jsonschema` its own again after the context, also
    after a raise?"""
    broken = _notebook(points="two")
    meta = broken.cells[0].metadata["nbgrader"]
    with pytest.raises(jsonschema.ValidationError) as alone:
        jsonschema.validate(meta, _schema())
    with pytest.raises(ValidationError, match="nbgrader metadata may be corrupted"):
        with metadata_checked_once():
            with pytest.raises(jsonschema.ValidationError) as once:
                common.jsonschema.validate(meta, _schema())
            CheckCellMetadata()(broken, {})
    assert (once.value.message, list(once.value.absolute_path)) == (alone.value.message,
                                                                   list(alone.value.absolute_path))
    assert common.jsonschema is jsonschema


def _schema() -> dict:
    from nbgrader.nbgraderformat import MetadataValidator

    return MetadataValidator().schema
