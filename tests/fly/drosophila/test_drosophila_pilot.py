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
