"""The real browser of the console tests: Playwright driving Debian's chromium (never a browser Playwright
downloads). A pytest plugin (tests/conftest.py registers it): the `browser` fixture is found, not imported;
the viewports and `shot` are imported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DOCS_IMG = Path(__file__).parent.parent / "docs" / "img"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@pytest.fixture
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make test installs it: DEB_TEST_PACKAGES)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def shot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / name), full_page=True)
    if os.environ.get("VIGIL_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / name, DOCS_IMG / name)
