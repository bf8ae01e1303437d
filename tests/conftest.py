"""Fixtures and hooks shared by every system's tests.

* ``@pytest.mark.slow`` tests get a larger per-test timeout (:data:`SLOW_TIMEOUT_S`) than the default
  one of the pytest configuration (``timeout`` in pyproject.toml), unless they set their own.
* Strict JSON (issue 52): every ``summary.json`` and ``config.json`` a test leaves under its ``tmp_path``, and
  every JSON document ``animat_cli`` prints, holds no ``NaN``/``Infinity`` (:func:`nonfinite_words`), whatever
  the test itself checks.
* ``@pytest.mark.deepmimic`` tests read the shared DeepMimic data (``shared/data/deepmimic``, see
  :func:`animat.character.clip.find_shared_deepmimic`): without it they are skipped, except under
  ``CI=true`` (CI always lays the shared data out), where they fail: a missing data folder must not
  pass CI as a row of skips.
* JAX's persistent compilation cache (:mod:`animat.jax_cache`) points at a folder made for this session and
  removed after it, shared by the pytest-xdist workers and the ``animat`` subprocesses they start: a rollout
  that several tests compile with the same shapes is compiled once. ``ANIMAT_JAX_CACHE`` set beforehand wins.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from animat import cli, jax_cache

# set before any test module imports JAX; the workers inherit it from the controlling process
_SESSION_JAX_CACHE = None
if "PYTEST_XDIST_WORKER" not in os.environ and not os.environ.get(jax_cache.ENV):
    _SESSION_JAX_CACHE = os.environ[jax_cache.ENV] = tempfile.mkdtemp(prefix="animat-test-jax-cache-")
jax_cache.configure()

SLOW_TIMEOUT_S = 3600
NO_SHARED_DATA = "shared/data/deepmimic not found (set ANIMAT_SHARED_DATA or lay out ../shared/data/deepmimic)"


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, as GitHub Actions, GitLab and most CI systems set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_unconfigure(config):
    if _SESSION_JAX_CACHE is not None:
        shutil.rmtree(_SESSION_JAX_CACHE, ignore_errors=True)


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


def nonfinite_words(text: str) -> list[str]:
    """The ``NaN``, ``Infinity`` and ``-Infinity`` of a JSON text (Python writes them; JSON has none, so
    ``JSON.parse`` refuses the whole document); [] for a text that is not JSON at all."""
    found: list[str] = []
    try:
        json.loads(text, parse_constant=found.append)
    except ValueError:
        return []
    return found


@pytest.fixture
def json_nonfinite():
    """:func:`nonfinite_words`, for the test of the check itself (tests/test_strict_json.py)."""
    return nonfinite_words


STRICT_JSON_FILES = ("summary.json", "config.json")


@pytest.fixture(autouse=True)
def _strict_json_outputs(request):
    """After a test with a ``tmp_path``: no :data:`STRICT_JSON_FILES` under it holds NaN or Infinity."""
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None or not tmp.is_dir():
        return
    bad = {
        str(p.relative_to(tmp)): words
        for name in STRICT_JSON_FILES
        for p in tmp.rglob(name)
        if p.is_file() and (words := nonfinite_words(p.read_text(errors="replace")))
    }
    assert not bad, f"not strict JSON (NaN/Infinity): {bad}"


@pytest.fixture
def animat_cli(monkeypatch, capsys):
    """Run ``animat ARGS`` in-process: ``animat_cli(*args) -> (exit code, stdout, stderr)``; a JSON document
    printed on stdout must be strict JSON (no NaN/Infinity)."""

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["animat", *args])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        words = nonfinite_words(out.out) if out.out.lstrip().startswith(("{", "[")) else []
        assert not words, f"animat {' '.join(args)} printed JSON with {words}"
        return code, out.out, out.err

    return run


class Golden:
    """Outputs pinned in ``tests/golden/FILE.json`` (see tests/test_golden.py), the arrays' values in
    ``tests/golden/FILE.npz`` beside it (the JSON names each array's entry, dtype and shape); with the
    environment variable ANIMAT_REGEN_GOLDEN=1 :meth:`check` stores what it is given instead of comparing.
    Floats compare within the tolerance of the system that computed them (:data:`RTOL`, :meth:`rtol`)."""

    DIR = Path(__file__).parent / "golden"
    # ANIMAT_REGEN_GOLDEN=cpu: store into this CPU class's own folder (see cpu_class), the main pins kept
    REGEN_CPU = os.environ.get("ANIMAT_REGEN_GOLDEN") == "cpu"
    REGEN = REGEN_CPU or os.environ.get("ANIMAT_REGEN_GOLDEN") == "1"

    def __init__(self, file: str, folder: Path | None = None):
        self.file = file
        folder = folder or (self.DIR / "cpu" / cpu_class() if self.REGEN_CPU else self.DIR)
        self.path = folder / f"{file}.json"
        self.arrays_path = folder / f"{file}.npz"

    def rtol(self, key: str) -> float:
        """The tolerance of ``key``'s system: the file's name up to its first ``-`` (``fly-steer``: fly),
        or for ``old_runs``, which holds every system's, the key's first part (``skier/replay/summary``)."""
        return RTOL[key.split("/")[0] if self.file == "old_runs" else self.file.split("-")[0]]

    def stored(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def stored_arrays(self) -> dict[str, np.ndarray]:
        if not self.arrays_path.exists():
            return {}
        with np.load(self.arrays_path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    def check(self, key: str, value, rtol: float | None = None):
        """``value`` (JSON-able, or NumPy arrays anywhere in it) equals the one stored under ``key``. A
        stored dict pins its own keys only: an output key added later is no change, a missing or
        different one fails. ``rtol``: instead of the system's (:meth:`rtol`), e.g. :data:`ROLLOUT_RTOL`."""
        if not self.REGEN:
            return self.equal(key, value, rtol=rtol)
        stored, arrays = self.stored(), self.stored_arrays()
        arrays = {k: a for k, a in arrays.items() if k != key and not k.startswith(key + "/")}
        stored[key] = _store(value, key, arrays)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        if arrays:
            np.savez_compressed(self.arrays_path, **arrays)
        elif self.arrays_path.exists():
            self.arrays_path.unlink()

    def equal(self, key: str, value, rows: int | None = None, rtol: float | None = None):
        """As :meth:`check`, but compares in either mode (what a resumed run must repeat); ``rows``:
        compare only the first this many entries of each stored column. Floats compare within
        :meth:`rtol` (see :func:`mismatches`); everything else exactly."""
        stored = self.stored()
        assert key in stored, f"{self.path.name} holds no {key!r}; regenerate with ANIMAT_REGEN_GOLDEN=1"
        want, given = stored[key], value  # given: for this CPU class's own pins, which may pin other keys
        if isinstance(want, dict) and isinstance(value, dict) and not _is_array_ref(want):
            value = {k: value.get(k, "<missing>") for k in want}
            if rows is not None:
                want, value = ({k: v[:rows] for k, v in d.items()} for d in (want, value))
        found = mismatches(want, value, rtol=self.rtol(key) if rtol is None else rtol, arrays=self.stored_arrays())
        own = None if not found or self.path.parent != self.DIR else Golden(self.file, self.DIR / "cpu" / cpu_class())
        if own is not None and key in own.stored():  # pins of this CPU class's own rounding (cpu_class)
            return own.equal(key, given, rows=rows, rtol=rtol)
        assert not found, (
            f"{key!r} differs from {self.path.name}: " + "; ".join(found[:6]) + (" …" if len(found) > 6 else "")
        )

    @staticmethod
    def assert_agrees(recorded: dict, got: dict, system: str, what: str):
        """``got`` holds the figures that a run ``recorded`` itself (both as :meth:`summary` writes them: floats
        as reprs), within ``system``'s tolerance (:data:`RTOL`): an old run's own record, not a golden
        written later by newer code."""
        found = mismatches(recorded, {k: got.get(k, "<missing>") for k in recorded}, rtol=RTOL[system])
        more = " …" if len(found) > 6 else ""
        assert not found, f"{what} differs from what the run recorded: " + "; ".join(found[:6]) + more

    # not reproducible, so never compared: wall times, paths, what the machine offers
    WALL_COLUMNS = ("seconds", "fps", "microseconds", "seconds_per_frame")
    WALL_ENTRIES = (
        "train_seconds_this_session",
        "mean_seconds_per_generation",
        "seconds_per_generation",
        "train_seconds",
        "steps_per_second",
        "eval_seconds_each",
        "reference_seconds_per_frame",
        "reference_seconds_per_frame_recorded",
        "runtime_numba_seconds_per_frame",
        "runtime_numpy_seconds_per_frame",
        "runtime_jax_seconds_per_frame",
        "speedup_vs_reference",
        "per_frame_us_mean",
        "per_frame_us_median",
        "per_frame_us_p99",
        "frames_per_second",
        "source",
        "data",
        "model",
        "logs",
        "renderer",
        "replay_renderer",
        "jax_backend",
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
        """Of an array's dtype, shape and bytes (what the goldens of commit e9c1b06 stored)."""
        a = np.ascontiguousarray(array)
        return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()

    @classmethod
    def npz(cls, path: Path, every: int = 1) -> dict[str, np.ndarray]:
        """The arrays of an npz file but the wall times; ``every``: only every this many rows of each
        array's first axis (a long trajectory's, to keep the stored file small)."""
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k][::every] if z[k].ndim else z[k] for k in z.files if k not in cls.WALL_COLUMNS}

    @staticmethod
    def same(a: dict, b: dict) -> bool:
        """Two dicts of arrays (:meth:`npz`) equal bit for bit: the same keys, dtypes, shapes and values."""
        return a.keys() == b.keys() and all(
            a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a
        )


RTOL = {"fly": 5e-5, "skier": 0.0, "surrogate": 1e-4, "imitate": 1e-4}
"""How far a float may move from the stored one, per system, relative to the largest of its own magnitude,
its scale (a column's or an array's largest finite magnitude) and :data:`ATOL` (:func:`mismatches`).
Measured (2026-12-06) between the machine that stored the goldens and an AMD EPYC without AVX-512: the fly
repeated bit for bit, the others moved (largest moves below). On that EPYC, XLA limited to AVX
(``XLA_FLAGS=--xla_cpu_max_isa=AVX``, no FMA) moved the fly's generation means and medians by at most
1.4e-5 of their column's scale (its genes by 4e-9), and nothing of the skier; NumPy's kernels limited to
SSE4 (``NPY_DISABLE_CPU_FEATURES=X86_V3``) and OpenBLAS's (``OPENBLAS_CORETYPE=Prescott``, its generic
kernels) changed no skier figure. The chaotic flights of tests/test_golden_verbs.py are another matter (its
docstring): without FMA they diverge beyond any tolerance.

- skier (MuJoCo and NumPy in float64): exact, bit for bit; but a GA's population figures:
  :data:`ROLLOUT_RTOL`.
- fly (JAX float32): 5e-5, over 3× the 1.4e-5 above.
- surrogate (JAX float32): 1e-4; measured: training metrics 6e-7, its best model's parameters 5e-5 (of
  their moments; the arrays themselves were stored as fingerprints then), roundoff figures such as the
  PCA floor error (1e-6 %) by up to 2e-4 of themselves, which :data:`ATOL` covers.
- imitate (torch float32 PPO, MuJoCo float64): 1e-4; measured: training metrics 6e-5 of their column, the
  policy's parameters 7e-5 (of their moments), a fixed policy's play 1e-16 (its reference poses and rewards).

A behaviour change (a resumed run's lost random state, a changed formula, a physics constant moved by
1e-4 of itself) moves them by far more; torch's unvectorised kernels (``ATEN_CPU_CAPABILITY=default``, a
CPU without AVX2, which no CI machine is) move the PPO policy's first bias by 2e-3 of its size and fail.
Check a change of tolerance on one machine by limiting the instruction sets, as above and with
``XLA_FLAGS=--xla_cpu_max_isa=AVX2 ATEN_CPU_CAPABILITY=avx2`` on a machine with AVX-512."""

ROLLOUT_RTOL = 1e-3
"""The tolerance of figures that long or chaotic rollouts make (a test passes it as ``rtol``): evaluations
and plays of the surrogate, the evaluation returns of a freshly trained PPO policy, and a GA's population
figures (a generation's mean, which one individual's changed fitness moves). Measured between those two
machines: the surrogate's play's range ratio 2.2e-4 of its column, the PPO run's evaluation return gain
3.7e-4 of itself, the two-axis skier's last generation mean 5.7e-4 (one of the ten skiers' fitness moved
by 0.026 m while the generation's best and median repeated bit for bit; so the skier's GA is not exact
across CPUs, though its replays are)."""

Golden.ROLLOUT_RTOL = ROLLOUT_RTOL  # the tests' g.check(key, value, rtol=g.ROLLOUT_RTOL)

ATOL = 1e-5
"""The floor of a float's scale: below it lie roundoff figures such as a symmetric fly's lateral drift,
1e-9 m, which those CPUs moved by 20 %, and the surrogate's PCA floor error, 1e-6 %, moved by 2e-4 of itself."""


def _is_array_ref(want) -> bool:
    return isinstance(want, dict) and set(want) == {"array", "dtype", "shape"}


def _store(value, name: str, arrays: dict):
    """``value`` as stored in the JSON: each NumPy array replaced by a reference to its entry ``name``
    (its key and path in ``value``) in ``arrays`` (the npz file)."""
    if isinstance(value, np.ndarray):
        arrays[name] = value
        return {"array": name, "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _store(v, f"{name}/{k}", arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_store(v, f"{name}/{i}", arrays) for i, v in enumerate(value)]
    return value


def _number(text) -> float | None:
    """A float written as a CSV cell or a repr (``"1e-05"``, ``"nan"``); ``None`` for anything else,
    integers included (they compare exactly)."""
    if not isinstance(text, str) or not any(c in text.lower() for c in ".ein"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _close(want: str, got, scale: float, rtol: float) -> bool:
    w, g = _number(want), _number(got)
    if w is None or g is None:
        return want == got
    if np.isnan(w) or np.isnan(g) or np.isinf(w) or np.isinf(g):
        return repr(w) == repr(g)
    return abs(w - g) <= rtol * max(abs(w), scale, ATOL)


def _scale(values) -> float:
    """A column's or an array's scale: its largest finite magnitude."""
    numbers = [abs(x) for x in map(_number, values) if x is not None and np.isfinite(x)]
    return max(numbers, default=0.0)


def _array_mismatches(want: dict, got, rtol: float, arrays: dict, where: str) -> list[str]:
    """A stored array (its reference ``want``, its values in ``arrays``) against ``got``: the same dtype
    and shape; integers and booleans equal; floats element by element within ``rtol`` of the larger of
    the element's magnitude, the array's largest finite one and :data:`ATOL`, NaN and infinities where
    they were."""
    if not isinstance(got, np.ndarray):
        return [f"{where or '.'}: {type(got).__name__} where an array is stored"]
    w = arrays.get(want["array"])
    if w is None:
        return [f"{where or '.'}: the npz file holds no {want['array']!r}; regenerate with ANIMAT_REGEN_GOLDEN=1"]
    if (got.dtype.str, list(got.shape)) != (w.dtype.str, list(w.shape)):
        return [f"{where or '.'}: stored {w.dtype.str} {list(w.shape)}, got {got.dtype.str} {list(got.shape)}"]
    if w.dtype.kind != "f":
        bad = w != got
    else:
        w64, g64 = w.astype(np.float64), got.astype(np.float64)
        finite = np.isfinite(w64)
        scale = float(np.abs(w64[finite]).max()) if finite.any() else 0.0
        with np.errstate(invalid="ignore"):
            bad = np.where(
                finite,
                ~(np.abs(w64 - g64) <= rtol * np.maximum(np.abs(w64), max(scale, ATOL))),
                ~((np.isnan(w64) & np.isnan(g64)) | (w64 == g64)),
            )
    if not bad.any():
        return []
    i = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
    first = list(map(int, i))
    where = f"{where or '.'}: {int(bad.sum())} of {bad.size} entries differ, first at {first}"
    return [f"{where}: stored {w[i]!r}, got {got[i]!r}"]


def mismatches(want, got, where: str = "", rtol: float = 0.0, arrays: dict | None = None) -> list[str]:
    """Where ``got`` differs from the stored ``want`` (JSON structures of strings, numbers, lists and
    array references, whose values are in ``arrays``): floats (CSV cells, reprs) within ``rtol`` of the
    largest of their own magnitude, their list's (a column's) and :data:`ATOL`;
    arrays element by element (:func:`_array_mismatches`); everything else exactly."""
    arrays = {} if arrays is None else arrays
    if _is_array_ref(want):
        return _array_mismatches(want, got, rtol, arrays, where)
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where or '.'}: {got!r:.60} is no dict"]
        return [m for k in want for m in mismatches(want[k], got.get(k, "<missing>"), f"{where}/{k}", rtol, arrays)]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where or '.'}: {len(want)} entries stored, got {got!r:.60}"]
        scale, found = _scale(want), []
        for i, (w, g) in enumerate(zip(want, got)):
            if isinstance(w, (dict, list)):
                found += mismatches(w, g, f"{where}[{i}]", rtol, arrays)
            elif not _close(w, g, scale, rtol):
                found.append(f"{where}[{i}]: stored {w!r}, got {g!r}")
        return found
    return [] if _close(want, got, 0.0, rtol) else [f"{where or '.'}: stored {want!r}, got {got!r}"]


def cpu_class() -> str:
    """A name for this CPU's rounding class: a hash of a LAPACK eigendecomposition through JAX and a NumPy product
    of fixed matrices. OpenBLAS picks its kernels by CPU, so a chaotic training's pins (CMA-ES's covariance
    eigendecomposition, distillation, the drosophila's flight) can hold on one CPU class only; the pins a class needs
    of its own live in ``tests/golden/cpu/<class>/`` (``ANIMAT_REGEN_GOLDEN=cpu`` writes them), and
    :meth:`Golden.equal` falls back to them where the main pins differ."""
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 40)).astype(np.float32)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    _, vectors = jnp.linalg.eigh(jnp.asarray(a @ a.T))
    return hashlib.sha256(np.asarray(vectors).tobytes() + (x @ x.T).tobytes()).hexdigest()[:12]


@pytest.fixture
def golden():
    """``golden(FILE)``: a :class:`Golden` over tests/golden/FILE.json."""
    return Golden
