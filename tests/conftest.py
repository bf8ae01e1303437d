"""Fixtures and hooks shared by every system's tests.

* ``@pytest.mark.slow`` tests get a larger per-test timeout (:data:`SLOW_TIMEOUT_S`) than the default
  one of the pytest configuration (``timeout`` in pyproject.toml), unless they set their own.
* ``@pytest.mark.deepmimic`` tests read the shared DeepMimic data (``shared/data/deepmimic``, see
  :func:`animat.imitate.clip.find_shared_deepmimic`): without it they are skipped, except under
  ``CI=true`` (CI always lays the shared data out), where they fail: a missing data folder must not
  pass CI as a row of skips.
"""

from __future__ import annotations

import os
import sys

import pytest

from animat import cli

SLOW_TIMEOUT_S = 3600


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, as GitHub Actions, GitLab and most CI systems set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


def pytest_runtest_setup(item):
    if item.get_closest_marker("deepmimic") is None:
        return
    from animat.imitate.clip import find_shared_deepmimic

    if find_shared_deepmimic() is None:
        message = "shared/data/deepmimic not found (set ANIMAT_SHARED_DATA or lay out ../shared/data/deepmimic)"
        if in_ci():
            pytest.fail(f"CI=true but {message}: CI always has the shared data", pytrace=False)
        pytest.skip(message)


@pytest.fixture
def animat_cli(monkeypatch, capsys):
    """Run ``animat ARGS`` in-process: ``animat_cli(*args) -> (exit code, stdout, stderr)``."""

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["animat", *args])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
