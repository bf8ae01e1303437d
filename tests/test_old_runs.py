"""Old run directories still replay and resume (issue 19, acceptance 5).

``tests/fixtures/old_runs/`` holds small run directories written by commit e9c1b06 (how they were made
and what was pruned: its README.md). Each test copies them into ``tmp_path`` (the fixture is never
written) and runs today's commands on the copy from there (the surrogate run names its dataset by the
relative path ``surrogate-data``):

- ``fly replay`` of the run and of its genome file, ``fly train --resume`` from 3 to 5 generations;
- ``skier replay`` of the run and of its gene file, ``skier train --resume`` from 3 to 5 generations;
- ``surrogate evaluate`` and ``surrogate play`` of the run, ``surrogate train --resume`` from 4 to 6
  epochs, ``surrogate generate`` resumed from 4 to 5 episodes;
- ``imitate play`` (matplotlib, the cheapest renderer), ``imitate train --resume`` from 512 to 1024 steps.

The outputs are compared with ``tests/golden/old_runs.json``, as in tests/test_golden.py (same
exclusions of wall times, absolute paths and the renderer found; the same ANIMAT_REGEN_GOLDEN=1).
A resumed fly, skier or surrogate run must equal the uninterrupted run of the same options, which
regeneration runs and stores (a resumed PPO run restarts its environments: its own rows are stored,
and its first rows must be the old run's).

Those goldens hold what newer code printed when they were stored. Checked against the figures each old
run recorded itself (its ``summary.json`` and ``metrics.csv``, written by commit e9c1b06), within the
system's tolerance (``RTOL`` in tests/conftest.py; they repeat bit for bit on the machine that wrote them
and on an AMD EPYC):

- the fly run: a replay of its best genome for the training episode's 0.2 s (the 0.5 s replay above flies
  another length, so it cannot match) has the mean height that the run recorded as its best fitness
  (``summary.json``, the last ``best`` of ``metrics.csv``) and every ``replay_*`` figure of its summary
  (its own replay was 0.2 s too);
- the skier run: the 1 s replay (its training episode) has its best fitness, net forward distance and
  every ``replay_*`` figure;
- the surrogate run: its saved best model's and last state's rollout losses on the held-out and the
  fixed training windows, recomputed by today's training code (``setup`` of a resume, ``eval_loss``),
  are the recorded ``best_test_loss_m``, ``final_test_loss_m`` and ``final_train_rollout_loss_m``
  (``surrogate evaluate`` measures other figures, which the run never recorded);
- the PPO run: today's evaluation of its final policy and of its first one (``checkpoints/policy_0``), with
  the run's own evaluation episodes and seeds (``animat.imitate.train.evaluate``; ``imitate play`` starts
  at the clip's time 0 instead and ``imitate evaluate`` on other starts), gives the recorded
  ``final_eval_*`` and ``initial_eval_*`` figures;
- every resumed run keeps the old run's own rows of ``metrics.csv`` as written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

OLD_RUNS = Path(__file__).parent / "fixtures" / "old_runs"
REPLAYS = {  # system -> (run directory and its best genome or gene file, replay options)
    "fly": (["fly-train", "fly-train/best_genome.npz"], ["--seconds", "0.5", "--anim-seconds", "0.1"]),
    "skier": (["skier-train", "skier-train/best_gene.json"], ["--seconds", "1", "--anim-seconds", "0.1"]),
}
RESUMES = {  # system -> (run directory, the options it was made with (with -g 3), its config file's text)
    "fly": ("fly-train", ["-p", "8", "-s", "0.2", "--replay-seconds", "0.2", "-f", "mean-height", "--seed", "4"], ""),
    # the old skier run's options: the slides' GA (the default since issue 24 is symmetric) on the one-axis hip without
    # the skate term (the default since issue 49 is the V-skate): what its config.json lacks (TrainConfig.OLD_DEFAULTS)
    "skier": (
        "skier-train",
        ["-p", "8", "-s", "1", "--seed", "4", "--threads", "1"],
        'symmetric = false\nhip = "one-axis"\ntau = 0.5\ninit_noise = "symmetric"\ninit_spread_deg = 0.0\n'
        "init_toe_deg = 0.0\nskate_weight = 0.0\nskate_min_yaw_deg = 10.0\nskate_max_yaw_deg = 180.0\n"
        "creep_rate = 0.0\n",
    ),
}
DATA = ["-f", "60", "--size", "7", "--seed", "0"]  # surrogate-data's (with -e 4)
SURROGATE = [
    "--components",
    "8",
    "--batches-per-epoch",
    "4",
    "--window",
    "12",
    "--lr",
    "1e-3",
    "--test-episodes",
    "1",
    "--seed",
    "2",
]
SURROGATE_TOML = "[train]\nlayers = 4\ncheckpoint_every = 2\n"  # surrogate-train's, with SURROGATE and --epochs 4


@pytest.fixture
def old(tmp_path, monkeypatch) -> Path:
    """A copy of the old runs in ``tmp_path``, the working directory."""
    shutil.copytree(OLD_RUNS, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(animat_cli, *args: str) -> None:
    code, _, err = animat_cli(*args)
    assert code == 0, err


def test_the_fixture_names_no_path_of_a_machine():
    for path in OLD_RUNS.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".csv", ".md"):
            text = path.read_text()
            assert "/work/" not in text and "/tmp/" not in text and "/home/" not in text, path


@pytest.mark.parametrize("system", REPLAYS)
def test_fly_and_skier_runs_replay(system, old, animat_cli, golden):
    g = golden("old_runs")
    sources, options = REPLAYS[system]
    for i, source in enumerate(sources):
        run(animat_cli, system, "replay", source, *options, "--out", f"replay-{i}")
        check = g.equal if i else g.check  # the genome or gene file replays as its run does
        check(f"{system}/replay/summary", g.summary(old / f"replay-{i}" / "summary.json"))
        check(f"{system}/replay/trajectory", g.npz(old / f"replay-{i}" / "trajectory.npz"))


# system -> (replay options: the training episode's length, what the replay calls the run's best fitness)
OWN_REPLAYS = {
    "fly": (["--seconds", "0.2", "--anim-seconds", "0.1"], "mean_height"),
    "skier": (["--seconds", "1", "--anim-seconds", "0.1"], "fitness"),
}


@pytest.mark.parametrize("system", OWN_REPLAYS)
def test_fly_and_skier_runs_replay_to_their_own_records(system, old, animat_cli, golden):
    g = golden("old_runs")
    options, fitness = OWN_REPLAYS[system]
    run_dir = RESUMES[system][0]
    summary = g.summary(old / run_dir / "summary.json")
    best = g.columns(old / run_dir / "metrics.csv")["best"][-1]
    assert float(best) == float(summary["best_fitness"])  # the record agrees with itself
    recorded = {
        k.removeprefix("replay_"): v for k, v in summary.items() if k.startswith("replay_") and k not in g.WALL_ENTRIES
    }
    recorded[fitness] = summary["best_fitness"]
    if system == "skier":
        recorded["net_forward_m"] = summary["best_net_forward_m"]
    assert len(recorded) >= 6, recorded
    run(animat_cli, system, "replay", run_dir, *options, "--out", "own")
    g.assert_agrees(recorded, g.summary(old / "own" / "summary.json"), system, f"the {system} run's replay")


@pytest.mark.parametrize("system", RESUMES)
def test_fly_and_skier_runs_resume(system, old, animat_cli, golden):
    g = golden("old_runs")
    run_dir, options, config = RESUMES[system]
    if g.REGEN:
        (old / "uninterrupted.toml").write_text(config)
        run(
            animat_cli, system, "train", "-g", "5", *options, "--config", "uninterrupted.toml", "--out", "uninterrupted"
        )
        g.check(f"{system}/resumed/metrics", g.columns(old / "uninterrupted" / "metrics.csv"))
    recorded = g.columns(old / run_dir / "metrics.csv")
    run(animat_cli, system, "train", "--resume", run_dir, "-g", "5")
    resumed = g.columns(old / run_dir / "metrics.csv")
    assert {k: v[:3] for k, v in resumed.items()} == recorded  # the old run's own rows, as written
    g.equal(f"{system}/resumed/metrics", resumed)


def test_surrogate_run_evaluates_and_plays(old, animat_cli, golden):
    g = golden("old_runs")
    run(
        animat_cli,
        "surrogate",
        "evaluate",
        "sheet",
        "--model",
        "surrogate-train",
        "--horizon",
        "20",
        "--stride",
        "20",
        "--stability-frames",
        "200",
        "--settle-frames",
        "40",
        "--rest-seconds",
        "0.5",
        "--no-video",
        "--reference-frames",
        "0",
        "--out",
        "eval",
    )
    g.check("surrogate/evaluate/metrics", g.columns(old / "eval" / "metrics.csv"), rtol=g.ROLLOUT_RTOL)
    g.check("surrogate/evaluate/summary", g.summary(old / "eval" / "summary.json"), rtol=g.ROLLOUT_RTOL)
    run(
        animat_cli,
        "surrogate",
        "play",
        "sheet",
        "--model",
        "surrogate-train",
        "--frames",
        "60",
        "--seed",
        "1",
        "--no-video",
        "--out",
        "play",
    )
    g.check("surrogate/play/metrics", g.columns(old / "play" / "metrics.csv"), rtol=g.ROLLOUT_RTOL)
    g.check("surrogate/play/summary", g.summary(old / "play" / "summary.json"), rtol=g.ROLLOUT_RTOL)


def test_surrogate_run_and_dataset_resume(old, animat_cli, golden):
    g = golden("old_runs")
    if g.REGEN:
        (old / "surrogate.toml").write_text(SURROGATE_TOML)
        run(
            animat_cli,
            "surrogate",
            "train",
            "sheet",
            "--data",
            "surrogate-data",
            "--config",
            "surrogate.toml",
            *SURROGATE,
            "--epochs",
            "6",
            "--out",
            "uninterrupted",
        )
        g.check("surrogate/resumed/metrics", g.columns(old / "uninterrupted" / "metrics.csv"))
        run(animat_cli, "surrogate", "generate", "sheet", "-e", "5", *DATA, "--out", "uninterrupted-data")
        g.check("surrogate/data/episode_00004", g.npz(old / "uninterrupted-data" / "episode_00004.npz"))
    recorded = g.columns(old / "surrogate-train" / "metrics.csv")
    run(animat_cli, "surrogate", "train", "sheet", "--resume", "surrogate-train", "--epochs", "6")
    resumed = g.columns(old / "surrogate-train" / "metrics.csv")
    assert {k: v[:4] for k, v in resumed.items()} == recorded  # the old run's own rows, as written
    g.equal("surrogate/resumed/metrics", resumed)
    before = {p.name: p.read_bytes() for p in (old / "surrogate-data").glob("episode_*.npz")}
    run(animat_cli, "surrogate", "generate", "sheet", "-e", "5", *DATA, "--out", "surrogate-data")
    assert {name: (old / "surrogate-data" / name).read_bytes() for name in before} == before  # kept as they were
    g.equal("surrogate/data/episode_00004", g.npz(old / "surrogate-data" / "episode_00004.npz"))


def test_imitate_run_plays(old, animat_cli, golden):
    pytest.importorskip("stable_baselines3")
    g = golden("old_runs")
    run(animat_cli, "imitate", "play", "imitate-train", "--seconds", "0.4", "--renderer", "matplotlib", "--out", "play")
    g.check("imitate/play/summary", g.summary(old / "play" / "summary.json"))
    g.check("imitate/play/trajectory", g.npz(old / "play" / "trajectory.npz"))


def test_imitate_run_resumes(old, animat_cli, golden):
    pytest.importorskip("stable_baselines3")
    g = golden("old_runs")
    first = g.columns(old / "imitate-train" / "metrics.csv")
    run(animat_cli, "imitate", "train", "--resume", "imitate-train", "--timesteps", "1024")
    resumed = g.columns(old / "imitate-train" / "metrics.csv")
    assert {k: v[: len(first["iteration"])] for k, v in resumed.items()} == first  # the old rows, kept
    g.check("imitate/resumed/metrics", resumed)
    g.check("imitate/resumed/summary", g.summary(old / "imitate-train" / "summary.json"), rtol=g.ROLLOUT_RTOL)


def test_surrogate_run_reproduces_its_recorded_losses(old, golden):
    from animat import runs
    from animat.surrogate.model import Surrogate
    from animat.surrogate.options import TrainConfig
    from animat.surrogate.train import setup

    g = golden("old_runs")
    run_dir = old / "surrogate-train"
    recorded = {
        k: v
        for k, v in g.summary(run_dir / "summary.json").items()
        if k in ("best_test_loss_m", "final_test_loss_m", "final_train_rollout_loss_m")
    }
    assert recorded["final_test_loss_m"] == repr(float(g.columns(run_dir / "metrics.csv")["test_loss_m"][-1]))
    cfg = TrainConfig.build(None, **{**runs.read_run_config(run_dir, "the old surrogate run"), "epochs": 6})
    trainer, learner, _ = setup(cfg, run_dir, resume=True)  # reads the run: its data, best model and last state
    held, train = trainer.windows.held, trainer.windows.fixed_train
    got = {
        "best_test_loss_m": trainer.eval_loss(Surrogate.load(trainer.ckpt_dir).params, held),
        "final_test_loss_m": trainer.eval_loss(learner.params, held),
        "final_train_rollout_loss_m": trainer.eval_loss(learner.params, train),
    }
    g.assert_agrees(recorded, {k: repr(float(v)) for k, v in got.items()}, "surrogate", "the surrogate run's losses")


def test_imitate_run_reproduces_its_recorded_evaluations(old, golden):
    pytest.importorskip("stable_baselines3")
    from animat.imitate.evaluate import load_policy_run
    from animat.imitate.policy import load_policy
    from animat.imitate.train import evaluate

    g = golden("old_runs")
    cfg, policy, run_dir = load_policy_run(old / "imitate-train")
    recorded = {
        k: v for k, v in g.summary(run_dir / "summary.json").items() if k.startswith(("initial_eval_", "final_eval_"))
    }
    assert len(recorded) == 8, recorded  # episodes, return, length and r_I per step, before and after
    got = {}
    for when, pol in (("initial", load_policy(run_dir / "checkpoints" / "policy_0")), ("final", policy)):
        figures = evaluate(pol.act, cfg, cfg.eval_episodes, cfg.seed + 10_000)  # the run's own evaluation episodes
        got.update({f"{when}_eval_{k}": repr(v) if isinstance(v, float) else v for k, v in figures.items()})
    g.assert_agrees(recorded, got, "imitate", "the PPO run's evaluations")
