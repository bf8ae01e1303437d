"""Behaviour kept (issue 19, acceptance 1): short command-line runs with fixed seeds give the outputs
that the code of commit e9c1b06 wrote; they are stored in ``tests/golden/*.json``, the arrays' values in
the ``.npz`` file beside each. Integers, strings and integer arrays compare exactly; floats (CSV cells,
JSON floats by repr, every element of a float array) within the tolerance of their system (``RTOL`` of
tests/conftest.py: the skier exact, the fly 5e-5, the surrogate and PPO 1e-4, set from the drift measured
between CPUs, whose figures its docstring gives), or ``ROLLOUT_RTOL`` = 1e-3 where a test says its figures
come from long rollouts (evaluations) or a GA's population (a generation's mean). On the machine that
stored them they repeat bit for bit, and a resumed surrogate run is compared with its uninterrupted run
exactly. The newer verbs are pinned in tests/test_golden_verbs.py.

Pinned, as the strings written (CSV cells) or the floats (JSON, by repr):

- ``fly train`` (mean-height and lateral, 10 generations of 8 flies × 0.2 s): every ``metrics.csv``
  column but ``seconds`` (generation, best, mean, median, crashes), the summary, the best genome's genes;
  a run of 5 generations resumed to 10 writes the uninterrupted run's columns and genes.
- ``skier train`` (one-axis and two-axis hips, 5 generations of 10 skiers × 2 s): every ``metrics.csv``
  column but ``seconds``, the summary, ``best_gene.json``; a run of 2 generations resumed to 5 likewise.
- ``surrogate generate sheet`` (7 × 7, 4 episodes × 60 frames): each episode's arrays X, Y, dropped;
  ``surrogate train`` (6 epochs) every ``metrics.csv`` column but ``seconds``, the summary, the saved best
  model's parameters; 3 epochs resumed to 6 equal the uninterrupted run; ``surrogate evaluate`` (no video,
  short stability and rest checks): its per-frame ``metrics.csv`` and its summary.
- ``imitate train`` (PPO, 2048 steps, 2 environments in one process, 16-16 networks): every ``metrics.csv``
  column but ``fps`` and ``seconds`` (rewards, episode counts and lengths, losses, std), the summary,
  the policy arrays (within ``ROLLOUT_RTOL``: Adam's fixed-size steps carry a CPU's rounding into the
  near-zero biases); a run of 1024 steps resumed to 2048: its own columns (a resumed PPO run restarts
  its environments, so it is not the uninterrupted run; its first two rows are).

Not pinned, because they are not reproducible (``Golden.WALL_COLUMNS`` and ``Golden.WALL_ENTRIES`` in
tests/conftest.py, left out of every comparison): wall times (the ``seconds``, ``fps`` and ``microseconds``
columns, a dataset episode's ``seconds_per_frame``, ``train_seconds*``, ``*seconds_per_generation``,
``steps_per_second``, ``eval_seconds_each``, the runtimes, speed-ups and per-frame microseconds of
evaluate and play), paths (``source``, ``data``, ``model``), what the machine offers (``renderer``,
``replay_renderer``, ``jax_backend``, ``logs``, which names TensorBoard when it is installed); and the
surrogate train summary's ``seconds``. Everything else was checked to repeat bit for bit, in one process
and across processes. The figures are JAX's CPU backend's. ``imitate train --vec-env subproc`` is not
used: its episode returns differ from the one-process run's in the 8th significant digit (its policy
weights do not), while ``dummy`` runs repeat exactly, with the config's one torch thread
(``torch_threads = 1``, the default) and also with two. The skier's rollout threads do not change its
results (``--threads 1`` and ``2`` write the same metrics).

Regenerate (only when a change of behaviour is intended, and say so in the commit):
``ANIMAT_REGEN_GOLDEN=1 python -m pytest -q tests/test_golden.py tests/test_old_runs.py`` (whole files:
a resumed run is compared, in that mode too, with what its uninterrupted run stored just before); then
review ``git diff tests/golden``.
"""

from __future__ import annotations

import pytest

FLY = ["--population", "8", "--seconds", "0.2", "--replay-seconds", "0.1"]
FLY_FITNESS = {"mean-height": 1, "lateral": 2}  # fitness -> seed

SKIER = ["--population", "10", "--seconds", "2", "--seed", "1", "--threads", "1", "--config", "skier.toml"]
SKIER_HIPS = ["one-axis", "two-axis"]
# the slides' GA, as pinned (the default breeds symmetric states since issue 24, and V-skates since issue 49: the
# options whose default changed then are set to their values when pinned; --hip gives the hip)
SKIER_TOML = (
    "anim_seconds = 0.1\nsymmetric = false\ntau = 0.5\n"
    'init_noise = "symmetric"\ninit_spread_deg = 0.0\ninit_toe_deg = 0.0\n'
    "skate_weight = 0.0\nskate_min_yaw_deg = 10.0\nskate_max_yaw_deg = 180.0\ncreep_rate = 0.0\n"
)

SURROGATE_TOML = """\
[scene]
size = 7

[train]
components = 8
epochs = 6
batches_per_epoch = 6
layers = 4
window = 12
lr = 1e-3
test_episodes = 1
checkpoint_every = 3
"""
SURROGATE_EVAL = [
    "--horizon",
    "30",
    "--stability-frames",
    "300",
    "--settle-frames",
    "60",
    "--rest-seconds",
    "0.5",
    "--no-video",
    "--reference-frames",
    "0",
]

IMITATE_TOML = """\
net_arch = [16, 16]
n_steps = 256
batch_size = 128
n_epochs = 2
eval_episodes = 2
max_seconds = 2.0
checkpoint_every = 1024
"""
IMITATE = ["--envs", "2", "--vec-env", "dummy", "--seed", "3", "--config", "imitate.toml"]


def run(animat_cli, *args: str) -> None:
    code, _, err = animat_cli(*args)
    assert code == 0, err


@pytest.mark.parametrize("fitness", FLY_FITNESS)
def test_fly_train(fitness, animat_cli, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = golden("fly")
    run(
        animat_cli,
        "fly",
        "train",
        "-g",
        "10",
        *FLY,
        "-f",
        fitness,
        "--seed",
        str(FLY_FITNESS[fitness]),
        "--out",
        "full",
    )
    g.check(f"{fitness}/metrics", g.columns(tmp_path / "full" / "metrics.csv"))
    g.check(f"{fitness}/summary", g.summary(tmp_path / "full" / "summary.json"))
    g.check(f"{fitness}/best_genes", g.npz(tmp_path / "full" / "best_genome.npz")["genes"])


@pytest.mark.parametrize("fitness", FLY_FITNESS)
def test_fly_resumed_run_equals_the_uninterrupted_one(fitness, animat_cli, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = golden("fly")
    run(
        animat_cli, "fly", "train", "-g", "5", *FLY, "-f", fitness, "--seed", str(FLY_FITNESS[fitness]), "--out", "part"
    )
    run(animat_cli, "fly", "train", "--resume", "part", "-g", "10")
    g.equal(f"{fitness}/metrics", g.columns(tmp_path / "part" / "metrics.csv"))
    g.equal(f"{fitness}/best_genes", g.npz(tmp_path / "part" / "best_genome.npz")["genes"])


def _skier_check(check, g, hip, run_dir):
    check(f"{hip}/metrics", g.columns(run_dir / "metrics.csv"), rtol=g.ROLLOUT_RTOL)  # a GA's population figures
    check(f"{hip}/best_gene", g.summary(run_dir / "best_gene.json"))


@pytest.mark.parametrize("hip", SKIER_HIPS)
def test_skier_train(hip, animat_cli, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skier.toml").write_text(SKIER_TOML)
    g = golden("skier")
    run(animat_cli, "skier", "train", "-g", "5", *SKIER, "--hip", hip, "--out", "full")
    _skier_check(g.check, g, hip, tmp_path / "full")
    g.check(f"{hip}/summary", g.summary(tmp_path / "full" / "summary.json"), rtol=g.ROLLOUT_RTOL)


@pytest.mark.parametrize("hip", SKIER_HIPS)
def test_skier_resumed_run_equals_the_uninterrupted_one(hip, animat_cli, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skier.toml").write_text(SKIER_TOML)
    run(animat_cli, "skier", "train", "-g", "2", *SKIER, "--hip", hip, "--out", "part")
    run(animat_cli, "skier", "train", "--resume", "part", "-g", "5")
    g = golden("skier")
    _skier_check(g.equal, g, hip, tmp_path / "part")


def test_surrogate_generate_train_resume_evaluate(animat_cli, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    g = golden("surrogate")
    (tmp_path / "sheet7.toml").write_text(SURROGATE_TOML)
    run(
        animat_cli,
        "surrogate",
        "generate",
        "sheet",
        "-e",
        "4",
        "-f",
        "60",
        "--seed",
        "0",
        "--config",
        "sheet7.toml",
        "--out",
        "data",
    )
    episodes = sorted((tmp_path / "data").glob("episode_*.npz"))
    g.check("data/episodes", {p.name: g.npz(p) for p in episodes})
    g.check("data/metrics", g.columns(tmp_path / "data" / "metrics.csv"))

    run(animat_cli, "surrogate", "train", "sheet", "--data", "data", "--config", "sheet7.toml", "--out", "full")
    metrics, model = (
        g.columns(tmp_path / "full" / "metrics.csv"),
        g.npz(tmp_path / "full" / "checkpoints" / "model.npz"),
    )
    g.check("train/metrics", metrics)
    g.check("train/summary", g.summary(tmp_path / "full" / "summary.json", drop=("seconds",)))
    g.check("train/best_model", model)

    run(
        animat_cli,
        "surrogate",
        "train",
        "sheet",
        "--data",
        "data",
        "--config",
        "sheet7.toml",
        "--epochs",
        "3",
        "--out",
        "part",
    )
    run(animat_cli, "surrogate", "train", "sheet", "--resume", "part", "--epochs", "6")
    assert g.columns(tmp_path / "part" / "metrics.csv") == metrics  # bit for bit, on any machine
    assert g.same(g.npz(tmp_path / "part" / "checkpoints" / "model.npz"), model)

    run(animat_cli, "surrogate", "evaluate", "sheet", "--model", "full", *SURROGATE_EVAL, "--out", "eval")
    g.check("evaluate/metrics", g.columns(tmp_path / "eval" / "metrics.csv"), rtol=g.ROLLOUT_RTOL)
    g.check("evaluate/summary", g.summary(tmp_path / "eval" / "summary.json"), rtol=g.ROLLOUT_RTOL)


def _imitate_run(animat_cli, tmp_path, monkeypatch, timesteps, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imitate.toml").write_text(IMITATE_TOML)
    run(animat_cli, "imitate", "train", "--timesteps", str(timesteps), *IMITATE, "--out", out)
    return tmp_path / out


def test_imitate_train(animat_cli, golden, tmp_path, monkeypatch):
    pytest.importorskip("stable_baselines3")
    g = golden("imitate")
    full = _imitate_run(animat_cli, tmp_path, monkeypatch, 2048, "full")
    g.check("train/metrics", g.columns(full / "metrics.csv"))
    g.check("train/summary", g.summary(full / "summary.json"), rtol=g.ROLLOUT_RTOL)  # evaluation returns
    # Adam moves each weight by steps of about the learning rate, whatever its gradient's size, so the rounding
    # of one CPU moves the near-zero biases by a part in 10^4 of their array's scale (measured: 2.6e-4 on an
    # "Intel Xeon Processor"): the policy compares at the rollouts' tolerance
    g.check("train/policy", g.npz(full / "policy.npz"), rtol=g.ROLLOUT_RTOL)


def test_imitate_resumed_run(animat_cli, golden, tmp_path, monkeypatch):
    pytest.importorskip("stable_baselines3")
    g = golden("imitate")
    part = _imitate_run(animat_cli, tmp_path, monkeypatch, 1024, "part")
    run(animat_cli, "imitate", "train", "--resume", "part", "--timesteps", "2048")
    columns = g.columns(part / "metrics.csv")
    g.check("resumed/metrics", columns)
    g.check("resumed/summary", g.summary(part / "summary.json"), rtol=g.ROLLOUT_RTOL)
    g.equal("train/metrics", columns, rows=2)  # the first session's rows
