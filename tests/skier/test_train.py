"""Training runs (tiny), resume, the CLI and its one-line errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from animat.checkpoint import read_checkpoint
from animat.errors import RunDirError
from animat.skier.gene import mirror_state
from animat.skier.train import TrainConfig, train

TINY = dict(generations=3, population=8, seconds=1.0, nthread=1, anim_seconds=0.3)
SYMMETRIC = Path(__file__).parents[2] / "configs" / "skier_symmetric.toml"  # the default before the V-skate


def _metrics(path):
    with open(path / "metrics.csv") as fh:
        return list(csv.DictReader(fh))


def test_same_seed_same_run_best_never_decreases(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    cfg = TrainConfig.build(None, **TINY, seed=3)
    sa = train(cfg, a)
    sb = train(cfg, b)
    assert sa["best_fitness"] == sb["best_fitness"]
    ra, rb = _metrics(a), _metrics(b)
    assert [r["best"] for r in ra] == [r["best"] for r in rb]
    assert (
        json.loads((a / "best_gene.json").read_text())["states"]
        == json.loads((b / "best_gene.json").read_text())["states"]
    )
    best = [float(r["best"]) for r in ra]
    assert all(y >= x for x, y in zip(best, best[1:]))  # elites re-evaluate identically
    for name in (
        "summary.json",
        "plots/fitness.png",
        "plots/topview.png",
        "media/skier.gif",
        "trajectory.npz",
        "config.json",
    ):
        assert (a / name).is_file(), name
    with np.load(a / "trajectory.npz") as z:
        assert (
            z["position"].shape[1] == 3 and z["quaternion"].shape[1] == 4 and z["t"].shape[0] == z["position"].shape[0]
        )
    s = json.loads((a / "summary.json").read_text())
    for k in ("best_fitness", "best_net_forward_m", "best_fell", "seconds_per_generation"):
        assert k in s


def test_resume_continues_exactly(tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    full.mkdir()
    part.mkdir()
    cfg = TrainConfig.build(None, **{**TINY, "generations": 4}, seed=5)
    train(cfg, full)
    train(TrainConfig.build(None, **{**TINY, "generations": 2}, seed=5), part)
    arrays, meta = read_checkpoint(part, kind="population")
    assert meta["generation"] == 2
    train(cfg, part, resume=True)  # two generations more: the second is bred with the restored random state
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert strip(_metrics(full)) == strip(_metrics(part))
    np.testing.assert_array_equal(
        read_checkpoint(full, kind="population")[0]["genes"], read_checkpoint(part, kind="population")[0]["genes"]
    )
    assert json.loads((part / "config.json").read_text())["generations"] == cfg.generations
    # finished, but died before its outputs: a resume writes them without another generation
    for name in ("summary.json", "best_gene.json"):
        (part / name).unlink()
    train(cfg, part, resume=True)
    assert [r["best"] for r in _metrics(full)] == [r["best"] for r in _metrics(part)]
    assert json.loads((part / "best_gene.json").read_text()) == json.loads((full / "best_gene.json").read_text())
    assert (part / "summary.json").is_file()
    with pytest.raises(RunDirError, match="already finished its 4 generations; pass --generations > 4"):
        train(cfg, part, resume=True)  # now it has nothing to do


def test_cli_train_and_replay(animat_cli, tmp_path):
    run = tmp_path / "run"
    code, out, err = animat_cli(
        "skier",
        "train",
        "-g",
        "2",
        "-p",
        "6",
        "-s",
        "0.5",
        "--seed",
        "1",
        "--friction",
        "isotropic",
        "--threads",
        "1",
        "--out",
        str(run),
    )
    assert code == 0, err
    assert "results" in out and (run / "summary.json").is_file()
    trained_config = json.loads((run / "config.json").read_text())  # who wrote it (issue 46), then its options
    assert (trained_config["system"], trained_config["verb"], trained_config["friction"]) == (
        "skier",
        "train",
        "isotropic",
    )
    code, out, err = animat_cli("--json", "info", str(run))
    assert code == 0 and (json.loads(out)["system"], json.loads(out)["verb"]) == ("skier", "train"), err
    rep = tmp_path / "rep"
    code, out, err = animat_cli(
        "skier", "replay", str(run), "--out", str(rep), "--seconds", "0.5", "--anim-seconds", "0.2"
    )
    assert code == 0, err
    s = json.loads((rep / "summary.json").read_text())
    assert s["friction"] == "isotropic" and (rep / "trajectory.npz").is_file()
    assert sorted(p.name for p in (rep / "media").iterdir()) == ["skier.gif", "skier.mp4"]
    config = json.loads((rep / "config.json").read_text())
    assert config == {
        "system": "skier",
        "verb": "replay",
        "source": str(run),
        "friction": "isotropic",
        "seconds": 0.5,
        "anim_seconds": 0.2,
    }
    code, out, err = animat_cli("--json", "info", str(rep))  # a replay's config.json names its system and verb
    assert code == 0 and (json.loads(out)["system"], json.loads(out)["verb"]) == ("skier", "replay"), err
    # the replay of the training's episode (one-axis hip) scores what training scored for the best gene
    trained = json.loads((run / "summary.json").read_text())
    assert s["fitness"] == pytest.approx(trained["best_fitness"], rel=1e-9)
    assert s["fell"] == trained["best_fell"] and s["net_forward_m"] == pytest.approx(
        trained["best_net_forward_m"], rel=1e-9
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (["skier", "train", "--friction", "sticky"], "unknown friction 'sticky'"),
        (["skier", "train", "--hip", "diagonal"], "unknown hip 'diagonal'"),
        (["skier", "train", "--backend", "mpi"], "unknown backend 'mpi'"),
        (["skier", "train", "--population", "3"], "population (3) must exceed elites"),
        (["skier", "replay", "/nonexistent/x"], "does not exist"),
        (["skier", "train", "--threads", "-1"], "--threads must be >= 0"),
        (["skier", "train", "--seconds", "inf"], "seconds must be a finite number"),
        (["skier", "train", "--seconds", "0.004"], "frame_dt (0.02 s) <= seconds (0.004 s)"),
    ],
)
def test_cli_bad_input_one_line(animat_cli, tmp_path, args, words):
    code, out, err = animat_cli(*args, "--out", str(tmp_path / "o"))
    assert code == 2
    assert words in err and len(err.strip().splitlines()) == 1


def test_cli_bad_gene_file(animat_cli, tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text(json.dumps({"states": [[0] * 12] * 9 + [[0, 0, 0, 200] + [0] * 8]}))
    code, _, err = animat_cli("skier", "replay", str(bad), "--out", str(tmp_path / "o"))
    assert (
        code == 2
        and "left_elbow angle 200 deg is out of its range 0..160" in err
        and len(err.strip().splitlines()) == 1
    )


def test_unknown_config_option(animat_cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("wings = 2\n")
    code, _, err = animat_cli("skier", "train", "--config", str(cfg), "--out", str(tmp_path / "o"))
    assert code == 2 and "unknown training option(s) ['wings']" in err


def test_two_axis_run_and_replay_of_its_gene_file(animat_cli, tmp_path):
    """Also with a keyframe period other than the default: every replay (the run's own, of its gene
    file, of its directory) uses the run's tau and scores what training scored."""
    run = tmp_path / "run"
    run.mkdir()
    s = train(
        TrainConfig.build(
            None, **TINY, seed=2, hip="two-axis", tau=0.3, friction="isotropic", n_states=6, skier={"mu_iso": 0.3}
        ),
        run,
    )
    gene = json.loads((run / "best_gene.json").read_text())
    assert len(gene["joints"]) == 14 and gene["joints"][-2:] == ["left_hip_spread", "right_hip_spread"]
    assert all(len(row) == 14 for row in gene["states"]) and len(gene["states"]) == 6 and gene["tau_seconds"] == 0.3
    assert s["replay_fitness"] == pytest.approx(s["best_fitness"])
    for name, source in (("file", run / "best_gene.json"), ("dir", run)):
        rep = tmp_path / name
        code, _, err = animat_cli("skier", "replay", str(source), "--out", str(rep), "--anim-seconds", "0.2")
        assert code == 0, err
        assert json.loads((rep / "summary.json").read_text())["fitness"] == pytest.approx(
            s["best_fitness"]
        )  # replay == training


def test_first_generation_is_seeded_around_the_standing_pose():
    from animat.skier.train import first_generation

    cfg = TrainConfig.build(SYMMETRIC, **TINY, init_standing=0.5, init_sigma_deg=3.0)
    g = first_generation(np.random.default_rng(0), cfg)
    assert g.shape == (8, 10, 12) and np.array_equal(g[0], np.zeros((10, 12)))  # the pose itself
    assert np.abs(g[1:4]).max() <= 20 and np.abs(g[4:]).max() > 20  # 4 seeded (3 deg noise), 4 uniform random
    assert np.array_equal(g[:4], mirror_state(g[:4])) and not np.array_equal(
        g[4:], mirror_state(g[4:])
    )  # seeds: symmetric


def test_a_spread_stance_with_free_noise_seeds_asymmetric_skiers_on_wide_feet():
    from animat.skier.gene import GeneError, standing_genes
    from animat.skier.model import joint_names
    from animat.skier.train import first_generation

    cfg = TrainConfig.build(
        None, **TINY, hip="two-axis", init_sigma_deg=3.0, init_noise="free", init_spread_deg=12.0, init_toe_deg=0.0
    )
    g = first_generation(np.random.default_rng(0), cfg)
    names = joint_names(14)
    left, right = names.index("left_hip_spread"), names.index("right_hip_spread")
    assert g.shape == (8, 10, 14) and np.all(g[0, :, left] == 12) and np.all(g[0, :, right] == -12)  # the stance itself
    assert np.all(np.abs(g[0, :, :left]) == 0) and np.abs(g[1:4, :, left] - 12).max() <= 15  # seeds: around the stance
    assert all(
        not np.array_equal(s, mirror_state(s)) for s in g[1:4, :5]
    )  # left and right apart: no state its own mirror
    assert np.array_equal(g[1:4, 5:], mirror_state(g[1:4, :5]))  # the second half still mirrors the first
    with pytest.raises(GeneError, match="two-axis hip"):
        standing_genes(np.random.default_rng(0), 2, 3.0, spread_deg=5.0)


def test_bad_skier_tables_and_parent_probs_are_one_line_errors():
    from animat.errors import ConfigError
    from animat.skier.model import SkierParams

    assert (
        SkierParams.from_dict({"kp": {"hip": 600.0}}).kp["knee"] == 500.0
    )  # a partial gain table changes only what it names
    for bad, words in (
        ({"kp": [1, 2]}, "kp must be a table"),
        ({"kp": {"wing": 1.0}}, "kp must give a finite gain"),
        ({"hip_tilt_deg": float("nan")}, "hip_tilt_deg must be a finite number"),
        ({"iterations": 0}, "iterations must be an integer >= 1"),
    ):
        with pytest.raises(ConfigError, match=words):
            SkierParams.from_dict(bad)
    with pytest.raises(ConfigError, match="at least two of them > 0"):
        TrainConfig.build(None, parent_probs=[0.0, 0.0, 0.0, 0.0, 1.0])
    with pytest.raises(ConfigError, match=r"set friction at the top level"):
        TrainConfig.build(None, skier={"friction": "isotropic"})
    with pytest.raises(ConfigError, match="init_spread_deg .* needs hip"):
        TrainConfig.build(None, hip="one-axis", init_toe_deg=0.0, init_spread_deg=10.0)
    with pytest.raises(ConfigError, match="init_noise"):
        TrainConfig.build(None, init_noise="wild")


def test_checkpoint_written_before_the_engine_loop_resumes(tmp_path):
    """A run checkpointed at generation 2 by the code before the engine's loop (fixture), resumed to 3,
    equals the uninterrupted 3-generation run that code made (expected.json)."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "train-v0", run)
    expected = json.loads((run / "expected.json").read_text())
    cfg = TrainConfig.from_run(json.loads((run / "config.json").read_text()), generations=3)  # its old options
    train(cfg, run, resume=True)
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in _metrics(run)] == expected["metrics"]
    assert json.loads((run / "best_gene.json").read_text())["states"] == expected["best_gene"]


def test_an_evolution_strategy_trains_and_resumes_exactly(tmp_path, animat_cli):
    """``--strategy open_es``: the GA's run directory, genes within range and mirrored, exact resume."""
    full, part = tmp_path / "full", tmp_path / "part"
    tiny = ["--population", "8", "--seconds", "1", "--threads", "1", "--strategy", "open_es"]
    assert animat_cli("skier", "train", "--generations", "3", *tiny, "--out", str(full))[0] == 0
    assert animat_cli("skier", "train", "--generations", "2", *tiny, "--out", str(part))[0] == 0
    code, _, err = animat_cli("skier", "train", "--resume", str(part), "--generations", "3")
    assert code == 0, err
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert len(_metrics(full)) == 3 and strip(_metrics(full)) == strip(_metrics(part))
    assert json.loads((part / "best_gene.json").read_text()) == json.loads((full / "best_gene.json").read_text())
    assert json.loads((full / "summary.json").read_text())["strategy"] == "open_es"
    genes = read_checkpoint(full, kind="population")[0]["last_genes"]
    assert genes.shape == (8, 10, 14) and genes.dtype == np.int64  # the default two-axis hip's 14 columns
    np.testing.assert_array_equal(genes[:, 5:], mirror_state(genes[:, :5]))


def test_decoded_es_vectors_are_clipped_mirrored_genes():
    from animat.skier import ga
    from animat.skier.model import joint_ranges_deg

    r = joint_ranges_deg(12)
    x = np.zeros((3, 5 * 12))
    x[1] = 1e3  # far outside every range: clipped to the upper bounds
    x[2, 0] = 0.26  # 2.6 degrees: rounded to 3
    genes = ga.decode(x, 10, 12)
    assert genes.shape == (3, 10, 12)
    assert not genes[0].any()  # x = 0: the standing pose
    np.testing.assert_array_equal(genes[1, :5], np.broadcast_to(r[:, 1], (5, 12)))
    assert genes[2, 0, 0] == 3 and (genes >= r[:, 0]).all() and (genes <= r[:, 1]).all()
    np.testing.assert_array_equal(genes[:, 5:], mirror_state(genes[:, :5]))
