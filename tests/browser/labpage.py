"""One notebook open in JupyterLab in a Playwright page: run cells, read them back, move widgets.

The page side talks to JupyterLab through `window.jupyterapp` (the server runs with
`--LabApp.expose_app_in_browser=True`) and reads what the student would see from the DOM.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from labserver import LabServer

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


# JavaScript run in the page. `PANEL` finds the open notebook by its path.
_PANEL = """
const app = window.jupyterapp;
const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
"""

_READY = """(path) => {
  if (!window.jupyterapp) return false;
  %s
  if (!panel || !panel.context.isReady) return false;
  const session = panel.sessionContext;
  if (!session.session || !session.session.kernel) return false;
  if (session.kernelDisplayStatus !== 'idle') return false;
  const nb = panel.content;
  if (nb.widgets.length !== nb.model.cells.length) return false;
  nb.widgets.forEach((cell, i) => cell.node.setAttribute('data-test-cell', String(i)));
  return true;
}""" % _PANEL

_RUN = """async ([path, command, indices]) => {
  %s
  app.shell.activateById(panel.id);
  const nb = panel.content;
  if (indices) {
    nb.deselectAll();
    nb.activeCellIndex = indices[0];
    if (indices.length > 1) nb.extendContiguousSelectionTo(indices[indices.length - 1]);
  }
  // Not awaited here (evaluate would time out on long runs): the run's promise, which resolves
  // once every cell has its reply, flips a flag that `_IDLE` polls.
  window.__tapelabRun = 'running';
  window.__tapelabIdleSince = null;
  app.commands.execute(command).then(() => { window.__tapelabRun = 'done'; },
                                     (e) => { window.__tapelabRun = 'failed: ' + e; });
  return true;
}""" % _PANEL

# Settled: the run's promise resolved, the kernel is idle, no cell is running or queued (`[*]`),
# and every target code cell has an execution count, unless an earlier one failed (which stops a
# run). A state that stays idle for `quiet` ms also counts (an error shown nowhere stops a run too).
_IDLE = """([path, indices, quiet]) => {
  %s
  if (window.__tapelabRun === 'running') return false;
  if (window.__tapelabRun !== 'done') return window.__tapelabRun;
  const busy = () => {
    if (!panel || panel.sessionContext.kernelDisplayStatus !== 'idle') return true;
    const cells = panel.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells.get(i);
      if (cell.type === 'code' && cell.executionState === 'running') return true;
    }
    return Array.from(panel.node.querySelectorAll('.jp-InputPrompt')).some(p => p.textContent.includes('*'));
  };
  if (busy()) { window.__tapelabIdleSince = null; return false; }
  const cells = panel.content.model.cells;
  let failed = false, complete = true;
  for (let i = 0; i < cells.length && complete; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code' || (indices && !indices.includes(i))) continue;
    if (cell.executionCount === null && !failed) complete = false;
    const tags = cell.getMetadata('tags') || [];
    if (!tags.includes('raises-exception') && cell.outputs.toJSON().some(o => o.output_type === 'error'))
      failed = true;
  }
  if (complete) return true;
  window.__tapelabIdleSince = window.__tapelabIdleSince || Date.now();
  return Date.now() - window.__tapelabIdleSince >= quiet;
}""" % _PANEL

_CELLS = """async (path) => {
  %s
  const cells = panel.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    out.push({
      type: cell.type,
      tags: cell.getMetadata('tags') || [],
      source: cell.sharedModel.getSource(),
      execution_count: cell.type === 'code' ? cell.executionCount : null,
      outputs: cell.type === 'code' ? cell.outputs.toJSON() : [],
    });
  }
  return out;
}""" % _PANEL

_SCROLL_HEIGHT = """async (path) => {
  %s
  app.shell.collapseLeft();
  app.shell.collapseRight();
  // Wait for pictures (a widget's plot changes the height once it has loaded).
  await Promise.all(Array.from(panel.node.querySelectorAll('img')).map(img => img.complete ? null
    : new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })));
  // The notebook scrolls inside its own element (JupyterLab 4: the windowed panel's outer node).
  let scroller = panel.node.querySelector('.jp-WindowedPanel-outer');
  if (!scroller) {
    const overflowing = Array.from(panel.node.querySelectorAll('*'))
      .filter(e => e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).overflowY !== 'visible');
    if (!overflowing.length) return window.innerHeight;
    scroller = overflowing.reduce((a, b) => (b.scrollHeight > a.scrollHeight ? b : a));
  }
  scroller.scrollTop = 0;
  return scroller.scrollHeight + window.innerHeight - scroller.clientHeight;
}""" % _PANEL

# What a widget draws, apart from its controls: its pictures (images, canvases) and its text
# (HTML readouts, nested outputs, SVG), as two strings.
_DRAWN = """(output) => {
  const pictures = [];
  for (const img of output.querySelectorAll('img')) pictures.push('img:' + img.src);
  for (const canvas of output.querySelectorAll('canvas')) {
    try { pictures.push('canvas:' + canvas.toDataURL()); } catch (e) { pictures.push('canvas:?'); }
  }
  const text = Array.from(output.querySelectorAll('.widget-html-content, .widget-output, svg'))
    .map(el => el.innerHTML);
  return [pictures.join('\\n'), text.join('\\n')];
}"""


# A cell's rendered widget views: "ok" once `count` of its outputs show a widget, "error" if one
# says it cannot. (JupyterLab marks no output with its MIME type: a view is an output holding
# a `.jupyter-widgets` element.)
_WIDGETS_RENDERED = """([index, count]) => {
  const cell = document.querySelector(`[data-test-cell="${index}"]`);
  const area = cell && cell.querySelector('.jp-Cell-outputArea');
  if (!area) return false;
  if (area.textContent.includes('Error displaying widget')) return 'error';
  const views = Array.from(area.querySelectorAll(':scope > .jp-OutputArea-child > .jp-OutputArea-output'))
    .filter(o => o.querySelector(':scope > .jupyter-widgets'));
  return views.length >= count ? 'ok' : false;
}"""

_CHANGED = """([output, before]) => JSON.stringify((%s)(output)) !== before""" % _DRAWN
_PICTURE_CHANGED = """([output, before]) => (%s)(output)[0] !== before""" % _DRAWN
_DISABLED = "el => !!(el.disabled || el.closest('[disabled]'))"

# Controls a student can move, in the order they are tried: a menu first (it may enable a slider),
# then sliders and other value controls; buttons last, clicked until one changes the drawing.
CONTROLS = {
    "dropdown": ".widget-dropdown select",
    "slider": ".widget-slider .noUi-handle",
    "select": ".widget-select select",
    "toggle buttons": ".widget-toggle-buttons",
    "radio buttons": ".widget-radio-box",
    "checkbox": ".widget-checkbox input",
    "number box": ".widget-text input[type=number]",
    "toggle button": "button.widget-toggle-button:not(.widget-toggle-buttons button)",
    "button": "button.widget-button",
}
BUTTONS = ("toggle button", "button")


class LabPage:
    """One notebook opened in JupyterLab in a Playwright page."""

    def __init__(self, page: Any, server: LabServer, path: str) -> None:
        self.page, self.server, self.path = page, server, path

    def open(self, timeout_ms: float = 90_000) -> None:
        """Load JupyterLab on the notebook (a fresh workspace) and wait until its kernel is idle."""
        self.page.goto(f"{self.server.url}/lab/tree/{self.path}?reset&token={self.server.token}",
                       wait_until="domcontentloaded")
        self.page.wait_for_function(_READY, arg=self.path, timeout=timeout_ms, polling=250)

    def run(self, command: str, indices: list[int] | None = None, timeout_ms: float = 240_000,
            quiet_ms: float = 10_000) -> None:
        """Execute a notebook command (on the given cells) and wait until they have all finished."""
        self.page.evaluate(_RUN, [self.path, command, indices])
        outcome = self.page.wait_for_function(_IDLE, arg=[self.path, indices, quiet_ms], timeout=timeout_ms,
                                              polling=250).json_value()
        if outcome is not True:
            raise RuntimeError(f"JupyterLab's {command} on {self.path} {outcome}")

    def run_cells(self, *indices: int) -> None:
        """Run these cells one after another, each after the previous one finished."""
        for index in indices:
            self.run("notebook:run-cell", [index])

    def cells(self) -> list[dict]:
        """Every cell's type, tags, source, execution count and outputs (nbformat JSON)."""
        return self.page.evaluate(_CELLS, self.path)

    def cell(self, index: int) -> Any:
        """The Playwright locator of a cell's DOM node."""
        return self.page.locator(f'[data-test-cell="{index}"]')

    def drawn(self, output: Any) -> list[str]:
        """What a widget output draws: [its pictures, its text], each as one comparable string."""
        return output.evaluate(_DRAWN)

    def widget_outputs(self, index: int) -> Any:
        """Locator of the widget views a cell displays (its own outputs, not nested ones)."""
        return self.cell(index).locator(
            ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output:has(> .jupyter-widgets)")

    def wait_for_widgets(self, index: int, count: int, timeout_ms: float = 30_000) -> str:
        """'ok' once `count` widget views of the cell have rendered, 'error' or 'timeout' otherwise."""
        try:
            return self.page.wait_for_function(_WIDGETS_RENDERED, arg=[index, count], timeout=timeout_ms,
                                               polling=250).json_value()
        except PlaywrightTimeout:
            return "timeout"

    def move_controls(self, output: Any, timeout_ms: float = 15_000) -> tuple[list[str], list[str]]:
        """Move one enabled control of each kind the widget has, and check that each changes what it
        draws, and that its picture (if it has one) changed at least once. (kinds moved, problems)"""
        handle = output.element_handle()
        has_picture = bool(self.drawn(output)[0])
        moved, problems, picture_changed = [], [], False
        for kind, selector in CONTROLS.items():
            candidates = output.locator(selector)
            enabled = [candidates.nth(i) for i in range(min(candidates.count(), 6))
                       if not candidates.nth(i).evaluate(_DISABLED)]
            if kind not in BUTTONS:
                enabled = enabled[:1]
            for control in enabled:
                before = self.drawn(output)
                _move(kind, control)
                try:
                    self.page.wait_for_function(_CHANGED, arg=[handle, json.dumps(before)], timeout=timeout_ms,
                                                polling=100)
                except PlaywrightTimeout:
                    if kind not in BUTTONS:
                        problems.append(f"did not redraw within {timeout_ms / 1000:.0f} s after its {kind} moved")
                    continue
                # The picture may follow the readout: wait for it (bounded) until it has changed once.
                if has_picture and not picture_changed:
                    picture_changed = self._picture_changes(handle, before[0])
                else:
                    self.page.wait_for_timeout(200)
                moved.append(kind)
                if kind in BUTTONS:
                    break
            if enabled and kind in BUTTONS and kind not in moved:
                problems.append(f"none of its {len(enabled)} {kind}(s) changed what it draws")
        if not moved and not problems:
            problems.append("has no enabled control to move")
        if has_picture and moved and not picture_changed:
            problems.append(f"its picture did not change when its {', '.join(moved)} moved")
        return moved, problems

    def _picture_changes(self, handle: Any, before: str, timeout_ms: float = 5_000) -> bool:
        """Whether the widget's picture differs from `before` within `timeout_ms`."""
        try:
            self.page.wait_for_function(_PICTURE_CHANGED, arg=[handle, before], timeout=timeout_ms, polling=100)
        except PlaywrightTimeout:
            return False
        return True

    @contextlib.contextmanager
    def screenshot_after(self, target: Path) -> Iterator[None]:
        """Screenshot the notebook when the block ends, also when it fails (then at best effort)."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self.screenshot(target)
            raise
        self.screenshot(target)

    def screenshot(self, target: Path, max_height: int = 16_000) -> None:
        """The whole notebook in one PNG: the viewport is stretched to its height for the shot."""
        target.parent.mkdir(parents=True, exist_ok=True)
        size = self.page.viewport_size
        try:
            for _ in range(3):  # a taller viewport can re-flow the notebook: measure until it fits
                height = min(max(int(self.page.evaluate(_SCROLL_HEIGHT, self.path)), size["height"]), max_height)
                if height == self.page.viewport_size["height"]:
                    break
                self.page.set_viewport_size({"width": size["width"], "height": height})
                self.page.wait_for_timeout(300)
            self.page.screenshot(path=str(target), full_page=True)
        finally:
            self.page.set_viewport_size(size)


def _move(kind: str, control: Any) -> None:
    """Change one control the way a student would: keyboard on sliders, a new option in menus, clicks."""
    if kind == "slider":
        at_max = control.get_attribute("aria-valuenow") == control.get_attribute("aria-valuemax")
        control.focus()
        control.press("ArrowLeft" if at_max else "ArrowRight")
    elif kind in ("dropdown", "select"):
        control.select_option(index=1 if control.evaluate("s => s.selectedIndex") == 0 else 0)
    elif kind == "toggle buttons":
        control.locator("button:not(.mod-active)").first.click()
    elif kind == "radio buttons":
        control.locator("input:not(:checked)").first.click()
    elif kind == "number box":
        control.focus()
        control.press("ArrowUp")
        control.press("Enter")
    else:
        control.click()


def output_text(outputs: list[dict]) -> str:
    """The text a cell's outputs show: streams, plain-text results and error tracebacks."""
    parts = []
    for output in outputs:
        if output["output_type"] == "stream":
            parts.append(output.get("text", ""))
        elif output["output_type"] == "error":
            parts.append("\n".join(output.get("traceback", [])) or f"{output['ename']}: {output['evalue']}")
        else:
            parts.append(str(output.get("data", {}).get("text/plain", "")))
    return "".join(parts)


def problems_in(outputs: list[dict]) -> list[str]:
    """Error outputs and stderr text, shortened for a failure message."""
    found = []
    for output in outputs:
        if output["output_type"] == "error":
            found.append(f"{output['ename']}: {output['evalue']}"[:300])
        elif output["output_type"] == "stream" and output.get("name") == "stderr":
            found.append(f"stderr: {output.get('text', '')}"[:300])
    return found
