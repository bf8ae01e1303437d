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
NO_SHARED_DATA = "shared/data/deepmimic not found (set ANIMAT_SHARED_DATA or lay out ../shared/data/deepmimic)"


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, as GitHub Actions, GitLab and most CI systems set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_collection_modifyitems(config, items):
    shared = None
    for item in items:
        if item.get_closest_marker("slow") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
        if item.get_closest_marker("deepmimic") is not None:
            if shared is None:
                from animat.imitate.clip import find_shared_deepmimic

                shared = find_shared_deepmimic() is not None
            if not shared and not in_ci():  # a skip marker: -ra names the test's own file and line
                item.add_marker(pytest.mark.skip(reason=f"{NO_SHARED_DATA} (under CI=true this fails)"))


def pytest_runtest_setup(item):
    if item.get_closest_marker("deepmimic") is not None and in_ci():
        from animat.imitate.clip import find_shared_deepmimic

        if find_shared_deepmimic() is None:
            pytest.fail(f"CI=true but {NO_SHARED_DATA}: CI always has the shared data", pytrace=False)


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
