"""Fixtures and hooks shared by every system's tests.

* ``@pytest.mark.slow`` tests get a larger per-test timeout (:data:`SLOW_TIMEOUT_S`) than the default
  one of the pytest configuration (``timeout`` in pyproject.toml), unless they set their own.
* ``@pytest.mark.deepmimic`` tests read the shared DeepMimic data (``shared/data/deepmimic``, see
  :func:`animat.character.clip.find_shared_deepmimic`): without it they are skipped, except under
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
                from animat.character.clip import find_shared_deepmimic

                shared = find_shared_deepmimic() is not None
            if not shared and not in_ci():  # a skip marker: -ra names the test's own file and line
                item.add_marker(pytest.mark.skip(reason=f"{NO_SHARED_DATA} (under CI=true this fails)"))


def pytest_runtest_setup(item):
    if item.get_closest_marker("deepmimic") is not None and in_ci():
        from animat.character.clip import find_shared_deepmimic

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
        compare only the first this many entries of each stored column. Floats compare within
        :data:`RTOL` (see :func:`mismatches`); everything else exactly."""
        stored = self.stored()
        assert key in stored, f"{self.path.name} holds no {key!r}; regenerate with ANIMAT_REGEN_GOLDEN=1"
        want = stored[key]
        if isinstance(want, dict) and isinstance(value, dict):
            value = {k: value.get(k, "<missing>") for k in want}
            if rows is not None:
                want, value = ({k: v[:rows] for k, v in d.items()} for d in (want, value))
        found = mismatches(want, value)
        assert not found, f"{key!r} differs from {self.path.name}: " + "; ".join(found[:6]) + (" …" if len(found) > 6 else "")

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
    def fingerprint(cls, array) -> str | dict:
        """An integer or boolean array: its :meth:`sha256`. A float array: ``{"sha256", "moments"}``, the
        moments (reprs, in the array's units) being its mean, mean absolute value, root mean square and
        mean weighted by a ramp from −1 to 1 over its flattened entries (which sees entries move)."""
        a = np.asarray(array)
        if not np.issubdtype(a.dtype, np.floating):
            return cls.sha256(a)
        x = a.astype(np.float64).ravel()
        ramp = np.linspace(-1.0, 1.0, x.size) if x.size > 1 else np.ones(x.size)
        moments = [x.mean(), np.abs(x).mean(), np.sqrt((x * x).mean()), (x * ramp).mean()] if x.size else []
        return {"sha256": cls.sha256(a), "moments": [repr(float(m)) for m in moments]}

    @classmethod
    def npz(cls, path: Path) -> dict:
        """:meth:`fingerprint` of each array of an npz file but the wall times."""
        with np.load(path, allow_pickle=False) as z:
            return {k: cls.fingerprint(z[k]) for k in z.files if k not in cls.WALL_COLUMNS}


RTOL = 1e-3
"""How far a float may move from the stored one, relative to its scale (:func:`mismatches`). JAX's XLA and
torch compile their float32 kernels for the CPU they run on (AVX2 or AVX-512, FMA, other summation
orders): CI on another CPU (2026-12-02) moved the surrogate's and PPO's training losses in the 6th–8th
significant digit; on the machine that stored them they repeat bit for bit. Checked on that machine:
every golden test passes with XLA limited to AVX or AVX2 (``XLA_FLAGS=--xla_cpu_max_isa=AVX2``) beside
torch's AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``); torch's unvectorised kernels (``=default``, a CPU
without AVX2, which no CI machine is) move the PPO policy's first bias by 2e-3 of its size and fail. A
behaviour change (a resumed run's lost random state, a changed formula) moves them by far more."""


ATOL = 1e-6
"""The floor of a lone float's scale (a summary entry, with no column around it): below it lie roundoff
figures such as a symmetric fly's lateral drift, 1e-9 m, which those CPUs moved by 20 %."""


def _number(text) -> float | None:
    """A float written as a CSV cell or a repr (``"1e-05"``, ``"nan"``); ``None`` for anything else,
    integers included (they compare exactly)."""
    if not isinstance(text, str) or not any(c in text.lower() for c in ".ein"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _close(want: str, got, scale: float) -> bool:
    w, g = _number(want), _number(got)
    if w is None or g is None:
        return want == got
    if np.isnan(w) or np.isnan(g) or np.isinf(w) or np.isinf(g):
        return repr(w) == repr(g)
    return abs(w - g) <= RTOL * max(abs(w), scale)


def _scale(values) -> float:
    """A column's or an array's scale: its largest finite magnitude."""
    numbers = [abs(x) for x in map(_number, values) if x is not None and np.isfinite(x)]
    return max(numbers, default=0.0)


def mismatches(want, got, where: str = "") -> list[str]:
    """Where ``got`` differs from the stored ``want`` (JSON structures of strings, numbers and lists):
    floats (CSV cells, reprs) within :data:`RTOL` of the largest of their own magnitude, their list's (a
    column's, an array's moments') and, for a lone float, :data:`ATOL`; an array fingerprint
    (:meth:`Golden.fingerprint`) matches by its hash or else by its moments; everything else exactly."""
    if isinstance(want, dict) and set(want) == {"sha256", "moments"} and isinstance(got, dict):
        if want["sha256"] == got.get("sha256"):
            return []
        return mismatches(want["moments"], got.get("moments"), where + "/moments")
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where or '.'}: {got!r:.60} is no dict"]
        return [m for k in want for m in mismatches(want[k], got.get(k, "<missing>"), f"{where}/{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where or '.'}: {len(want)} entries stored, got {got!r:.60}"]
        scale, found = _scale(want), []
        for i, (w, g) in enumerate(zip(want, got)):
            if isinstance(w, (dict, list)):
                found += mismatches(w, g, f"{where}[{i}]")
            elif not _close(w, g, scale):
                found.append(f"{where}[{i}]: stored {w!r}, got {g!r}")
        return found
    return [] if _close(want, got, ATOL) else [f"{where or '.'}: stored {want!r}, got {got!r}"]


@pytest.fixture
def golden():
    """``golden(FILE)``: a :class:`Golden` over tests/golden/FILE.json."""
    return Golden
