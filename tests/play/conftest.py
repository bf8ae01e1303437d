"""The headless-Chromium fixtures of the report's browser tests (tests/viz/test_report_browser.py), shared here:
``browser`` (skipped, with the reason, without Chromium, playwright or three.js) and ``artefacts``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "report_browser_fixtures", Path(__file__).parents[1] / "viz" / "test_report_browser.py"
)
_report_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_report_browser)

browser = _report_browser.browser
artefacts = _report_browser.artefacts
