"""docs/tools.md as a user runs it: the Python examples of the compiled-steps and flight-recorder sections, in
order, print what the text around them says."""
import contextlib
import io
import linecache
import re

from tapelab.paths import REPO

TOOLS = (REPO / "docs" / "tools.md").read_text()


def section(heading: str) -> str:
    text = TOOLS[TOOLS.index(heading):]
    ends = [i for i in (text.find("\n## ", 1), text.find("\n### ", 1)) if i > 0]
    return text[:min(ends)] if ends else text


def run_blocks(heading: str) -> list[str]:
    """Run the ```python blocks of a section in one namespace; the lines they print."""
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", section(heading), re.DOTALL)):
            name = f"<tools.md {heading} {index}>"  # registered as IPython registers a cell, so lines have text
            linecache.cache[name] = (len(block), None, block.splitlines(True), name)
            exec(compile(block, name, "exec"), namespace)
    return out.getvalue().splitlines()


def test_compiled_steps_examples_print_what_the_text_says():
    """Do the compiled-steps examples name `Log` on its line, report XLA's different gradient, name the
    poisoned batch under `fit`, and name the real NaN (not the allowed mask) in the attention step?"""
    lines = run_blocks("### Compiled steps")
    assert lines[0].startswith("Log line ") and "tf.math.log(h)" in lines[0]
    assert "disagree" in lines[1] and "`net/hidden/kernel` is ok compiled but non_finite" in lines[1]
    assert lines[2] == "non-finite-input"
    assert lines[3] == "RealDiv"


def test_flight_recorder_example_saves_diagnoses_and_replays_the_poisoned_step():
    """Does the flight recorder example save step 2, name the poisoned batch in the record, and replay the
    saved files to the same op?"""
    lines = run_blocks("### Flight recorder")
    assert lines == ["step-000002", "non-finite-input MatMul", "MatMul"]


def test_the_layout_table_lists_the_files_a_saved_step_holds():
    """Does the flight recorder's layout table name exactly the files the recorder writes and the replay
    reads (tests/guarded/test_flight_recorder.py checks the folder holds them)?"""
    from tapelab.diagnose import replay

    table = re.findall(r"^\| `([a-z_.]+)` \|", section("### Flight recorder"), re.MULTILINE)
    assert table == [replay.STEP_FILE, replay.BATCH_FILE, replay.WEIGHTS_FILE, replay.OPTIMIZER_FILE]


def test_gradient_statistics_example_writes_the_scheduled_steps(keras_may_compile_with_xla):
    """Does the gradient statistics example write steps 0 and 5 of 8, a norm and a histogram per variable,
    that TensorBoard's own reader lists?"""
    lines = run_blocks("### Gradient statistics")
    assert lines == ["(0, 5)",
                     ("['grad_norm/net/hidden/kernel', 'grad_histogram/net/hidden/kernel', 'grad_norm/net/hidden/bias', "
                      "'grad_histogram/net/hidden/bias']"),
                     "[0, 5]"]
