"""Config values take effect: for every verb that takes ``--config``, a value set only in the file (one per
TOML table the verb reads) reaches the run's ``config.json`` and what the run does, and the command line
overrides the file (defaults < config file < command line). ``fly steer`` and ``fly train-steering`` are
tested with the steering set (tests/fly). Each run is as small as its verb allows.

A value that a typer default or an unset flag (None, [] or {}) silently replaces is exactly what these tests
catch: ``surrogate generate --config configs/surrogate_sheet_small.toml`` once ran 20 x 300 frames on 1 worker
instead of the file's 6 x 180 on 2.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def run(animat_cli, *args: str) -> str:
    code, out, err = animat_cli(*args)
    assert code == 0, err
    return out


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def spy_workers(monkeypatch):
    """The ``workers`` each :func:`animat.parallel.process_map` call of the surrogate's generate got (it still runs)."""
    import animat.surrogate.data as data

    calls, real = [], data.process_map

    def spy(fn, args, workers):
        calls.append((len(args), int(workers)))
        return real(fn, args, workers)

    monkeypatch.setattr(data, "process_map", spy)
    return calls


# --- surrogate generate ------------------------------------------------------------------------------------------


def test_surrogate_generate_runs_the_small_sheet_config_as_written(animat_cli, tmp_path, spy_workers):
    """configs/surrogate_sheet_small.toml's [generate] (6 episodes x 180 frames, seed 0, 2 workers) and [scene]
    (15 x 15 vertices) with nothing on the command line: exactly that dataset, made by one map over 2
    workers. The shipped file in full (about 12 s on a shared 2-core machine): it is the laptop/CI smoke
    configuration, and the bug this pins made it run 20 x 300 frames on 1 worker."""
    out = tmp_path / "data"
    small = str(CONFIGS / "surrogate_sheet_small.toml")
    run(animat_cli, "surrogate", "generate", "sheet", "--config", small, "--out", str(out))
    meta, config = read_json(out / "dataset.json"), read_json(out / "config.json")
    assert (meta["episodes"], meta["frames"], meta["seed"], meta["scene"]["size"]) == (6, 180, 0, 15)
    assert {k: config[k] for k in ("episodes", "frames", "seed", "workers", "backend")} == {
        "episodes": 6,
        "frames": 180,
        "seed": 0,
        "workers": 2,
        "backend": "local",
    }
    assert spy_workers == [(6, 2)]  # the 6 episodes went to one process map over 2 workers
    assert sorted(p.name for p in out.glob("episode_*.npz")) == [f"episode_{i:05d}.npz" for i in range(6)]
    assert [int(r["frames"]) for r in rows(out / "metrics.csv")] == [180] * 6
    with np.load(out / "episode_00005.npz") as z:
        assert z["X"].shape == (180, 15 * 15, 3)
    assert read_json(out / "summary.json")["frames"] == 6 * 180


def test_surrogate_generate_file_values_apply_and_the_command_line_overrides_them(animat_cli, tmp_path, spy_workers):
    """A [generate] table (episodes, frames, seed, workers) and a [scene] table (size) set only in the file
    reach dataset.json, config.json and the episodes' shapes; --frames and --size given on the command line
    win over the file's. Tiny (2 episodes x 4 frames of a 4 x 4 sheet, one process)."""
    config_file = tmp_path / "c.toml"
    config_file.write_text("[generate]\nepisodes = 2\nframes = 9\nseed = 3\nworkers = 1\n\n[scene]\nsize = 5\n")
    out = tmp_path / "data"
    run(
        animat_cli,
        "surrogate",
        "generate",
        "sheet",
        "--config",
        str(config_file),
        "--frames",
        "4",
        "--size",
        "4",
        "--out",
        str(out),
    )
    meta, config = read_json(out / "dataset.json"), read_json(out / "config.json")
    assert (meta["episodes"], meta["frames"], meta["seed"], meta["scene"]["size"]) == (2, 4, 3, 4)
    resolved = (config["episodes"], config["frames"], config["seed"], config["workers"], config["scene_options"])
    assert resolved == (2, 4, 3, 1, {"size": 4})
    assert spy_workers == [(2, 1)]
    assert sorted(p.name for p in out.glob("episode_*.npz")) == ["episode_00000.npz", "episode_00001.npz"]
    with np.load(out / "episode_00001.npz") as z:
        assert z["X"].shape == (4, 16, 3)


# --- surrogate divergence and train --------------------------------------------------------------------------------


def test_surrogate_divergence_reads_frames_and_seed_from_generate_and_the_scene_table(animat_cli, tmp_path):
    """divergence takes frames and seed from [generate] and the cloth from [scene]: 9 frames (one metrics row
    each), a 4 x 4 sheet, seed 1 from --seed over the file's 2."""
    (tmp_path / "c.toml").write_text("[generate]\nframes = 9\nseed = 2\n\n[scene]\nsize = 4\n")
    out = tmp_path / "div"
    run(
        animat_cli,
        "surrogate",
        "divergence",
        "sheet",
        "--config",
        str(tmp_path / "c.toml"),
        "--episodes",
        "1",
        "--horizon",
        "3",
        "--stride",
        "3",
        "--seed",
        "1",
        "--out",
        str(out),
    )
    config, summary = read_json(out / "config.json"), read_json(out / "summary.json")
    assert (config["frames"], config["seed"], config["scene"]["size"]) == (9, 1, 4)
    assert (summary["frames"], summary["seed"], summary["segments"]) == (9, 1, 3)  # 9 frames: 3 segments of 3
    assert [int(r["frame"]) for r in rows(out / "metrics.csv")] == list(range(9))


def test_surrogate_train_takes_its_train_table_and_the_command_line_over_it(animat_cli, tmp_path):
    """[train] components = 3 (file only) is the fitted subspace's size; --epochs 1 over the file's 2 is
    one metrics row."""
    data = tmp_path / "data"
    run(
        animat_cli,
        "surrogate",
        "generate",
        "sheet",
        "--episodes",
        "3",
        "--frames",
        "12",
        "--size",
        "4",
        "--out",
        str(data),
    )
    (tmp_path / "c.toml").write_text(
        "[train]\ncomponents = 3\nepochs = 2\nbatches_per_epoch = 2\nwindow = 4\n"
        "batch = 2\nlayers = 2\ntest_episodes = 1\n"
    )
    out = tmp_path / "train"
    run(
        animat_cli,
        "surrogate",
        "train",
        "sheet",
        "--data",
        str(data),
        "--config",
        str(tmp_path / "c.toml"),
        "--epochs",
        "1",
        "--out",
        str(out),
    )
    config = read_json(out / "config.json")
    assert (config["components"], config["epochs"], config["window"], config["layers"]) == (3, 1, 4, 2)
    assert [r["epoch"] for r in rows(out / "metrics.csv")] == ["0"]
    with np.load(out / "pca.npz") as pca:
        assert pca["components"].shape == (3, 16 * 3)


# --- fly train, replay, distill -----------------------------------------------------------------------------------

FLY_TOML = """\
generations = 3
population = 4
seconds = 0.05
replay_seconds = 0.1
anim_seconds = 0.05
fly = {body_size = [2.0, 6.0, 1.0]}

[[stages]]
generations = 2
"""


def test_fly_train_takes_the_top_level_its_fly_table_and_stages_and_the_command_line_over_them(animat_cli, tmp_path):
    """A paper-fly run from a file: population 4 (the stages' populations, restored from their checkpoints), the
    fly table's 6-unit body (the replay's body length), a second stage of 2 generations ([[stages]]); -g 1 over
    the file's 3 makes the first stage one generation. Then ``fly replay --config``: the file's 0.3 s and 0.1 s
    of animation, --seconds 0.2 over the file's seconds."""
    from animat.evolve.population import Population

    (tmp_path / "fly.toml").write_text(FLY_TOML)
    out = tmp_path / "fly"
    run(animat_cli, "fly", "train", "--config", str(tmp_path / "fly.toml"), "-g", "1", "--out", str(out))
    config, summary = read_json(out / "config.json"), read_json(out / "summary.json")
    resolved = (config["generations"], config["population"], config["seconds"], config["fly"])
    assert resolved == (1, 4, 0.05, {"body_size": [2.0, 6.0, 1.0]})
    assert config["stages"] == [{"generations": 2}]
    assert [len(rows(out / "stages" / k / "metrics.csv")) for k in ("1", "2")] == [1, 2]
    assert [s["generations"] for s in summary["stages"]] == [1, 2]
    assert [Population.resume(out / "stages" / k).size for k in ("1", "2")] == [4, 4]
    assert summary["replay_body_length"] == 6.0 and summary["replay_seconds"] == 0.1

    from PIL import Image

    (tmp_path / "replay.toml").write_text("seconds = 0.3\nanim_seconds = 0.1\n")
    replay = tmp_path / "replay"
    run(
        animat_cli,
        "fly",
        "replay",
        str(out),
        "--config",
        str(tmp_path / "replay.toml"),
        "--seconds",
        "0.2",
        "--out",
        str(replay),
    )
    assert read_json(replay / "summary.json")["seconds"] == pytest.approx(0.2)
    with np.load(replay / "trajectory.npz") as traj:
        assert traj["t"].shape == (20,)  # 0.2 s at the 100 Hz control rate
    with Image.open(replay / "media" / "flight.gif") as gif:
        assert gif.n_frames == 3  # 0.1 s of animation (the default 6 s, capped at the 0.2 s flown, draws 5)


def test_fly_train_refuses_a_paper_ga_stage_of_another_population_before_training(animat_cli, tmp_path):
    """A paper-GA stage starts from the stage before's final population, so it cannot change the population: the
    config is refused at once (one line, nothing written), not after the first stage has trained."""
    (tmp_path / "fly.toml").write_text(FLY_TOML.replace("generations = 2", "population = 6"))
    out = tmp_path / "fly"
    code, _, err = animat_cli("fly", "train", "--config", str(tmp_path / "fly.toml"), "--out", str(out))
    assert code == 2 and "stage 2" in err and "population" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_fly_train_drosophila_preset_and_table_reach_its_trainer(animat_cli, tmp_path, monkeypatch):
    """``preset = "drosophila"`` in the file picks the drosophila trainer, its ``drosophila`` table reaches the
    fly's parameters and -g 1 overrides the file's generations. The trainer is replaced by a recorder: a real
    drosophila run compiles for minutes (tests/fly/drosophila flies one)."""
    import animat.fly.drosophila.train as drosophila_train

    got = []
    monkeypatch.setattr(drosophila_train, "train", lambda cfg, run_dir, **kw: got.append(cfg) or {})
    (tmp_path / "d.toml").write_text(
        'preset = "drosophila"\ngenerations = 3\npopulation = 6\ndrosophila = {thorax_resonance_hz = 150.0}\n'
    )
    run(animat_cli, "fly", "train", "--config", str(tmp_path / "d.toml"), "-g", "1", "--out", str(tmp_path / "d"))
    [cfg] = got
    assert (cfg.preset, cfg.generations, cfg.population) == ("drosophila", 1, 6)
    assert cfg.fly_params().thorax_resonance_hz == 150.0


def test_fly_distill_takes_its_file_and_the_command_line_over_it(animat_cli, tmp_path):
    """Distilling the shipped paper set from a file: 2 episodes x 0.2 s per round (file) are 40 samples at the
    100 Hz control rate, and --hidden 5 over the file's [4] is the goal network's one hidden layer."""
    (tmp_path / "d.toml").write_text(
        "rounds = 1\nepisodes = 2\nseconds = 0.2\nsegment = [0.1, 0.2]\nepochs = 1\n"
        "batch = 8\nhidden = [4]\nreplay_seconds = 0.1\nanim_seconds = 0.05\n"
    )
    out = tmp_path / "distill"
    run(
        animat_cli,
        "fly",
        "distill",
        "pretrained:paper",
        "--config",
        str(tmp_path / "d.toml"),
        "--hidden",
        "5",
        "--out",
        str(out),
    )
    config = read_json(out / "config.json")
    distilled = config["distilled"]
    resolved = (distilled["episodes"], distilled["seconds"], distilled["hidden"], distilled["segment"])
    assert resolved == (2, 0.2, [5], [0.1, 0.2])
    assert config["layers"][1:-1] == [5]
    [row] = rows(out / "metrics.csv")
    assert int(row["samples"]) == 2 * 20


# --- skier -------------------------------------------------------------------------------------------------------


def _skier_fitness(config: dict, genes: np.ndarray) -> np.ndarray:
    """The training evaluator's fitness of ``genes`` under a run's config.json values."""
    from animat.skier.options import TrainConfig
    from animat.skier.train import make_evaluator

    cfg = TrainConfig.build(None, **config)
    with make_evaluator(cfg, cfg.skier_params()) as evaluate:
        return evaluate(genes).fitness


def test_skier_train_takes_the_top_level_and_the_skier_table_and_the_command_line_over_them(animat_cli, tmp_path):
    """A run from a file: 6 skiers of 3 elites, 0.5 s episodes and the [skier] table's 5 ms physics step; -g 1
    over the file's 3 generations is one metrics row. The best fitness the run recorded is its best gene's
    under the 5 ms step, not under the default 10 ms one: the table reached the evaluator."""
    from animat.skier.gene import load_gene_json

    (tmp_path / "s.toml").write_text(
        "generations = 3\npopulation = 6\nelites = 3\nparent_probs = [0.5, 0.3, 0.2]\n"
        "seconds = 0.5\nanim_seconds = 0.1\nnthread = 1\n\n[skier]\ntimestep = 0.005\n"
    )
    out = tmp_path / "skier"
    run(animat_cli, "skier", "train", "--config", str(tmp_path / "s.toml"), "-g", "1", "--out", str(out))
    config = read_json(out / "config.json")
    assert (config["generations"], config["population"], config["elites"], config["seconds"], config["skier"]) == (
        1,
        6,
        3,
        0.5,
        {"timestep": 0.005},
    )
    [row] = rows(out / "metrics.csv")
    gene, _ = load_gene_json(out / "best_gene.json")
    best = float(row["best"])
    assert _skier_fitness(config, gene[None])[0] == pytest.approx(best, rel=1e-12)
    assert _skier_fitness({**config, "skier": {}}, gene[None])[0] != pytest.approx(best, rel=1e-6)


# a two-axis V-skater (keyframes 0.3 s apart): five push-offs in 20 s that alternate legs, 27 degrees outwards
SKATER = json.loads((Path(__file__).parent / "fixtures" / "skier_vskater.json").read_text())["genes"]


def test_the_vskate_configs_skate_options_reach_the_evaluator_and_generation_zero(tmp_path):
    """configs/skier_vskate.toml as ``skier train`` resolves it: its skate_weight adds the V-skater's skated metres
    to its fitness (1.0 per metre: the file with 0.0 instead scores it lower by more than a metre), the two-axis
    hip gives 14 gene columns, generation 0's exact standing seed has each leg spread the file's 8 degrees out,
    and the breeding is the slides' (not symmetric). The file's tau (0.2 s) becomes the skater's 0.3 s, as bred."""
    from animat.skier.options import TrainConfig
    from animat.skier.train import first_generation, make_evaluator

    text = (CONFIGS / "skier_vskate.toml").read_text().replace("tau = 0.2 ", "tau = 0.3 ")
    assert "tau = 0.3 " in text and "skate_weight = 1.0" in text
    (tmp_path / "skate.toml").write_text(text)
    (tmp_path / "plain.toml").write_text(text.replace("skate_weight = 1.0", "skate_weight = 0.0"))
    skate, plain = (TrainConfig.build(tmp_path / name, nthread=1) for name in ("skate.toml", "plain.toml"))
    resolved = (skate.skate_weight, plain.skate_weight, skate.skate_min_yaw_deg, skate.hip, skate.n_joints)
    assert resolved == (1.0, 0.0, 10.0, "two-axis", 14)
    with make_evaluator(skate, skate.skier_params()) as a, make_evaluator(plain, plain.skier_params()) as b:
        with_skate, without = a(np.array([SKATER])), b(np.array([SKATER]))
    assert not with_skate.fell[0] and with_skate.net_forward_m[0] == without.net_forward_m[0] > 20.0
    assert 1.0 < with_skate.fitness[0] - without.fitness[0] < with_skate.net_forward_m[0]  # skated metres, x 1.0

    seed = first_generation(np.random.default_rng(0), skate)[0]  # the exact standing pose on the file's stance
    assert skate.init_spread_deg == 8.0 and skate.init_noise == "free" and not skate.ga_params().symmetric
    assert seed.shape == (10, 14) and (seed[:, -2:] == [8, -8]).all() and not seed[:, :-2].any()


# --- swarm -------------------------------------------------------------------------------------------------------


def test_swarm_run_takes_the_top_level_and_the_params_table_and_the_command_line_over_them(animat_cli, tmp_path):
    """5 agents, seed 3, every step recorded, no animation and [params] alpha = 2 from the file; --steps 7 over the
    file's 40 is 8 recorded states. The same run without the params table moves the agents otherwise."""
    (tmp_path / "s.toml").write_text(
        "agents = 5\nsteps = 40\nseed = 3\nrecord_every = 1\nanimation = false\n\n[params]\nalpha = 2.0\n"
    )
    out, plain = tmp_path / "swarm", tmp_path / "plain"
    run(
        animat_cli,
        "swarm",
        "run",
        "second-order",
        "--config",
        str(tmp_path / "s.toml"),
        "--steps",
        "7",
        "--out",
        str(out),
    )
    config = read_json(out / "config.json")
    resolved = (config["agents"], config["steps"], config["seed"], config["record_every"], config["animation"])
    assert resolved == (5, 7, 3, 1, False) and config["params"] == {"alpha": 2.0}
    assert not (out / "media").exists()
    run(
        animat_cli,
        "swarm",
        "run",
        "second-order",
        "--agents",
        "5",
        "--steps",
        "7",
        "--seed",
        "3",
        "--record-every",
        "1",
        "--no-animation",
        "--out",
        str(plain),
    )
    with np.load(out / "trajectory.npz") as a, np.load(plain / "trajectory.npz") as b:
        assert a["positions"].shape == (8, 5, 2) and np.array_equal(a["positions"][0], b["positions"][0])
        assert not np.array_equal(a["positions"][-1], b["positions"][-1])


# --- imitate -----------------------------------------------------------------------------------------------------


def test_imitate_train_takes_its_file_and_the_command_line_over_it(animat_cli, tmp_path):
    """PPO from a file: 2 environments x 16 steps per iteration (32 timesteps), 0.5 s episodes (15 control
    steps at 30 Hz) and an [8] network; --timesteps 32 over the file's 64 is one iteration."""
    pytest.importorskip("stable_baselines3")
    (tmp_path / "i.toml").write_text(
        "net_arch = [8]\nn_steps = 16\nbatch_size = 16\nn_epochs = 1\neval_episodes = 1\n"
        'max_seconds = 0.5\ncheckpoint_every = 0\nenvs = 2\nvec_env = "dummy"\n'
        "timesteps = 64\n"
    )
    out = tmp_path / "imitate"
    run(animat_cli, "imitate", "train", "--config", str(tmp_path / "i.toml"), "--timesteps", "32", "--out", str(out))
    config = read_json(out / "config.json")
    resolved = (config["timesteps"], config["envs"], config["n_steps"], config["net_arch"], config["max_seconds"])
    assert resolved == (32, 2, 16, [8], 0.5)
    [row] = rows(out / "metrics.csv")
    assert (int(row["timesteps"]), float(row["ep_len_mean"])) == (32, 15.0)
    with np.load(out / "policy.npz") as policy:
        assert policy["mlp_extractor.policy_net.0.bias"].shape == (8,) and policy["action_net.weight"].shape[1] == 8
