"""The fly command line end to end: outputs, exact resume, replay, and one-line errors on bad input."""

from __future__ import annotations

import csv
import json
import re
import sys

import numpy as np
import pytest

from animat import cli

TINY = ["--population", "8", "--seconds", "0.2", "--replay-seconds", "0.5"]


def metrics(run) -> list[dict]:
    with open(run / "metrics.csv") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny training run shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("run") / "train"
    mp = pytest.MonkeyPatch()
    mp.setattr(sys, "argv", ["animat", "fly", "train", "--generations", "3", *TINY, "--seed", "1", "--out", str(out)])
    try:
        cli.main()
    except SystemExit as exc:
        assert not exc.code
    finally:
        mp.undo()
    return out


def test_config_json_names_the_system_verb_and_preset(trained, animat_cli):
    """A training run's config.json says who wrote it (issue 46): ``animat info`` reads the run by that record."""
    config = json.loads((trained / "config.json").read_text())
    assert (config["system"], config["verb"], config["preset"]) == ("fly", "train", "paper")
    code, out, err = animat_cli("--json", "info", str(trained))
    assert code == 0, err
    info = json.loads(out)
    assert (info["system"], info["verb"], info["preset"], info["done"]) == ("fly", "train", "paper", 3)


def test_train_writes_the_run_directory(trained):
    for name in [
        "config.json",
        "metrics.csv",
        "summary.json",
        "best_genome.npz",
        "best_genome.json",
        "best_genome.pkl",
        "trajectory.npz",
        "plots/fitness.png",
        "plots/height.png",
        "plots/topview.png",
        "plots/wings.png",
        "media/flight.gif",
        "media/flight.mp4",
        "checkpoints/latest.json",
    ]:
        assert (trained / name).is_file(), name
    rows = metrics(trained)
    assert [int(r["generation"]) for r in rows] == [0, 1, 2]
    assert set(rows[0]) >= {"best", "mean", "median", "crashes", "seconds"}
    best = [float(r["best"]) for r in rows]
    assert best == sorted(best)  # elitism: the best never gets worse
    summary = json.loads((trained / "summary.json").read_text())
    assert summary["generations"] == 3 and summary["best_fitness"] == pytest.approx(best[-1])
    config = json.loads((trained / "config.json").read_text())
    assert config["seed"] == 1 and config["population"] == 8


def test_replay_writes_trajectory_and_summary(trained, tmp_path, animat_cli):
    out = tmp_path / "replay"
    code, _, err = animat_cli("fly", "replay", str(trained), "--seconds", "1.5", "--out", str(out))
    assert code == 0, err
    traj = np.load(out / "trajectory.npz", allow_pickle=False)
    assert traj["t"].shape == (150,) and traj["position"].shape == (150, 3)
    assert traj["quaternion"].shape == (150, 4) and traj["wing_angles"].shape == (150, 6)
    np.testing.assert_allclose(np.linalg.norm(traj["quaternion"], axis=1), 1.0, atol=1e-5)
    summary = json.loads((out / "summary.json").read_text())
    for key in [
        "seconds",
        "body_length",
        "start_height",
        "min_height",
        "final_height",
        "mean_abs_x",
        "mean_abs_y",
        "stroke_cycles",
        "crashed",
    ]:
        assert key in summary, key
    assert summary["seconds"] == pytest.approx(1.5) and summary["body_length"] == 4.0
    assert summary["final_height"] == pytest.approx(float(traj["position"][-1, 2]))
    # the genome file alone replays the same flight
    out2 = tmp_path / "replay2"
    code, _, err = animat_cli(
        "fly", "replay", str(trained / "best_genome.npz"), "--seconds", "1.5", "--no-animation", "--out", str(out2)
    )
    assert code == 0, err
    np.testing.assert_array_equal(np.load(out2 / "trajectory.npz")["position"], traj["position"])
    config = json.loads((out / "config.json").read_text())
    assert config == {
        "system": "fly",
        "verb": "replay",
        "preset": "paper",
        "source": str(trained),
        "seconds": 1.5,
        "anim_seconds": 6.0,
    }
    assert sorted(p.name for p in (out / "media").iterdir()) == ["flight.gif", "flight.mp4"]


def test_replay_with_no_animation_writes_no_media_and_says_what_it_is_doing(trained, tmp_path, animat_cli):
    """--no-animation: no GIF, no MP4 (and --anim-seconds 0 is the same); under --json stdout is the summary alone
    and the phases (the flight, 7 s of compiling here) are lines on stderr."""
    out = tmp_path / "replay"
    args = ["fly", "replay", str(trained), "-s", "0.3", "--no-animation", "-o", str(out)]
    code, stdout, err = animat_cli("--json", *args)
    assert code == 0, err
    assert json.loads(stdout)["results"] == str(out)
    assert re.search(r"^flying 0\.3 s: \d+\.\d s$", err, re.MULTILINE), err
    assert not (out / "media").exists() and "rendering" not in err
    assert json.loads((out / "config.json").read_text())["anim_seconds"] == 0.0
    assert {"report.html", "summary.json", "trajectory.npz", "plots"} <= {p.name for p in out.iterdir()}


def test_anim_seconds_zero_is_accepted_and_a_negative_one_refused():
    from animat.errors import ConfigError
    from animat.fly.options import ReplayOptions, SteerOptions, TrainConfig

    assert ReplayOptions.build(None, anim_seconds=0.0).anim_seconds == 0.0
    assert SteerOptions.build(None, anim_seconds=0.0).anim_seconds == 0.0
    assert TrainConfig.build(None, anim_seconds=0.0).anim_seconds == 0.0
    for build in (ReplayOptions.build, SteerOptions.build, TrainConfig.build):
        with pytest.raises(ConfigError, match="anim"):
            build(None, anim_seconds=-1.0)


def test_resumed_run_equals_uninterrupted(tmp_path, animat_cli):
    full, part = tmp_path / "full", tmp_path / "part"
    assert animat_cli("fly", "train", "--generations", "4", *TINY, "--out", str(full))[0] == 0
    assert animat_cli("fly", "train", "--generations", "2", *TINY, "--out", str(part))[0] == 0
    code, _, err = animat_cli("fly", "train", "--resume", str(part), "--generations", "4", "--seed", "1")
    assert code == 2 and "this call changes seed" in err  # a changed option is refused, before any generation
    assert len(metrics(part)) == 2
    # the first command line repeated with --resume (the same values) is no change
    code, _, err = animat_cli("fly", "train", "--resume", str(part), "--generations", "4", *TINY)
    assert code == 0, err
    assert json.loads((part / "config.json").read_text())["generations"] == 4  # what a later --resume builds from
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert strip(metrics(part)) == strip(metrics(full))
    a, b = np.load(full / "best_genome.npz"), np.load(part / "best_genome.npz")
    np.testing.assert_array_equal(a["genes"], b["genes"])


def test_resume_passes_over_a_damaged_newest_checkpoint(tmp_path, animat_cli):
    """The newest checkpoint damaged (a disk fault, a torn copy): --resume warns in one line, continues
    from the one before, and the run ends as the uninterrupted one."""
    full, part = tmp_path / "full", tmp_path / "part"
    assert animat_cli("fly", "train", "--generations", "4", *TINY, "--out", str(full))[0] == 0
    assert animat_cli("fly", "train", "--generations", "3", *TINY, "--out", str(part))[0] == 0
    npz = part / "checkpoints" / "gen-000003.npz"
    npz.write_bytes(npz.read_bytes()[:-10])
    code, _, err = animat_cli("fly", "train", "--resume", str(part), "--generations", "4")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "gen-000003.npz" in warning[0] and "gen-000002.json" in warning[0]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert strip(metrics(part)) == strip(metrics(full))


@pytest.mark.parametrize(
    "args, message",
    [
        (["fly", "train", "--fitness", "altitude"], "unknown fitness"),
        (["fly", "train", "--layers", "10,20,3"], "do not fit the fly"),
        (["fly", "train", "--asymmetric", "--layers", "15,20,20,3"], "do not fit the fly"),
        (["fly", "train", "--seconds", "-1"], "seconds must be > 0"),
        (["fly", "train", "--generations", "0"], "generations must be >= 1"),
        (["fly", "train", "--backend", "dask"], "unknown backend"),
        (["fly", "train", "--config", "no-such-file.toml"], "not found"),
        (["fly", "replay", "no-such-run"], "does not exist"),
        (["fly", "replay", ".", "--seconds", "-3"], "must be finite and > 0"),
        (["fly", "train", "--bogus"], "No such option"),
        (["fly", "train", "--generations", "abc"], "--generations"),
        (["fly", "train", "--mutation-rate", "2"], "No such option"),
        (["fly", "train", "--layers", "15,x"], "--layers must be integers like '15,20,20,3', got '15,x'"),
        (["fly", "distill", "pretrained:paper", "--hidden", "64;64"], "--hidden must be integers like '64,64'"),
        (["fly", "train", "--preset", "drosophila", "--task", "up"], "--task: the paper preset's options"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, monkeypatch, tmp_path, animat_cli):
    monkeypatch.chdir(tmp_path)
    code, _, err = animat_cli(*args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # nothing written


def test_never_overwrites_an_earlier_run(trained, animat_cli):
    before = {p: p.stat().st_mtime_ns for p in trained.rglob("*") if p.is_file()}
    code, _, err = animat_cli("fly", "train", "--generations", "1", *TINY, "--out", str(trained))
    assert code == 2 and "already exists" in err
    assert {p: p.stat().st_mtime_ns for p in trained.rglob("*") if p.is_file()} == before
    code, _, err = animat_cli("fly", "train", "--resume", str(trained))
    assert code == 2 and "already finished its" in err and "pass --generations >" in err
    assert {p: p.stat().st_mtime_ns for p in trained.rglob("*") if p.is_file()} == before


def test_resume_of_a_finished_run_writes_the_outputs_a_crash_left_out(trained, tmp_path, animat_cli):
    """Training done (last checkpoint written) but the run died before its outputs: --resume writes them
    from the checkpoint without evolving further."""
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(trained, run)
    for name in ("summary.json", "best_genome.npz", "best_genome.json"):
        (run / name).unlink()
    rows = metrics(run)
    code, _, err = animat_cli("fly", "train", "--resume", str(run))
    assert code == 0, err
    assert metrics(run) == rows  # no generation added
    a, b = np.load(trained / "best_genome.npz"), np.load(run / "best_genome.npz")
    np.testing.assert_array_equal(a["genes"], b["genes"])
    assert (
        json.loads((run / "summary.json").read_text())["generations"]
        == json.loads((trained / "summary.json").read_text())["generations"]
    )


def test_corrupt_or_missing_checkpoint_is_an_error(trained, tmp_path, animat_cli):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(trained, run)
    data = bytearray((run / "best_genome.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (run / "best_genome.npz").write_bytes(bytes(data))
    code, _, err = animat_cli("fly", "replay", str(run), "--out", str(tmp_path / "r"))
    assert code == 2 and "corrupt" in err and len(err.strip().splitlines()) == 1
    code, _, err = animat_cli("fly", "train", "--resume", str(tmp_path))
    assert code == 2 and "config.json" in err
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = animat_cli("fly", "replay", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "r3"))
    assert code == 2 and "is not a genome file" in err
    (run / "checkpoints").rename(tmp_path / "moved")  # a run that stopped before its first checkpoint
    code, _, err = animat_cli("fly", "train", "--resume", str(run))
    assert code == 2 and "no checkpoints/ folder" in err and len(err.strip().splitlines()) == 1, err
    (run / "config.json").write_text("{cut short")
    for args in (("fly", "replay", str(run), "--out", str(tmp_path / "r2")), ("fly", "train", "--resume", str(run))):
        code, _, err = animat_cli(*args)
        assert code == 2 and "config.json' is corrupt" in err and len(err.strip().splitlines()) == 1, err


def test_per_layer_activations_from_a_config_file(tmp_path, animat_cli):
    cfg = tmp_path / "acts.toml"
    cfg.write_text(
        'activations = ["tanh", "relu", "sigmoid"]\ngenerations = 1\npopulation = 6\nseconds = 0.1\n'
        "replay_seconds = 0.1\n"
    )
    code, _, err = animat_cli("fly", "train", "--config", str(cfg), "--out", str(tmp_path / "run"))
    assert code == 0, err
    assert json.loads((tmp_path / "run" / "best_genome.json").read_text())["meta"]["activations"] == [
        "tanh",
        "relu",
        "sigmoid",
    ]
    cfg.write_text('activations = ["tanh", "swish", "tanh"]\n')
    code, _, err = animat_cli("fly", "train", "--config", str(cfg), "--out", str(tmp_path / "run2"))
    assert code == 2 and "unknown activation 'swish'" in err


def test_out_of_range_settings_are_rejected_before_a_run_dir_is_made(tmp_path, animat_cli):
    cfg = tmp_path / "bad.toml"
    for text, word in [
        ('mutation = "foo"', "unknown mutation"),
        ("mutation_rate = 1.5", "mutation_rate"),
        ("starts = 0", "starts"),
    ]:
        cfg.write_text(text + "\n")
        code, _, err = animat_cli("fly", "train", "--config", str(cfg), "--out", str(tmp_path / "run"))
        assert code == 2 and word in err
        assert not (tmp_path / "run").exists()


def test_default_network_fits_the_fly_symmetric_or_not(tmp_path, animat_cli):
    from animat.fly.train import TrainConfig

    assert TrainConfig.build().layers == [15, 20, 20, 3]
    assert TrainConfig.build(asymmetric=True).layers == [18, 20, 20, 6]  # both wings: 18 observations, 6 angles
    assert TrainConfig.build(asymmetric=True, layers=[18, 8, 6]).layers == [18, 8, 6]
    out = tmp_path / "asym"
    code, _, err = animat_cli(
        "fly",
        "train",
        "--asymmetric",
        "-g",
        "1",
        "-p",
        "4",
        "-s",
        "0.05",
        "--replay-seconds",
        "0.05",
        "--out",
        str(out),
    )
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["layers"] == [18, 20, 20, 6]


def test_replay_summary_and_acceptance_flags_follow_from_its_trajectory(trained, tmp_path, animat_cli):
    """The replay's headline numbers and its check_* verdicts (the main job's acceptance) recomputed from
    trajectory.npz: stroke cycles of the right flap angle, height change and drift in body lengths."""
    from animat.fly.analysis import stroke_cycles

    out = tmp_path / "replay"
    code, _, err = animat_cli("fly", "replay", str(trained), "--seconds", "3", "--out", str(out))
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    with np.load(out / "trajectory.npz") as z:
        pos, flap, crashed = z["position"].astype(np.float64), z["wing_angles"][:, 0], z["crashed"]
    L = s["body_length"]
    cycles = stroke_cycles(flap)
    assert s["stroke_cycles"] == cycles and s["stroke_cycles_per_3s"] == pytest.approx(cycles * 3.0 / 3.0)
    assert s["min_height_change_body_lengths"] == pytest.approx(pos[:, 2].min() / L, rel=1e-6)
    assert s["mean_lateral_drift_body_lengths"] == pytest.approx(np.hypot(pos[:, 0], pos[:, 1]).mean() / L, rel=1e-5)
    assert s["crashed"] == bool(crashed.any())
    assert s["check_flaps_5_per_3s"] == (cycles >= 5)
    assert s["check_min_height_above_start_minus_2_body_lengths"] == (pos[:, 2].min() / L >= -2.0)
    assert s["check_mean_lateral_drift_within_5_body_lengths"] == (np.hypot(pos[:, 0], pos[:, 1]).mean() / L <= 5.0)
    assert s["check_no_crash"] == (not crashed.any())
    summary = json.loads((trained / "summary.json").read_text())  # the training run reports its replay's verdicts too
    assert {k for k in summary if k.startswith("replay_check_")} == {f"replay_{k}" for k in s if k.startswith("check_")}


def test_acceptance_flags_switch_exactly_at_their_thresholds():
    from animat.fly.analysis import acceptance

    base = {
        "stroke_cycles_per_3s": 5.0,
        "min_height_change_body_lengths": -2.0,
        "mean_lateral_drift_body_lengths": 5.0,
        "crashed": False,
    }
    assert all(acceptance(base).values()) and len(acceptance(base)) == 4
    for key, value, flag in [
        ("stroke_cycles_per_3s", 4.999, "flaps_5_per_3s"),
        ("min_height_change_body_lengths", -2.001, "min_height_above_start_minus_2_body_lengths"),
        ("mean_lateral_drift_body_lengths", 5.001, "mean_lateral_drift_within_5_body_lengths"),
        ("crashed", True, "no_crash"),
    ]:
        flags = acceptance({**base, key: value})
        assert not flags[flag] and all(v for k, v in flags.items() if k != flag), key


def test_stroke_cycles_count_full_swings_and_ignore_jitter():
    """A flap of 0.5 rad amplitude at 5 Hz for 3 s, starting downwards: 15 full cycles (each swing
    from below median - 0.15 to above median + 0.15 rad); jitter inside the band counts none."""
    from animat.fly.analysis import stroke_cycles

    t = np.arange(0.0, 3.0, 1e-3)
    assert stroke_cycles(-0.5 * np.sin(2 * np.pi * 5 * t)) == 15
    assert stroke_cycles(0.5 * np.sin(2 * np.pi * 5 * t)) == 14  # starts upwards: the first swing up completes no cycle
    jitter = 0.3 + 0.12 * np.random.default_rng(0).uniform(-1, 1, t.size)  # within +-0.15 rad of its median
    assert stroke_cycles(jitter) == 0
    assert stroke_cycles(0.14 * np.sin(2 * np.pi * 5 * t)) == 0  # a swing inside the band


def test_replay_for_the_training_episode_reproduces_the_best_fitness(trained, tmp_path, animat_cli):
    """The best genome replayed for the training's episode length (one start at rest, no noise) flies the
    same flight: the run's fitness function (lateral) on the replay's trajectory is the best fitness."""
    from animat.fly.tasks import lateral

    config = json.loads((trained / "config.json").read_text())
    assert config["fitness"] == "lateral" and config["starts"] == 1
    out = tmp_path / "episode"
    code, _, err = animat_cli("fly", "replay", str(trained), "--seconds", str(config["seconds"]), "--out", str(out))
    assert code == 0, err
    with np.load(out / "trajectory.npz") as z:
        replayed = float(lateral(z["position"], z["quaternion"]))
    assert replayed == pytest.approx(
        json.loads((trained / "summary.json").read_text())["best_fitness"], rel=1e-6, abs=1e-9
    )


def test_an_evolution_strategy_trains_and_resumes_exactly(tmp_path, animat_cli):
    """``--strategy snes``: the paper GA's run directory, and an interrupted run resumed equals an uninterrupted one."""
    full, part = tmp_path / "full", tmp_path / "part"
    assert animat_cli("fly", "train", "--strategy", "snes", "--generations", "3", *TINY, "--out", str(full))[0] == 0
    assert animat_cli("fly", "train", "--strategy", "snes", "--generations", "2", *TINY, "--out", str(part))[0] == 0
    code, _, err = animat_cli("fly", "train", "--resume", str(part), "--generations", "3")
    assert code == 0, err
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert len(metrics(full)) == 3 and strip(metrics(part)) == strip(metrics(full))
    np.testing.assert_array_equal(
        np.load(full / "best_genome.npz")["genes"], np.load(part / "best_genome.npz")["genes"]
    )
    summary = json.loads((full / "summary.json").read_text())
    assert summary["strategy"] == "snes" and summary["best_fitness"] == max(float(r["best"]) for r in metrics(full))
    assert json.loads((full / "checkpoints" / "gen-000003.json").read_text())["meta"]["strategy"] == "snes"
    code, _, err = animat_cli(
        "fly", "train", "--strategy", "pso", "--generations", "1", *TINY, "--out", str(tmp_path / "bad")
    )
    assert code == 2 and "unknown strategy 'pso'" in err


def test_the_paper_config_is_what_fly_train_runs_with_no_options():
    from pathlib import Path

    from animat.fly.options import TrainConfig

    paper = Path(__file__).resolve().parents[2] / "configs" / "fly_paper.toml"
    assert TrainConfig.build(paper) == TrainConfig.build(None)


def test_a_failed_replay_check_is_explained_in_one_line():
    """The paper's settings score 3 s and replay 30 s: the note names the failed checks and that mismatch; a run
    scored as long as it is replayed gets the checks only; every check passed, a steering task's run (no
    checks) or the drosophila preset's: no note."""
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.options import TrainConfig
    from animat.fly.train import replay_note

    summary = {"replay_check_no_crash": True, "replay_check_min_height_above_start_minus_2_body_lengths": False}
    note = replay_note(TrainConfig.build(None), summary)
    assert "(min_height_above_start_minus_2_body_lengths)" in note and "3 s episodes" in note and "30 s" in note
    assert "\n" not in note and "configs/fly_default.toml" in note
    note = replay_note(TrainConfig.build(None, seconds=30.0), summary)
    assert "3 s" not in note and "min_height_above_start_minus_2_body_lengths" in note
    assert (
        replay_note(
            TrainConfig.build(None), {**summary, "replay_check_min_height_above_start_minus_2_body_lengths": True}
        )
        is None
    )
    assert replay_note(TrainConfig.build(None, task="hover"), {"replay_all_ok": False}) is None
    assert replay_note(DrosophilaTrainConfig.build(None), summary) is None


def test_fly_train_takes_the_same_flags_as_before_the_options_were_declared_once():
    """``animat fly train``'s options, their short flags and its one on/off pair: what the command line took when
    each was spelt out as a typer parameter (issue 46 builds them from the declarations)."""
    import typer

    command = typer.main.get_command(cli.app).commands["fly"].commands["train"]
    flags = {p.name: (*p.opts, *p.secondary_opts) for p in command.params}
    assert flags == {
        "generations": ("--generations", "-g"),
        "population": ("--population", "-p"),
        "seconds": ("--seconds", "-s"),
        "fitness": ("--fitness", "-f"),
        "layers": ("--layers",),
        "control_ms": ("--control-ms",),
        "asymmetric": ("--asymmetric", "--symmetric"),
        "seed": ("--seed",),
        "strategy": ("--strategy",),
        "backend": ("--backend",),
        "address": ("--address",),
        "replay_seconds": ("--replay-seconds",),
        "anim_seconds": ("--anim-seconds",),
        "task": ("--task",),
        "speed": ("--speed",),
        "no_animation": ("--no-animation",),
        "out": ("--out", "-o"),
        "config": ("--config", "-c"),
        "resume": ("--resume",),
        "preset": ("--preset",),
        "from_run": ("--from",),
    }
    helps = {p.name: p.help for p in command.params}
    assert helps["population"] == "Flies per generation. \\[default: 200]"
    assert helps["layers"] == "Network layers, e.g. '15,20,20,3'. \\[default: 15,20,20,3; 18,20,20,6 with --asymmetric]"
