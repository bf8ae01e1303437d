"""Fixtures and hooks shared by every system's tests.

* ``@pytest.mark.slow`` tests get a larger per-test timeout (:data:`SLOW_TIMEOUT_S`) than the default
  one of the pytest configuration (``timeout`` in pyproject.toml), unless they set their own.
* ``@pytest.mark.deepmimic`` tests read the shared DeepMimic data (``shared/data/deepmimic``, see
  :func:`animat.imitate.clip.find_shared_deepmimic`): without it they are skipped, except under
  ``CI=true`` (CI always lays the shared data out), where they fail: a missing data folder must not
  pass CI as a row of skips.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
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


class Golden:
    """Outputs pinned in ``tests/golden/FILE.json`` (see tests/test_golden.py); with the environment
    variable ANIMAT_REGEN_GOLDEN=1 :meth:`check` stores what it is given instead of comparing."""

    DIR = Path(__file__).parent / "golden"
    REGEN = os.environ.get("ANIMAT_REGEN_GOLDEN") == "1"

    def __init__(self, file: str):
        self.path = self.DIR / f"{file}.json"

    def stored(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def check(self, key: str, value):
        """``value`` (JSON-able) equals the one stored under ``key``. A stored dict pins its own keys
        only: an output key added later is no change, a missing or different one fails."""
        stored = self.stored()
        if self.REGEN:
            self.DIR.mkdir(exist_ok=True)
            stored[key] = value
            self.path.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
            return
        self.equal(key, value)

    def equal(self, key: str, value, rows: int | None = None):
        """As :meth:`check`, but compares in either mode (what a resumed run must repeat); ``rows``:
        compare only the first this many entries of each stored column."""
        stored = self.stored()
        assert key in stored, f"{self.path.name} holds no {key!r}; regenerate with ANIMAT_REGEN_GOLDEN=1"
        want = stored[key]
        if isinstance(want, dict) and isinstance(value, dict):
            value = {k: value.get(k, "<missing>") for k in want}
            if rows is not None:
                want, value = ({k: v[:rows] for k, v in d.items()} for d in (want, value))
        assert value == want, f"{key!r} differs from {self.path.name}"

    # not reproducible, so never compared: wall times, paths, what the machine offers
    WALL_COLUMNS = ("seconds", "fps", "microseconds", "seconds_per_frame")
    WALL_ENTRIES = (
        "train_seconds_this_session", "mean_seconds_per_generation", "seconds_per_generation", "train_seconds",
        "steps_per_second", "eval_seconds_each", "reference_seconds_per_frame", "reference_seconds_per_frame_recorded",
        "runtime_numba_seconds_per_frame", "runtime_numpy_seconds_per_frame", "runtime_jax_seconds_per_frame",
        "speedup_vs_reference", "per_frame_us_mean", "per_frame_us_median", "per_frame_us_p99", "frames_per_second",
        "source", "data", "model", "logs", "renderer", "replay_renderer", "jax_backend",
    )

    @classmethod
    def columns(cls, csv_path: Path) -> dict[str, list[str]]:
        """The columns of a CSV file as the strings written, but the wall times."""
        with open(csv_path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        return {name: [r[name] for r in rows] for name in rows[0] if name not in cls.WALL_COLUMNS}

    @classmethod
    def summary(cls, json_path: Path, drop: tuple[str, ...] = ()) -> dict:
        """A JSON file's top-level entries but :attr:`WALL_ENTRIES` and ``drop``, every float as its
        repr (exact, NaN too)."""

        def exact(v):
            if isinstance(v, dict):
                return {k: exact(x) for k, x in v.items()}
            return repr(v) if isinstance(v, float) else [exact(x) for x in v] if isinstance(v, list) else v

        entries = json.loads(Path(json_path).read_text()).items()
        return {k: exact(v) for k, v in entries if k not in cls.WALL_ENTRIES + drop}

    @staticmethod
    def sha256(array) -> str:
        """Of an array's dtype, shape and bytes."""
        a = np.ascontiguousarray(array)
        return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()

    @classmethod
    def npz(cls, path: Path) -> dict[str, str]:
        """:meth:`sha256` of each array of an npz file but the wall times."""
        with np.load(path, allow_pickle=False) as z:
            return {k: cls.sha256(z[k]) for k in z.files if k not in cls.WALL_COLUMNS}


@pytest.fixture
def golden():
    """``golden(FILE)``: a :class:`Golden` over tests/golden/FILE.json."""
    return Golden
