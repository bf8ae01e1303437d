"""SIGINT and SIGTERM sent to real ``animat ... train`` processes (issue 52, :mod:`animat.interrupt`).

Each interrupted command must end with exit 130 and one line (``interrupted``, or ``interrupted: resume with
animat SYSTEM train --resume RUN_DIR``), never a crash (a segmentation fault while XLA compiled, a traceback, a
signal dropped by JAX's gc callback), and leave either no run directory (stopped before it was made: the same
command runs again) or one that ``--resume`` continues, or starts again where it stopped before its first
checkpoint, to the same metrics, best fitness and best genome as an uninterrupted run of the same seed.

The signal goes at a fixed time after the start, or as soon as a file of the run appears; a process that had
ended by then fails the test (the sizes are too small for this machine), since a signal after the end proves
nothing. Continuations and uninterrupted runs share a persistent JAX compilation cache (fast); the interrupted
fly runs compile without it, so that their signals can land in XLA's compilation.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import animat

SRC = str(Path(animat.__file__).resolve().parents[1])
FLY = ["fly", "train", "-p", "8", "-g", "6", "-s", "1", "--replay-seconds", "0.5"]  # ~7 s of compilation, then fast
SKIER = ["skier", "train", "-p", "8", "-g", "12", "-s", "2", "--threads", "1"]  # ~0.15 s a generation
IMITATE_TOML = """timesteps = 1024
envs = 2
vec_env = "dummy"
seed = 5
net_arch = [8]
n_steps = 64
batch_size = 64
n_epochs = 2
eval_episodes = 1
checkpoint_every = 256
"""
CRASHES = ("Traceback", "Fatal Python error", "Exception ignored", "Segmentation fault")


@pytest.fixture(scope="module")
def jax_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("jax-cache")


def _env(jax_cache: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [os.environ.get("PYTHONPATH")])])
    # no jax_cache: no compilation cache at all (not the session's, which other tests may have filled with this
    # very program, so that a run meant to be interrupted while XLA compiles would not compile)
    return {**env, "JAX_COMPILATION_CACHE_DIR": str(jax_cache)} if jax_cache else {**env, "ANIMAT_JAX_CACHE": "off"}


def _animat(args: list[str], jax_cache: Path | None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "animat.cli", *args], env=_env(jax_cache), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _interrupt(args: list[str], *, sig=signal.SIGINT, after: float = 0.0, once: Path | None = None) -> str:
    """Run ``animat ARGS`` (no compilation cache), send ``sig`` ``after`` seconds after its start, or after ``once``
    appeared; returns its stderr once it has ended with exit 130 and no crash."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "animat.cli", *args], env=_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    while once is not None and proc.poll() is None and not once.exists():
        time.sleep(0.02)
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() - start < after:
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.fail(f"animat {' '.join(args[:2])} ended (exit {proc.returncode}) before the signal: sizes too small")
    proc.send_signal(sig)
    out, err = (b.decode() for b in proc.communicate(timeout=600))
    assert proc.returncode == 130, out[-2000:] + err[-3000:]
    assert not [c for c in CRASHES if c in err], err[-3000:]
    return err


def _go_on(args: list[str], run: Path, err: str, jax_cache: Path | None) -> None:
    """Continue the interrupted ``animat ARGS --out RUN``: by the command its last line names (``--resume RUN``),
    or, where it stopped before making the run directory (``interrupted``), by the same command again."""
    last = err.strip().splitlines()[-1]
    if run.exists():
        assert last == f"interrupted: resume with animat {args[0]} train --resume {run}", err[-2000:]
        assert (run / "config.json").is_file() and not (run / "summary.json").exists()
        _animat([args[0], "train", "--resume", str(run)], jax_cache)
    else:
        assert last == "interrupted", err[-2000:]
        _animat([*args, "--out", str(run)], jax_cache)


def _metrics(run: Path) -> list[dict]:
    """metrics.csv's rows without their wall-clock columns."""
    with open(run / "metrics.csv", newline="") as fh:
        return [{k: v for k, v in row.items() if k not in ("seconds", "fps")} for row in csv.DictReader(fh)]


def _assert_same_run(run: Path, baseline: Path, genome: str) -> None:
    """The same metrics rows (but for their wall-clock seconds), best fitness and best genome."""
    assert _metrics(run) == _metrics(baseline)
    summary, expected = (json.loads((r / "summary.json").read_text()) for r in (run, baseline))
    assert summary["best_fitness"] == expected["best_fitness"] and summary["generations"] == expected["generations"]
    a, b = ((r / genome).read_bytes() for r in (run, baseline))
    assert a == b


@pytest.fixture(scope="module")
def fly_baseline(tmp_path_factory, jax_cache) -> Path:
    run = tmp_path_factory.mktemp("fly") / "baseline"
    _animat([*FLY, "--out", str(run)], jax_cache)
    return run


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "seconds", [pytest.param(1, marks=SLOW), 3, pytest.param(6, marks=SLOW), pytest.param(10, marks=SLOW)]
)
def test_fly_train_interrupted_at_any_moment_resumes_to_the_uninterrupted_run(
    seconds, fly_baseline, jax_cache, tmp_path
):
    """Ctrl-C at 1, 3, 6, 10 s: while Python imports, before or after the run directory is made, while XLA
    compiles the first generation's rollout (the segmentation fault) or later."""
    run = tmp_path / "run"
    err = _interrupt([*FLY, "--out", str(run)], after=seconds)
    _go_on(FLY, run, err, jax_cache)
    _assert_same_run(run, fly_baseline, "best_genome.npz")


def test_fly_train_terminated_while_it_compiles_restarts_to_the_uninterrupted_run(fly_baseline, jax_cache, tmp_path):
    """SIGTERM 0.25 s after config.json is written, while XLA compiles the first generation's rollout (where the
    interpreter's teardown crashed): exit 130 and a directory that holds only config.json, which ``--resume``
    starts again from generation 0. (A quiet fast machine finished the first generation within 3 s, and once
    within 1 s, of config.json.)"""
    run = tmp_path / "run"
    err = _interrupt([*FLY, "--out", str(run)], sig=signal.SIGTERM, once=run / "config.json", after=0.25)
    assert not (run / "checkpoints" / "latest.json").exists(), "signalled after the first generation: too fast here"
    _go_on(FLY, run, err, jax_cache)
    _assert_same_run(run, fly_baseline, "best_genome.npz")


@pytest.mark.slow
def test_skier_train_interrupted_mid_run_resumes_to_the_uninterrupted_run(tmp_path):
    """Ctrl-C once generation 2's checkpoint is written: ``--resume`` continues from the latest checkpoint."""
    baseline, run = tmp_path / "baseline", tmp_path / "run"
    _animat([*SKIER, "--out", str(baseline)], None)
    err = _interrupt([*SKIER, "--out", str(run)], once=run / "checkpoints" / "gen-000002.json")
    _go_on(SKIER, run, err, None)
    _assert_same_run(run, baseline, "best_gene.json")


@pytest.mark.slow
def test_imitate_train_interrupted_mid_learning_resumes_to_its_timesteps(tmp_path):
    """Ctrl-C once the second training state is saved (mid-learning): exit 130, the state at the interruption
    saved, and ``--resume`` trains on to the run's timesteps, keeping the metrics rows before it. (Not to the
    uninterrupted run's numbers: a resumed PPO session starts new episodes, :mod:`animat.imitate.train`.)"""
    (tmp_path / "small.toml").write_text(IMITATE_TOML)
    args = ["imitate", "train", "--config", str(tmp_path / "small.toml")]
    run = tmp_path / "run"
    err = _interrupt([*args, "--out", str(run)], once=run / "checkpoints" / "train_state-000001.json")
    assert (
        err.strip().splitlines()[-1] == f"interrupted: resume with animat imitate train --resume {run} --timesteps 1024"
    )
    before = _metrics(run)
    saved = json.loads((run / "checkpoints" / "latest.json").read_text())["num_timesteps"]
    assert 0 < saved < 1024 and before and int(before[-1]["timesteps"]) <= saved
    _animat(["imitate", "train", "--resume", str(run)], None)
    after = _metrics(run)
    assert after[: len(before)] == before and len(after) > len(before)
    assert json.loads((run / "summary.json").read_text())["timesteps"] >= 1024


@pytest.mark.slow
def test_imitate_train_interrupted_before_its_first_state_restarts_to_the_uninterrupted_run(tmp_path):
    """Ctrl-C while the untrained policy is evaluated (its ``policy_0`` written, no training state yet): ``--resume``
    starts the run again, and it ends as an uninterrupted one: the same metrics rows, summary (but for its
    timings) and policy, byte for byte."""
    (tmp_path / "small.toml").write_text(IMITATE_TOML.replace("timesteps = 1024", "timesteps = 512"))
    args = ["imitate", "train", "--config", str(tmp_path / "small.toml")]
    baseline, run = tmp_path / "baseline", tmp_path / "run"
    _animat([*args, "--out", str(baseline)], None)
    err = _interrupt([*args, "--out", str(run)], once=run / "checkpoints" / "policy_0.json")
    assert err.strip().splitlines()[-1].endswith(f"imitate train --resume {run} --timesteps 512")
    assert not (run / "checkpoints" / "latest.json").exists(), "signalled after the first training state: too fast here"
    _animat(["imitate", "train", "--resume", str(run)], None)
    assert _metrics(run) == _metrics(baseline)
    timings = ("train_seconds", "steps_per_second", "eval_seconds_each")
    summary, expected = (
        json.dumps({k: v for k, v in json.loads((r / "summary.json").read_text()).items() if k not in timings})
        for r in (run, baseline)
    )
    assert summary == expected
    assert (run / "policy.npz").read_bytes() == (baseline / "policy.npz").read_bytes()
