"""TensorFlow's errors read as facts: which line of the student's cell raised, which operation, which
operands' shapes and dtypes, and what that establishes.

`line_of` finds the student's line in the traceback (the last frame in the answer cell's file, or the
`in user code` location a `tf.function` reports); `translate` reads the error's class and text with that
line's operators and returns an `Explanation` only when the two together establish a cause: an
elementwise `*` on operands whose shapes fit a matrix product, a matrix product whose shapes do not fit,
two dtypes in one operation, a list of tensors of different shapes stacked into one. Otherwise it says
where the error was raised and nothing more.
"""
from __future__ import annotations

import ast
import linecache
import re
import traceback
from dataclasses import dataclass

from tapelab.checker.code_facts import CodeFacts
from tapelab.checker.explanations import Explanation

__all__ = ["Line", "line_of", "translate", "short_error", "strip_tf_noise"]

_DTYPES = {"float": "float32", "double": "float64", "half": "float16", "int32": "int32", "int64": "int64",
           "bfloat16": "bfloat16", "complex64": "complex64", "bool": "bool"}


@dataclass(frozen=True)
class Line:
    """The student's line that raised: its number in the answer cell and its text."""

    number: int
    text: str
    loop_targets: tuple[str, ...] = ()  # the names the `for` loops around it bind

    def where(self) -> str:
        """How a message points at it: `line 3 (`y = x * w`)`."""
        return f"line {self.number} (`{self.text}`)"


def strip_tf_noise(text: str) -> str:
    """TensorFlow's message without the `{{function_node ...}}` prefix and the `[Op:...] name:` suffix."""
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    return re.sub(r"\s*\[Op:\w+\](\s*name:\s*\S*)?\s*$", "", text.strip(), flags=re.M)


def short_error(error: BaseException, limit: int = 200) -> str:
    """TensorFlow's message cut to the part that names the problem: its first meaningful line or sentence,
    without TensorFlow's `{{function_node}}` and `[Op:...]` wrapping or object dumps, and never cut inside a
    bracket (a long line ends at the last space outside every bracket)."""
    text = re.sub(r"Passed in object .*? of type", "Passed in object of type", str(error), flags=re.S)
    text = re.sub(r"<[^<>]{40,}>", "<...>", strip_tf_noise(text))  # long reprs of objects
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # Keras's bold
    text = re.sub(r" for input \[[^\]]*\]", "", text)  # and its dump of the input's values
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("Exception encountered when calling") and len(lines) > 1:
        lines = lines[1:]  # Keras's wrapper: the layer's own error is the next line
    if lines and lines[0].rstrip(":") == "in user code":  # a tf.function error: the error line is the last
        lines = [line for line in lines if re.match(r"\w+Error: ", line)][-1:] or lines
        lines = [re.sub(r"^\w+Error: ", "", lines[0])]
    first = lines[0] if lines else ""
    sentence = re.match(r"(.+?(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)[.!?])(\s|$)", first)
    first = sentence.group(1) if sentence and len(sentence.group(1)) >= 20 else first
    if len(first) <= limit:
        return first
    depth, cut = 0, 0
    for i, char in enumerate(first[:limit]):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif depth == 0 and char in " ,;":
            cut = i
    return first[:cut].rstrip(" ,;") + " ..."


def line_of(error: BaseException, filename: str | None) -> Line | None:
    """The last line of `filename` (the answer cell) in `error`'s traceback, or the `tf.function` location
    TensorFlow writes into its text; None when neither shows one."""
    if not filename:
        return None
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename and frame.lineno:
            found = frame.lineno
    if found is None:
        located = re.findall(rf'File "{re.escape(filename)}", line (\d+)', str(error))
        found = int(located[-1]) if located else None
    if found is None:
        return None
    text = linecache.getline(filename, found).strip()
    return Line(found, text, _loop_targets(filename, found)) if text else None


def _loop_targets(filename: str, number: int) -> tuple[str, ...]:
    """The names bound by the `for` loops around line `number` of the cell `filename`, innermost last."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return ()
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor))
             and n.body[0].lineno <= number <= (n.end_lineno or n.lineno)]
    return tuple(name.id for loop in sorted(loops, key=lambda n: n.lineno) for name in ast.walk(loop.target)
                 if isinstance(name, ast.Name))


def _a(word: str) -> str:
    """The article for a dtype's name: an int32, a float32."""
    return "an" if word[:1] in "aeiou" else "a"


def _integer(dtype: str) -> bool:
    return bool(re.fullmatch(r"u?int\d+", dtype))


def _int_cast(text: str, dtype: str) -> str | None:
    """The `tf.cast(..., tf.<dtype>)` call written in `text`, if any (parentheses balanced)."""
    for start in (m.start() for m in re.finditer(r"\b(?:tf\.)?cast\(", text)):
        depth, end = 0, None
        for i in range(text.index("(", start), len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        call = text[start:end] if end else ""
        if re.search(rf"[\s,=](?:tf\.)?{dtype}\W*\)$|['\"]{dtype}['\"]\s*\)$", call):
            return call
    return None


def _parsed(text: str) -> tuple[ast.Module, str] | None:
    """One line of code parsed (as written, without its `return`, or as a block's head), and the text parsed."""
    source = text.rstrip(":")
    for attempt in (source, source.removeprefix("return "), source + " pass"):
        try:
            return ast.parse(attempt), attempt
        except SyntaxError:
            continue
    return None


def _read_uncast(text: str) -> list[str]:
    """The names the line `text` reads, in order, leaving out those read only inside a `cast(...)` (already
    converted there) or as a called function."""
    parsed = _parsed(text)
    if parsed is None:
        return []
    tree = parsed[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            if ast.unparse(node.func).split(".")[-1] == "cast":
                return
            for child in node.args + [k.value for k in node.keywords]:
                visit(child)
            if isinstance(node.func, ast.Attribute):
                visit(node.func.value)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in found:
            found.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _earlier_cast(line: Line | None, facts: CodeFacts | None, dtype: str) -> str | None:
    """Where the failing line's `dtype` value was made, when an earlier line of the student's function made it: of
    the names the line reads (not inside a cast of its own), exactly one was last assigned `tf.cast(..., tf.<dtype>)`
    before it. Said as "`n = tf.cast(...)` on line 3"; None when no name, or more than one, was made so."""
    if line is None or facts is None or not facts.found or not facts.first_line <= line.number <= facts.last_line:
        return None
    at = line.number - facts.first_line + 1  # the failing line in the facts' numbering
    made = []
    for name in _read_uncast(line.text):
        last = facts.assignments_of(name, before=at)[-1:]
        if last and last[0].names == (name,) and _int_cast(last[0].value, dtype) == last[0].value:
            made.append((name, last[0]))
    if len(made) != 1:
        return None
    name, assignment = made[0]
    return f"`{name} = {assignment.value}` on line {assignment.line + facts.first_line - 1}"


def _count(node: ast.AST) -> bool:
    """Whether an expression is a count of rows or items: `tf.shape(x)[0]`, `x.shape[0]`, `len(x)`, `tf.size(x)`."""
    if isinstance(node, ast.Subscript):
        base = node.value
        return (isinstance(base, ast.Call) and ast.unparse(base.func).split(".")[-1] == "shape") or (
            isinstance(base, ast.Attribute) and base.attr == "shape")
    return isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("len", "size")


def _metric_weight(line: Line | None) -> str | None:
    """The fix when the line multiplies the one value given to a metric's `update_state` by a count (which is why
    an int meets a float there): a cast would run, but the count would scale the recorded value, not weight it."""
    parsed = _parsed(line.text) if line is not None else None
    for node in ast.walk(parsed[0]) if parsed else ():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update_state" and len(node.args) == 1
                and isinstance(node.args[0], ast.BinOp) and isinstance(node.args[0].op, ast.Mult)):
            continue
        product = node.args[0]
        counts = [(f, v) for f, v in ((product.right, product.left), (product.left, product.right)) if _count(f)]
        if len(counts) == 1:
            count, value = (ast.unparse(n) for n in counts[0])
            metric = ast.unparse(node.func.value)
            return (f"Casting would make it run, but multiplying the value by `{count}` changes the value `{metric}` "
                    f"records, not its weight. To weight each update by that count, pass it as `sample_weight`: "
                    f"`{metric}.update_state({value}, sample_weight={count})`.")
    return None


def _float_kept(want: str, got: str, line: Line | None, facts: CodeFacts | None = None) -> str | None:
    """How to give an integer operand and a float one one dtype: the float one, whichever the operation expected,
    since a cast to an integer dtype would drop the float value's fraction and has no gradient; where the line
    itself casts to that integer dtype, or an earlier line of the function made a name it reads so, that cast is
    named. None for two floats or two integers."""
    if _integer(want) != _integer(got):
        floating, integer = (got, want) if _integer(want) else (want, got)
        weighted = _metric_weight(line)
        if weighted:
            return weighted
        cast = _int_cast(line.text, integer) if line is not None else None
        if cast:
            return (f"The {integer} value comes from `{cast}` on that line: leave that cast out (or cast to "
                    f"{floating}), so that both are {floating}; a cast to an integer dtype drops the fraction and has "
                    "no gradient.")
        earlier = _earlier_cast(line, facts, integer)
        if earlier:
            return (f"The {integer} value comes from {earlier}: cast to {floating} there instead, so that both are "
                    f"{floating} (a cast to an integer dtype drops the fraction and has no gradient).")
        return (f"Make both {floating}: `tf.cast(value, tf.{floating})` on the {integer} value, or create it as "
                f"{floating} (a cast to an integer dtype would drop the fraction and has no gradient).")
    return None


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"-?\d+", text))


def _operators(text: str) -> list[tuple[str, str]]:
    """(operator, source of the expression) for each binary `*`, `@`, `+`, `-`, `/` on the line."""
    parsed = _parsed(text)
    if parsed is None:
        return []
    tree, attempt = parsed
    names = {ast.Mult: "*", ast.MatMult: "@", ast.Add: "+", ast.Sub: "-", ast.Div: "/"}
    return [(names[type(n.op)], ast.get_source_segment(attempt, n) or "") for n in ast.walk(tree)
            if isinstance(n, ast.BinOp) and type(n.op) in names]


def _fits_matmul(a: tuple, b: tuple) -> bool:
    return len(a) >= 2 and len(b) >= 2 and a[-1] == b[-2]


def _elementwise(op: str, a: tuple, b: tuple, line: Line | None) -> Explanation | None:
    operators = _operators(line.text) if line else []
    products = [expr for _, expr in operators]
    stars = [expr for sign, expr in operators if sign == "*"]
    if op == "Mul" and len(stars) == 1 and _fits_matmul(a, b):
        return Explanation(
            f"`{stars[0]}` multiplies a {a} tensor by a {b} tensor elementwise, and those shapes "
            f"do not broadcast. They fit a matrix product (the left's last size, {a[-1]}, is the right's first): did "
            "you mean `@` (`tf.matmul`)?",
            "elementwise-not-matmul")
    return Explanation(
        f"The elementwise `{op}`{' in `' + products[0] + '`' if len(products) == 1 else ''} got shapes "
        f"{a} and {b}, which do not broadcast (from the right, each pair of sizes must be equal or 1). Print both "
        "operands' shapes there and make them fit.", "shape-clash")


def _matmul(a: tuple, b: tuple) -> Explanation:
    if len(a) != len(b):
        fix = "Give both operands the same rank, e.g. `x[None, :]` for a row or `tf.reshape`."
        return Explanation(f"The matrix product got operands of rank {len(a)} {a} and rank {len(b)} {b}. {fix}",
                           "shape-clash")
    fits = ("It fits with the right operand transposed (`tf.transpose`, or `transpose_b=True`)." if a[-1] == b[-1]
            else "It fits with the operands swapped." if b[-1] == a[-2]
            else "Check which axis holds what in each operand.")
    return Explanation(f"The matrix product of {a} and {b} needs the left operand's last size ({a[-1]}) to equal "
                       f"the right one's first ({b[-2] if len(b) >= 2 else b[0]}). {fits}", "shape-clash")


def translate(error: BaseException, line: Line | None, facts: CodeFacts | None = None) -> Explanation | None:
    """What `error`, raised at `line` of the student's cell, establishes; None when nothing is. `facts`, the code
    facts of the student's function, show where a value the line reads was made (an int cast on an earlier line)."""
    text = str(error)
    found = re.search(r"Incompatible shapes: (\[[-\d,]*\]) vs\. (\[[-\d,]*\]) \[Op:(\w+)\]", text)
    if found:
        return _elementwise(found.group(3), _shape(found.group(1)), _shape(found.group(2)), line)
    found = re.search(r"Dimensions must be equal, but are \d+ and \d+ for '\{\{node [^}]*\}\} = (\w+)\[.*?"
                      r"input shapes: (\[[-\d,]*\]), (\[[-\d,]*\])", text, re.S)
    if found:
        op, a, b = found.group(1), _shape(found.group(2)), _shape(found.group(3))
        return _matmul(a, b) if op in ("MatMul", "BatchMatMulV2") else _elementwise(op, a, b, line)
    found = re.search(r"Matrix size-incompatible: In\[0\]: (\[[-\d,]*\]), In\[1\]: (\[[-\d,]*\])", text) or \
        re.search(r"In\[0\] and In\[1\] has different ndims: (\[[-\d,]*\]) vs\. (\[[-\d,]*\])", text)
    if found:
        return _matmul(_shape(found.group(1)), _shape(found.group(2)))
    found = re.search(r"cannot compute (\w+) as input #(\d)\(zero-based\) was expected to be a (\w+) tensor but is "
                      r"a (\w+) tensor", text)
    if found:
        op, want, got = found.group(1), _DTYPES.get(found.group(3), found.group(3)), _DTYPES.get(found.group(4),
                                                                                                 found.group(4))
        fix = (_float_kept(want, got, line, facts)
               or f"Make both {want}: `tf.cast(value, tf.{want})`, or create the {got} value as {want}.")
        return Explanation(f"TensorFlow's `{op}` combines {_a(want)} {want} tensor with {_a(got)} {got} tensor "
                           f"(its input {found.group(2)}), and TensorFlow never converts between dtypes. {fix}",
                           "dtype-clash")
    found = re.search(r"`x` and `y` must have the same dtype, got tf\.(\w+) != tf\.(\w+)", text)
    if found:  # `/` (truediv) checks the dtypes itself, before any op runs
        a, b = found.groups()
        fix = (_float_kept(a, b, line, facts)
               or f"Make both {a}: `tf.cast(value, tf.{a})`, or create the {b} value as {a}.")
        return Explanation(f"`/` divides {_a(a)} {a} tensor by {_a(b)} {b} tensor, and TensorFlow never converts "
                           f"between dtypes. {fix}", "dtype-clash")
    found = re.search(r"Cannot convert (\S+) to EagerTensor of dtype (\w+)", text)
    if found:
        number, dtype = found.groups()
        cast = _int_cast(line.text, dtype) if line is not None and _integer(dtype) else None
        earlier = _earlier_cast(line, facts, dtype) if not cast and _integer(dtype) else None
        fix = (f"The {dtype} tensor comes from `{cast}` on that line: leave that cast out (or cast to float32)."
               if cast else f"The {dtype} tensor comes from {earlier}: cast to float32 there instead."
               if earlier else "Make the tensor a float (`tf.cast(t, tf.float32)`, or `tf.constant(3.0)` rather than "
               "`tf.constant(3)`).")
        return Explanation(f"The Python number {number} meets {_a(dtype)} {dtype} tensor, and TensorFlow cannot make "
                           f"it {_a(dtype)} {dtype}. {fix}", "dtype-clash")
    found = re.search(r"Shapes of all inputs must match: values\[0\]\.shape = (\[[-\d,]*\]) != values\[(\d+)\]\.shape "
                      r"= (\[[-\d,]*\])", text)
    if found:
        return Explanation(f"A list of tensors of shapes {_shape(found.group(1))} and {_shape(found.group(3))} "
                           "was turned into one tensor (a list given where one tensor is expected stacks its items, "
                           "which needs equal shapes). Handle the tensors one by one, or combine what you computed "
                           "from each (e.g. `tf.add_n`).", "shape-clash")
    return _python_side(text, line, facts)


def _python_side(text: str, line: Line | None, facts: CodeFacts | None = None) -> Explanation | None:
    """Errors TensorFlow raises about Python-side values: what was passed where."""
    found = re.search(r"Input '\w+' of '(\w+)' Op has type (\w+) that does not match type (\w+) of argument", text)
    if found:
        op, got, want = found.groups()
        fix = _float_kept(want, got, line, facts) or f"Cast the {got} value: `tf.cast(value, tf.{want})`."
        return Explanation(f"TensorFlow's `{op}` got {_a(got)} {got} operand with {_a(want)} {want} one, and it "
                           f"never converts between dtypes. {fix}", "dtype-clash")
    found = re.search(r"Passed in object (?:.*?\s)?of type '([\w.]+)', not tf\.Tensor", text, re.S)
    if found and line is not None and ".watch(" in line.text:
        kind = found.group(1)
        what = "a Python number" if kind in ("float", "int") else f"a NumPy `{kind}`"
        watched = re.search(r"\.watch\(\s*([A-Za-z_]\w*)\s*\)", line.text)  # the name the line watches
        name = watched.group(1) if watched else "x"
        return Explanation(f"`watch` got {what}, and a tape watches only tensors and variables. Convert it first, "
                           f"`{name} = tf.constant({name})`, then watch and compute from that tensor.", "numpy-source")
    if "with `tf.Variable`s is not supported" in text:
        return Explanation("`-=` (and `+=`) would rebind the name to a new tensor, which TensorFlow refuses for a "
                           "variable. Update it in place: `x.assign_sub(step)`.", "replaced-by-tensor")
    if "tf.gradients is not supported when eager execution is enabled" in text:
        return Explanation("`tf.gradients` and `tf.hessians` work only inside a graph; in eager code no tape "
                           "records anything for them. Record the computation with `tf.GradientTape` (nested tapes "
                           "for second derivatives).", "no-tape")
    found = re.search(r"Expected shape \(None, ([\d, ]*)\), but input has incompatible shape \(([\d, ]*)\)", text)
    if found and _shape(found.group(1)) == _shape(found.group(2)):
        return Explanation(f"The model got a tensor of shape {_shape(found.group(2))}, one example without the batch "
                           f"axis a Keras model expects (shape (None, {found.group(1).strip(', ')})). Give it a batch: "
                           "`x[None]`, `x[i:i + 1]`, or the whole `x` at once.", "missing-axis")
    if re.search(r"'true_fn' (must be callable|argument required)", text):
        applied = line is not None and re.search(r"\.apply(_gradients)?\(", line.text)
        return Explanation("`tf.cond` takes two functions and runs only the one the condition picks; a call written "
                           "in their place runs at once, before `tf.cond` sees it" +
                           (", so the update is applied whatever the checks say" if applied else "") +
                           ". Wrap each branch in a function: `lambda: ...`.", "applied-anyway" if applied else None)
    if "unexpected keyword argument 'watch_accessed_variables'" in text:
        return Explanation("`watch_accessed_variables` is an argument of `tf.GradientTape(...)`, not of `watch`: "
                           "open the tape with `tf.GradientTape(watch_accessed_variables=False)`, so that it does not "
                           "watch the model's weights, then `tape.watch(x)`.", "weights-watched")
    found = re.search(r"Cannot update variable with shape (\[[-\d,]*\]) using a Tensor with shape (\[[-\d,]*\])", text)
    if found or "shape of the target variable and the shape of the target value" in text:
        return _assigned_shape(found and (_shape(found.group(1)), _shape(found.group(2))), line)
    if "object of type 'zip' has no len()" in text and line is not None and ".apply(" in line.text:
        return Explanation("`optimizer.apply` takes two lists, `apply(grads, variables)`; (gradient, variable) pairs "
                           "from `zip` are what `apply_gradients` takes.", "apply-two-lists")
    found = re.search(r"(Ranks of all input tensors should match|Shapes must be equal rank|Dimension \d+ in both "
                      r"shapes must be equal)", text)
    if found:
        return Explanation("The tensors combined there have different shapes or ranks, and this operation needs them "
                           "alike (a list given where one tensor is expected is stacked). Handle each tensor on its "
                           "own, "
                           "or reshape them first (`tf.reshape(g, [-1])`).", "shape-clash")
    return None


def _assigned_shape(shapes: tuple | None, line: Line | None) -> Explanation:
    """A variable updated with a value of another shape; inside a loop, with a fixed item (`grads[0]`) that the
    loop never changes: one item given for every variable."""
    sizes = f" (the variable has shape {shapes[0]}, the value {shapes[1]})" if shapes else ""
    fixed = re.search(r"\b([A-Za-z_]\w*)\[(\d+)\]", line.text) if line and line.loop_targets else None
    if fixed:
        return Explanation(f"A variable was updated with a value of another shape{sizes}: inside the loop over "
                           f"`{', '.join(line.loop_targets)}`, `{fixed.group(0)}` is the same item on every pass, so "
                           f"every variable gets the first one's gradient. Pair each variable with its own: "
                           f"`for g, v in zip({fixed.group(1)}, variables)`.", "first-source-only")
    return Explanation(f"A variable was updated with a value of another shape{sizes}. `assign` keeps a variable's "
                       "shape: the value must have exactly that shape.", "shape-clash")
