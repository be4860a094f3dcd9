"""Fixtures for the browser tests: one JupyterLab server and one headless Chromium per session.

Nothing here skips: without Chromium the tests fail and say how to install it.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labpage import LabPage
from labserver import CHROMIUM, CHROMIUM_ARGS, LabServer

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output"


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    """Debian's Chromium; its absence is a failure (in CI and locally), never a skip."""
    if not os.access(CHROMIUM, os.X_OK):
        where = " CI must do this before `make test`." if os.environ.get("CI") == "true" else ""
        pytest.fail(f"Chromium is missing at {CHROMIUM}, so JupyterLab cannot be tested in a browser. "
                    f"Install it with `make chromium` (as root: apt-get install -y chromium).{where}",
                    pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="session")
def lab_server(chromium_path: Path) -> Iterator[LabServer]:
    """JupyterLab serving the repository on 127.0.0.1 with a random token; stopped with its kernels.

    (It asks for Chromium first, so a missing browser fails before a server starts for nothing.)
    """
    server = LabServer(REPO, OUTPUT / "jupyterlab.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser_context(chromium_path: Path) -> Iterator[object]:
    """A headless Chromium context with a 1280x1000 viewport; only 127.0.0.1 resolves inside it.

    One per module, not per session: while Playwright's sync API is open it keeps an asyncio loop
    running in this thread, and a later module in the same test worker (the grading worker, run
    in-process by test_sandbox_host) must be able to call asyncio.run."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium_path), headless=True,
                                             args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        try:
            yield context
        finally:
            context.close()
            browser.close()


@pytest.fixture
def open_notebook(lab_server: LabServer, browser_context) -> Iterator[Callable[[str], LabPage]]:
    """Open a notebook (path from the repository root) in a fresh page; close it and its kernel after."""
    pages: list[LabPage] = []

    def open_(path: str) -> LabPage:
        lab = LabPage(browser_context.new_page(), lab_server, path)
        pages.append(lab)
        lab.open()
        return lab

    yield open_
    for lab in pages:
        lab.page.close()
    # Every kernel is this test's (tests run one at a time): stop them while the next test starts.
    lab_server.shutdown_kernels(wait=False)
