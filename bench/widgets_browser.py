"""Widget round trips in a real browser: from a student's input to the changed picture on the page.

    python bench/widgets_browser.py [NAME ...] [--repeats N] [--widget-cells-only]   (`make bench`)

JupyterLab (tests/browser/labserver.py) serves the repository and headless Chromium (Debian's, via
Playwright) opens each solution notebook that shows widgets, runs it, and moves every control of
every widget view the way a student would (tests/browser/labpage.py: keyboard on sliders, a new
option in menus, clicks), `--repeats` times in turn. Per input, measured in the page's own clock:
from the input event to the moment the widget's image changed its `src` (to its HTML text, for a
control that changes no picture or a widget without one), and to the moment the busy cue appeared.
The kernel's own handling time of the same input is timed inside the kernel (a wrapper around its
`comm_msg` handler), so browser/kernel is the cost of the trip and the page's rendering.

Targets, printed and never asserted: a redraw-only control's median round trip under 250 ms; for
an action that shows the busy cue, the cue in the page within 100 ms. A missed target prints
MISSED; only errors (a notebook that fails, a widget that does not render or never redraws) make
the exit status non-zero. Every server, kernel and browser is stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))
os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")

from labpage import CONTROLS, WIDGET_MIME, LabPage, _move, problems_in  # noqa: E402
from labserver import CHROMIUM, CHROMIUM_ARGS, LabServer  # noqa: E402

SERVER_LOG = REPO / "test-output" / "bench-widgets-jupyterlab.log"
MAX_REDRAW_MS = 250.0  # a redraw-only control, input to new picture, median
MAX_CUE_MS = 100.0  # a long action: input to the busy cue on the page
CHANGE_TIMEOUT_MS = 30_000
PICTURE_GRACE_MS = 1_000  # after the kernel is done: how long a picture may still take to change
BUSY_CLASS = "tapelab-busy"  # tapelab.widgets.controls.BusyCue.css_class (kept import-free of tapelab)

# In the kernel: time each comm message (a control's input) in the kernel's own handler, and hand
# the timings back, labelled with the widget's description, on request.
_KERNEL_PROBE = """
def __tapelab_bench_install():
    import json, time
    import ipywidgets
    kernel = get_ipython().kernel
    original, log, running = kernel.shell_handlers["comm_msg"], [], [0]

    def timed(stream, ident, msg):
        running[0] += 1
        start = time.perf_counter()
        try:
            return original(stream, ident, msg)
        finally:
            log.append((msg["content"].get("comm_id"), (time.perf_counter() - start) * 1000))
            running[0] -= 1

    def pop():
        deadline = time.monotonic() + 30
        while running[0] and time.monotonic() < deadline:  # a message still in its handler
            time.sleep(0.01)
        instances = ipywidgets.widgets.widget._instances
        out = [[getattr(instances.get(cid), "description", "?"), ms] for cid, ms in log]
        log.clear()
        print(json.dumps(out))

    kernel.shell_handlers["comm_msg"] = timed
    return pop

__tapelab_bench_pop = __tapelab_bench_install()
del __tapelab_bench_install
"""

# In the page: run code in the notebook's kernel without a cell, and return what it printed.
_EXECUTE = """async ([path, code]) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  const future = panel.sessionContext.session.kernel.requestExecute({code, silent: true, store_history: false});
  let text = '';
  future.onIOPub = msg => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
    if (msg.header.msg_type === 'error') text += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return text;
}"""

# In the page: number a widget view's controls in document order and describe each.
_CONTROLS = """(output, selectors) => Array.from(output.querySelectorAll(Object.values(selectors).join(',')))
  .map((el, i) => {
    el.setAttribute('data-bench-control', String(i));
    const kind = Object.keys(selectors).find(k => el.matches(selectors[k]));
    const box = el.closest('.widget-inline-hbox, .widget-checkbox, .widget-button') || el;
    const named = box.querySelector('.widget-label');
    const clean = text => (text || '').replace(/\u200b/g, '').trim();  // a hidden label holds a zero-width space
    const label = el.matches('button') ? clean(el.textContent) : clean(named && named.textContent) || clean(box.textContent);
    return {kind, label};
  })"""

# In the page: before an input, watch the widget view; record (page clock, ms) the input event,
# the first change of its pictures, of its text, and the busy cue's appearance.
_ARM = """([output, busyClass]) => {
  const pictures = () => Array.from(output.querySelectorAll('img')).map(img => img.src).join('\\n');
  const texts = () => Array.from(output.querySelectorAll('.widget-html-content'))
    .filter(el => !el.closest('.' + busyClass)).map(el => el.innerHTML).join('\\n');
  const cue = () => Array.from(output.querySelectorAll('.' + busyClass)).some(el => el.textContent.trim() !== '');
  const state = {input: null, picture: null, text: null, cue: null, hasPicture: pictures() !== ''};
  const before = [pictures(), texts()];
  const onInput = e => { if (state.input === null) state.input = e.timeStamp; };
  const kinds = ['pointerdown', 'mousedown', 'keydown', 'input', 'change', 'click'];
  kinds.forEach(k => output.addEventListener(k, onInput, true));
  const observer = new MutationObserver(() => {
    const now = performance.now();
    if (state.input === null) return;
    if (state.picture === null && pictures() !== before[0]) state.picture = now;
    if (state.text === null && texts() !== before[1]) state.text = now;
    if (state.cue === null && cue()) state.cue = now;
  });
  observer.observe(output, {subtree: true, childList: true, attributes: true, characterData: true});
  state.stop = () => { observer.disconnect(); kinds.forEach(k => output.removeEventListener(k, onInput, true)); };
  window.__tapelabBench = state;
}"""
_CHANGED = "() => { const s = window.__tapelabBench; return s.picture !== null || s.text !== null; }"
_PICTURE = "() => window.__tapelabBench.picture !== null"
_AT_REST = """([output, busyClass]) => !Array.from(output.querySelectorAll('.' + busyClass))
  .some(el => el.textContent.trim() !== '')"""
_RESULT = """() => { const s = window.__tapelabBench; s.stop();
  return {input: s.input, picture: s.picture, text: s.text, cue: s.cue, hasPicture: s.hasPicture}; }"""
_DISABLED = "el => !!(el.disabled || el.closest('[disabled]'))"


@dataclass
class Control:
    """One control of one widget view, with what each input on it measured."""

    notebook: str
    widget: str
    label: str
    kind: str
    trips: list[float] = field(default_factory=list)  # input -> changed picture (or text), ms
    kernel: list[float] = field(default_factory=list)  # the kernel's own handling of the same input, ms
    cues: list[float] = field(default_factory=list)  # input -> busy cue on the page, ms (long actions)
    by_text: int = 0  # inputs whose round trip ended at a text change: no picture changed
    skipped: int = 0  # inputs not made: the control was disabled at the time
    error: str = ""


def measure_input(lab: LabPage, output: Any, control: Any, kind: str) -> tuple[dict | None, list]:
    """Move `control` once; the page's timings (None if nothing changed) and the kernel's per message."""
    handle = output.element_handle()
    lab.page.evaluate(_ARM, [handle, BUSY_CLASS])
    _move(kind, control)
    try:
        lab.page.wait_for_function(_CHANGED, timeout=CHANGE_TIMEOUT_MS, polling="raf")
    except Exception:  # Playwright's timeout: reported as "never redrew"
        lab.page.evaluate(_RESULT)
        return None, kernel_timings(lab)
    kernel = kernel_timings(lab)  # answers once the kernel has handled the input
    try:
        lab.page.wait_for_function(_PICTURE, timeout=PICTURE_GRACE_MS, polling="raf")
    except Exception:
        pass  # this input changed only text
    lab.page.wait_for_function(_AT_REST, arg=[handle, BUSY_CLASS], timeout=CHANGE_TIMEOUT_MS, polling=50)
    return lab.page.evaluate(_RESULT), kernel


def kernel_timings(lab: LabPage) -> list:
    """[(widget description, ms)] for each comm message the kernel handled since the last call."""
    text = lab.page.evaluate(_EXECUTE, [lab.path, "__tapelab_bench_pop()"])
    if text.startswith("ERROR"):
        raise RuntimeError(f"the kernel probe failed: {text}")
    return json.loads(text)


def bench_widget(lab: LabPage, notebook: str, widget: str, output: Any, repeats: int) -> list[Control]:
    """Every control of one widget view, moved in document order, `repeats` rounds."""
    described = output.evaluate(_CONTROLS, CONTROLS)
    controls = [Control(notebook, widget, d["label"], d["kind"]) for d in described]
    handled: list = []  # (description, ms) of every message the kernel handled for this view
    for _ in range(repeats):
        for index, control in enumerate(controls):
            if control.error:
                continue
            element = output.locator(f'[data-bench-control="{index}"]')
            if element.evaluate(_DISABLED):
                control.skipped += 1
                continue
            timings, kernel = measure_input(lab, output, element, control.kind)
            handled += kernel
            if timings is None or timings["input"] is None:
                control.error = (f"no redraw within {CHANGE_TIMEOUT_MS / 1000:.0f} s" if timings is None
                                 else "the page saw no input event")
                continue
            ended = timings["picture"] if timings["picture"] is not None else timings["text"]
            control.by_text += timings["picture"] is None
            control.trips.append(ended - timings["input"])
            if timings["cue"] is not None:
                control.cues.append(timings["cue"] - timings["input"])
    # Matched by the widget's description, not by order: the page may send an input's message
    # after the previous probe call, so one call can hold the previous input's handling.
    handled += kernel_timings(lab)
    for control in controls:
        control.kernel = [ms for description, ms in handled if description == control.label]
    return controls


def bench_notebook(context: Any, server: LabServer, name: str, repeats: int, widget_cells_only: bool) -> \
        tuple[list[Control], list[str]]:
    """Open and run one solution notebook, then bench each widget view; (controls, errors)."""
    import nbformat

    path = REPO / "solutions" / f"{name}.ipynb"
    stored = nbformat.read(path, as_version=4).cells
    widget_cells = [i for i, c in enumerate(stored) if c.cell_type == "code"
                    and any(WIDGET_MIME in o.get("data", {}) for o in c.get("outputs", []))]
    lab = LabPage(context.new_page(), server, f"solutions/{path.name}")
    errors: list[str] = []
    try:
        lab.open()
        if widget_cells_only:
            setup = next((i for i, c in enumerate(stored) if c.get("id") == "setup"),
                         next(i for i, c in enumerate(stored) if c.cell_type == "code"))
            lab.run_cells(setup, *widget_cells)
        else:
            lab.run("notebook:run-all-cells")
        cells = lab.cells()
        for index in widget_cells:
            trouble = problems_in(cells[index]["outputs"])
            if cells[index]["execution_count"] is None or trouble:
                errors.append(f"{name} cell {index} did not run cleanly: {'; '.join(trouble) or 'not run'}")
        lab.page.evaluate(_EXECUTE, [lab.path, _KERNEL_PROBE])
        results = []
        for index in widget_cells:
            count = sum(WIDGET_MIME in o.get("data", {}) for o in cells[index]["outputs"])
            if lab.wait_for_widgets(index, count) != "ok":
                errors.append(f"{name} cell {index}: its widget did not render")
                continue
            outputs = lab.widget_outputs(index)
            source = cells[index]["source"].strip().splitlines()[-1]
            for n in range(outputs.count()):
                results += bench_widget(lab, name, source, outputs.nth(n), repeats)
        return results, errors
    except Exception as error:  # a notebook that cannot be opened or run: report, bench the others
        return [], errors + [f"{name}: {type(error).__name__}: {str(error).splitlines()[0][:300]}"]
    finally:
        lab.page.close()
        server.shutdown_kernels(wait=False)


def widget_notebooks() -> list[str]:
    """The solution notebooks whose stored outputs show a widget."""
    return sorted(p.stem for p in (REPO / "solutions").glob("[0-9][0-9]_*.ipynb") if WIDGET_MIME in p.read_text())


# --- report --------------------------------------------------------------------------------------

def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):6.0f} {max(values):6.0f}" if values else f"{'-':>6} {'-':>6}"


def report(controls: list[Control]) -> int:
    """Print one row per control; the number of controls that never redrew."""
    print(f"\nRound trips in Chromium (ms, median and worst; kernel = the kernel's own handling of the same "
          f"inputs).\nTargets: a redraw-only control under {MAX_REDRAW_MS:.0f} ms; a long action's busy cue "
          f"on the page under {MAX_CUE_MS:.0f} ms.")
    header = (f"{'notebook':<19} {'widget':<28} {'control':<12} {'n':>2} {'trip':>6} {'worst':>6} "
              f"{'kernel':>6} {'k.wst':>6} {'ratio':>5} {'cue':>6} {'worst':>6}  within targets")
    print(header + "\n" + "-" * len(header))
    errors = 0
    for c in controls:
        if c.error:
            errors += 1
        long_action = bool(c.cues)
        ratio = (f"{statistics.median(c.trips) / statistics.median(c.kernel):5.1f}"
                 if c.trips and c.kernel and statistics.median(c.kernel) > 0 else f"{'-':>5}")
        notes = []
        if c.error:
            notes.append(f"ERROR {c.error}")
        elif not c.trips:
            notes.append("not measured")
        elif long_action:
            cue = statistics.median(c.cues)
            notes.append("busy cue: " + ("yes" if cue < MAX_CUE_MS else f"MISSED ({cue:.0f} ms)"))
            if len(c.cues) < len(c.trips):
                notes.append(f"cue on {len(c.cues)} of {len(c.trips)} inputs")
        else:
            trip = statistics.median(c.trips)
            notes.append("yes" if trip < MAX_REDRAW_MS else f"MISSED ({trip:.0f} ms)")
        if c.by_text:
            notes.append(f"{c.by_text} ended at a text change (no new picture)")
        if c.skipped:
            notes.append(f"{c.skipped} skipped: disabled")
        print(f"{c.notebook[:19]:<19} {c.widget[:28]:<28} {c.label[:12]:<12} {len(c.trips):>2} {_ms(c.trips)} "
              f"{_ms(c.kernel)} {ratio} {_ms(c.cues)}  {'; '.join(notes)}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*",
                        help="solution notebooks, like 02_model_variables (default: all with widgets)")
    parser.add_argument("--repeats", type=int, default=5, help="inputs per control (default 5)")
    parser.add_argument("--widget-cells-only", action="store_true",
                        help="run only the setup cell and the widget cells, not the whole notebook")
    args = parser.parse_args(argv)
    if not os.access(CHROMIUM, os.X_OK):
        print(f"Chromium is missing at {CHROMIUM}: run `make chromium`.", file=sys.stderr)
        return 1
    names = [Path(n).stem for n in args.names] or widget_notebooks()
    print(f"JupyterLab + headless Chromium on {len(names)} notebook(s), {args.repeats} input(s) per control "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores) ...", flush=True)

    from playwright.sync_api import sync_playwright

    server = LabServer(REPO, SERVER_LOG)
    controls: list[Control] = []
    errors: list[str] = []
    start = time.perf_counter()
    server.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 1000})
                for name in names:
                    found, problems = bench_notebook(context, server, name, args.repeats, args.widget_cells_only)
                    controls += found
                    errors += problems
                    print(f"  {name}: {len(found)} control(s){'; ' + '; '.join(problems) if problems else ''}",
                          flush=True)
                context.close()
            finally:
                browser.close()
    finally:
        server.stop()
    failed = report(controls) + len(errors)
    for error in errors:
        print(f"ERROR {error}")
    print(f"\n{time.perf_counter() - start:.0f} s in all; load average at the end {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores (other work on the machine inflates round trips).")
    if failed:
        print(f"{failed} error(s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
