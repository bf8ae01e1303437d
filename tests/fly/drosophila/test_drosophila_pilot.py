"""Steering the fruit fly by command (issue 50): :class:`animat.fly.drosophila.pilot.DrosophilaPilot` flies the
training rollout's physics one 5 ms sample at a time, and ``animat fly steer`` flies a ``preset = "drosophila"``
steering set into the run directory of the paper preset's (trajectory, score in metres and body lengths, plots,
animation, report). The set here is the shipped hover network under two commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from animat.pretrained import resolve


@pytest.fixture(scope="module")
def hover_set(tmp_path_factory) -> Path:
    """A drosophila steering directory: ``pretrained:drosophila-hover`` as the hover and the forward network."""
    root = tmp_path_factory.mktemp("drosophila_set")
    shutil.copytree(resolve("pretrained:drosophila-hover"), root / "hover")
    switch = {"hover": "hover", "forward": "hover"}
    record = {"version": 2, "preset": "drosophila", "speed": 0.3, "switch": switch, "goal": None, "alternates": {}}
    (root / "steering.json").write_text(json.dumps(record))
    return root


def test_the_pilot_hovers_from_rest_as_the_replay_flies(hover_set):
    from animat.fly.drosophila.replay import fly_genome, load_for_replay
    from animat.fly.steer.pilot import make_pilot

    params, genome = load_for_replay(hover_set / "hover")
    replay = fly_genome(params, genome, 0.05).samples
    pilot = make_pilot(hover_set)
    assert pilot.dt == pytest.approx(params.sample_dt) and pilot.body_length == pytest.approx(2.5e-3)
    flown = [pilot.tick() for _ in range(len(replay.pos))]
    pos = np.array([f["position"] for f in flown])
    # the same physics and network; one fly compiles to code that rounds apart from the population's in float32
    np.testing.assert_allclose(pos / params.body_length, replay.pos / params.body_length, atol=1e-4)
    assert not np.allclose(pos[0], 0.0)  # it moved: the comparison is not of two flies at rest
    assert [f["network"] for f in flown] == ["hover"] * len(flown)
    assert np.array(flown[-1]["wing"]).shape == (2, 3)


def test_the_drosophila_pilot_refuses_what_its_set_cannot_fly(hover_set):
    from animat.errors import ConfigError
    from animat.fly.steer.pilot import make_pilot

    with pytest.raises(ConfigError, match="switch controller only"):
        make_pilot(hover_set, controller="goal")
    pilot = make_pilot(hover_set)
    with pytest.raises(ConfigError, match="no network for command 'up'"):
        pilot.command("up")
    pilot.command("forward")
    assert pilot.tick()["command_direction"].tolist() == [1.0, 0.0, 0.0]  # the tasks' forward: +x


def test_steer_flies_a_drosophila_set_into_a_run_directory_in_metres(hover_set, tmp_path, animat_cli):
    out = tmp_path / "steer"
    code, _, err = animat_cli(
        "fly", "steer", str(hover_set), "--commands", "hover:0.05,forward:0.05", "--out", str(out)
    )
    assert code == 0, err
    for name in ("trajectory.npz", "summary.json", "plots/velocity.png", "plots/path.png", "media/flight.gif"):
        assert (out / name).is_file(), name
    with np.load(out / "trajectory.npz") as z:
        t, command, network = z["t"], z["command"].astype(str), z["network"].astype(str)
        assert z["position"].shape == (len(t), 3) and np.isfinite(z["position"]).all()
    np.testing.assert_allclose(t, 0.005 * np.arange(1, 21), rtol=1e-5)
    assert command.tolist() == ["hover"] * 10 + ["forward"] * 10 and set(network) == {"hover"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["preset"] == "drosophila" and summary["body_length"] == pytest.approx(2.5e-3)
    assert summary["target_speed"] == pytest.approx(0.3)
    assert [s["command"] for s in summary["segments"]] == ["hover", "forward"]
    assert "drosophila" in (out / "report.html").read_text()
    code, _, err = animat_cli("fly", "steer", str(hover_set), "--commands", "up:1", "--out", str(tmp_path / "up"))
    assert code == 2 and "no network for command 'up'" in err


@pytest.fixture(scope="module")
def full_set(hover_set, tmp_path_factory) -> Path:
    """``hover_set`` with the hover network under every command (what a hand-over pool's random scripts fly)."""
    from animat.fly.steer.commands import COMMANDS

    root = tmp_path_factory.mktemp("drosophila_full")
    shutil.copytree(hover_set / "hover", root / "hover")
    record = json.loads((hover_set / "steering.json").read_text())
    record["switch"] = {c: "hover" for c in COMMANDS}
    (root / "steering.json").write_text(json.dumps(record))
    return root


def test_a_drosophila_hand_over_pool_holds_the_states_its_networks_then_start_from(full_set, tmp_path, animat_cli):
    """``animat fly handovers`` of a drosophila set: the fly's state at each of a random script's six hand-overs
    (moving: the hover network drifts), in the start pool's format; a training's perturbed starts are those states
    (drawn by its seed, start 0 at rest); a run from the pool records its digest and refuses it changed."""
    from animat import runs
    from animat.fly.drosophila.replay import load_for_replay
    from animat.fly.drosophila.rollout import pool_start_states, start_states
    from animat.fly.steer.tracking import read_start_pool

    pool_file = tmp_path / "pool.npz"
    code, _, err = animat_cli(
        "fly", "handovers", str(full_set), "--scripts", "1", "--seed", "3", "--out", str(pool_file)
    )
    assert code == 0, err
    pool = read_start_pool(pool_file)
    assert {k: v.shape for k, v in pool.items()} == {"vel": (6, 3), "quat": (6, 4), "omega": (6, 3), "wing": (6, 2, 3)}
    assert (np.linalg.norm(pool["vel"], axis=1) > 1e-3).all()  # m/s: states in flight, not at rest
    np.testing.assert_allclose(np.linalg.norm(pool["quat"], axis=1), 1.0, atol=1e-5)
    params, _ = load_for_replay(full_set / "hover")
    starts, rest = pool_start_states(params, 4, 7, pool), start_states(params, 1)
    for key in ("vel", "quat", "omega"):
        np.testing.assert_array_equal(getattr(starts, key)[0], getattr(rest, key)[0])
        drawn = getattr(starts, key)[1:]
        assert all(any(np.array_equal(d, p) for p in pool[key]) for d in drawn), key
    assert len({tuple(v) for v in starts.vel[1:]}) == 3  # drawn without repeats while the pool has enough
    np.testing.assert_array_equal(pool_start_states(params, 4, 7, pool).vel, starts.vel)  # the seed decides
    from animat.errors import ConfigError
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.drosophila.tasks import task_starts
    from animat.fly.drosophila.train import fitness_of
    from animat.fly.train import start_pool_record

    cfg = DrosophilaTrainConfig.build(None, fitness="up", seconds=1.0, starts=4, seed=7, start_pool=str(pool_file))
    record = start_pool_record(cfg, tmp_path, resume=False)  # what config.json records
    assert record == {"start_pool_sha256": runs.sha256_hex(pool_file.read_bytes())}
    fitness = fitness_of(cfg, record["start_pool_sha256"])
    assert (fitness.start_pool, fitness.start_pool_sha256) == (str(pool_file), record["start_pool_sha256"])
    flown = task_starts(params, 4, 7, fitness.start_pool, fitness.start_pool_sha256)
    np.testing.assert_array_equal(flown.vel, starts.vel)
    runs.atomic_save_npz(pool_file, **{**pool, "vel": pool["vel"] * 2})
    with pytest.raises(ConfigError, match="changed since this run began"):
        task_starts(params, 4, 7, fitness.start_pool, fitness.start_pool_sha256)


def test_train_steering_builds_a_drosophila_set_from_the_shipped_hover(tmp_path, animat_cli):
    """``animat fly train-steering`` of a ``preset = "drosophila"`` TOML (configs/fly_drosophila_steer.toml's form,
    tiny): the hover network taken as pretrained:drosophila-hover is (its files byte for byte), a direction network
    trained from it; run again, both are kept; the set steers; a copy of pretrained:drosophila's folders is kept as
    finished (a set's training goes on from the shipped networks)."""
    from animat import runs

    toml = tmp_path / "set.toml"
    toml.write_text(
        'version = 2\npreset = "drosophila"\nspeed = 0.3\n[train]\nstrategy = "open_es"\ninit_std = 0.01\n'
        "population = 4\nseconds = 1.0\nstarts = 1\ngenerations = 1\nreplay_seconds = 0.01\nanim_seconds = 0.0\n"
        "drosophila = {thorax_resonance_hz = 218.0, induced_power_factor = 1.2}\n"
        '[networks.hover]\ntask = "hover"\ntake = "pretrained:drosophila-hover"\n'
        '[networks.up]\ntask = "up"\nfrom = "pretrained:drosophila-hover"\n'
    )
    out = tmp_path / "set"
    stamps = []
    for _ in range(2):
        code, _, err = animat_cli("fly", "train-steering", "--config", str(toml), "--out", str(out))
        assert code == 0, err
        stamps.append([(out / n / "summary.json").stat().st_mtime_ns for n in ("hover", "up")])
    assert stamps[0] == stamps[1]  # the second run kept both
    shipped = resolve("pretrained:drosophila-hover")
    for name in ("config.json", "best_genome.npz", "best_genome.json"):
        assert (out / "hover" / name).read_bytes() == (shipped / name).read_bytes(), name
    config = runs.read_json(out / "up" / "config.json")
    assert (config["fitness"], config["generations"], Path(config["from"]["path"])) == ("up", 1, shipped)
    record = runs.read_json(out / "steering.json")
    assert (record["preset"], record["switch"]) == ("drosophila", {"hover": "hover", "up": "up"})
    code, _, err = animat_cli(
        "fly", "steer", str(out), "--commands", "up:0.02", "--no-animation", "--out", str(tmp_path / "s")
    )
    assert code == 0, err
    shipped_set, copied = resolve("pretrained:drosophila"), tmp_path / "copied"
    for name in ("hover", "up"):  # a shipped set's folders (config.json and the genome) go on as finished networks
        shutil.copytree(shipped_set / name, copied / name)
    code, _, err = animat_cli("fly", "train-steering", "--config", str(toml), "--out", str(copied))
    assert code == 0, err
    for name in ("hover", "up"):
        assert (copied / name / "best_genome.npz").read_bytes() == (shipped_set / name / "best_genome.npz").read_bytes()
        assert not (copied / name / "checkpoints").exists(), name


def test_the_fruit_fly_plays_live_in_mm_slowed_down_and_writes_its_steered_run(hover_set, tmp_path):
    """``animat play fly`` on a drosophila set (:class:`animat.fly.live.FlyLive` through its view): 5 ms steps shown
    10 times slower, the page's scene and frames in mm (the frame's vertices are the scene's body and wings), the
    status in mm and mm/s, and the run directory of ``fly steer`` when it ends."""
    from animat import runs
    from animat.fly.drosophila.geometry import N_OUTLINE, spheroid_mesh
    from animat.fly.live import open as open_live

    live = open_live(str(hover_set))
    assert (live.dt, live.rate) == (pytest.approx(0.005), pytest.approx(0.1))
    assert live.arena[1][0] == pytest.approx(40 * 2.5)  # 40 body lengths in mm
    vertices = len(spheroid_mesh(live.params)[0])
    frame = live.frame()
    assert (len(frame["body"]["positions"]), len(frame["wings"]["positions"])) == (3 * vertices, 3 * 2 * 2 * N_OUTLINE)
    for _ in range(10):
        live.step()
    live.command("forward")
    for _ in range(10):
        live.step()
    status = live.status()
    assert (status["t"], status["command"]) == (pytest.approx(0.1), "forward")
    body = np.reshape(live.frame()["body"]["positions"], (-1, 3)).mean(axis=0)
    assert np.linalg.norm(body - status["position"]) < 2.0  # mm: the body is drawn where the fly is
    summary = live.write(tmp_path / "live", {})
    assert summary["preset"] == "drosophila" and [s["command"] for s in summary["segments"]] == ["hover", "forward"]
    assert runs.read_npz(tmp_path / "live" / "trajectory.npz")["position"].shape == (20, 3)


def test_pretrained_drosophila_flies_a_held_out_random_script_every_direction_passing():
    """Issue 50's scored scripts, one of them here (seed 11000, none seen in training: the directions trained from
    rest only): ``pretrained:drosophila``'s switch controller flies every command of a random 20 s script without a
    crash, and each of the six direction segments passes the steering score (RESULTS.md has the 30-script figures;
    its hover segments fail the 2 body-length rule after 0.3 m/s, the #50 note explains)."""
    from animat.fly.steer.commands import COMMANDS, parse_script, random_script
    from animat.fly.steer.pass_rates import scored_flight
    from animat.fly.steer.pilot import load_steering

    steering = load_steering("pretrained:drosophila")
    script = random_script(np.random.default_rng(11000))
    score = scored_flight(steering, script, "switch")
    assert not score["crashed"] and [s["command"] for s in score["segments"]] == [c for c, _ in parse_script(script)]
    directions = [s for s in score["segments"] if s["command"] != "hover"]
    assert sorted(s["command"] for s in directions) == sorted(COMMANDS[1:])
    assert all(s["ok"] for s in directions), [(s["command"], s["direction_ok_fraction"]) for s in directions]
