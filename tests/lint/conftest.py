"""Fixtures for running `tapelab lint` in-process on small files and notebooks in a temporary folder."""
import nbformat
import pytest

from tapelab.cli import main


@pytest.fixture
def run_lint(capsys):
    """`run_lint(*argv)` runs `tapelab lint ARGV` in-process and gives (exit status, stdout, stderr)."""
    def run(*argv):
        status = main(["lint", *map(str, argv)])
        out, err = capsys.readouterr()
        return status, out, err
    return run


@pytest.fixture
def write_notebook(tmp_path):
    """`write_notebook(cells, name)` writes a notebook of a title cell and these code cells, and gives its path."""
    def write(cells, name="book.ipynb"):
        book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# title")] +
                                        [nbformat.v4.new_code_cell(c) for c in cells])
        path = tmp_path / name
        nbformat.write(book, path)
        return path
    return write
