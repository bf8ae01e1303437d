"""The pilot's lookahead among a command's networks (animat.fly.steer.lookahead): its cost, that its prediction is the
flight that follows, that lookahead 0 is the plain controller, and the alternates' checks."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil

import numpy as np
import pytest

from animat import pretrained
from animat.errors import CheckpointError, ConfigError
from animat.fly.steer.lookahead import CONE_DEG, SPEED_WEIGHT, lookahead_cost

DT, SPEED, L = 0.01, 3.0, 4.0


def _flight(vel, ticks=100):
    """K = len(vel) constant-velocity predictions of ``ticks`` ticks from the origin: (position, velocity)."""
    v = np.repeat(np.asarray(vel, float)[:, None, :], ticks, axis=1)
    return np.cumsum(v * DT, axis=1), v


def test_lookahead_cost_reads_the_scored_windows_as_the_score_does():
    d = np.array([0.0, 1.0, 0.0])
    s40, c40 = math.sin(math.radians(40)), math.cos(math.radians(40))
    pos, vel = _flight([[0, SPEED, 0], [0, 0.5 * SPEED, 0], [SPEED * s40, SPEED * c40, 0], [0, -1.0, 0]])
    cost = lookahead_cost(
        pos, vel, d, np.zeros(3), 50, speed=SPEED, body_length=L, dt=DT
    )  # past the hand-over: 2 windows
    tan = math.tan(math.radians(CONE_DEG))
    expected = [
        0.0,
        2 * SPEED_WEIGHT * 0.5,
        2 * ((SPEED * s40 - tan * SPEED * c40) / SPEED + SPEED_WEIGHT * (1 - c40)),
        2 * ((tan * 1.0) / SPEED + SPEED_WEIGHT * (SPEED + 1.0) / SPEED),
    ]
    np.testing.assert_allclose(cost, expected, rtol=1e-9, atol=1e-12)
    assert np.argmin(cost) == 0
    # at the command's start the hand-over's 0.5 s is not read: one window of the 1 s ahead, so half the cost
    np.testing.assert_allclose(
        lookahead_cost(pos, vel, d, np.zeros(3), 0, speed=SPEED, body_length=L, dt=DT),
        np.asarray(expected) / 2,
        atol=1e-12,
    )
    late = vel.copy()
    late[:, :50] = [9.0, -9.0, 0.0]  # anything inside the hand-over is not read
    np.testing.assert_allclose(
        lookahead_cost(pos, late, d, np.zeros(3), 0, speed=SPEED, body_length=L, dt=DT),
        np.asarray(expected) / 2,
        atol=1e-12,
    )


def test_lookahead_cost_of_a_hover_is_its_largest_distance_from_where_it_began():
    pos, vel = _flight([[0, 0, 0], [1.0, 0, 0], [0, 0, -2.0]])
    anchor = np.array([0.0, 0.0, 0.5])
    cost = lookahead_cost(pos + anchor, vel, np.zeros(3), anchor, 0, speed=SPEED, body_length=L, dt=DT)
    np.testing.assert_allclose(cost, [0.0, 1.0 * 100 * DT / L, 2.0 * 100 * DT / L])


def test_the_lookahead_predicts_the_flight_it_chooses(monkeypatch):
    """Each choice's 1 s prediction for the chosen network is what the pilot then flies (the same physics)."""
    from animat.fly.steer import pilot as pilot_module
    from animat.fly.steer.pilot import Pilot

    pilot = Pilot("pretrained:paper", "switch")
    for _ in range(50):
        pilot.tick()
    pilot.command("left")
    seen = []
    original = pilot_module.lookahead_cost

    def spy(position, velocity, *args, **kwargs):
        cost = original(position, velocity, *args, **kwargs)
        seen.append(position[int(np.argmin(cost))])
        return cost

    monkeypatch.setattr(pilot_module, "lookahead_cost", spy)  # the name the pilot calls
    flown = np.array([pilot.tick()["position"] for _ in range(100)])
    assert len(seen) == 2 and len(pilot._candidates) == 3
    np.testing.assert_allclose(seen[0][:50], flown[:50], atol=1e-3)
    np.testing.assert_allclose(seen[1][:50], flown[50:], atol=1e-3)


@pytest.mark.parametrize("controller", ["switch", "goal"])
def test_lookahead_zero_flies_the_plain_controller(controller):
    from animat.fly.steer.pilot import fly_script, load_steering

    steering = load_steering("pretrained:paper")
    assert set(steering.alternates) == {"forward", "back", "left", "right", "up", "down", "goal"}
    script = [("up", 0.6), ("left", 1.1)]
    plain = fly_script(dataclasses.replace(steering, alternates={}), script, controller)
    zero = fly_script(steering, script, controller, lookahead=0)
    ahead = fly_script(steering, script, controller)
    np.testing.assert_array_equal(zero["position"], plain["position"])
    assert not np.array_equal(ahead["position"], plain["position"])  # the lookahead chose another network at least once


def test_alternates_are_checked_when_a_set_loads(tmp_path):
    """A broken ``alternates`` entry is refused when the set loads, each with its own class and a one-line message:
    an unknown command, a network of the wrong shape and a non-list are ConfigError (a malformed set), a listed
    network that is not there is CheckpointError (as for the set's own networks)."""
    from animat.fly.steer.pilot import load_steering

    folder = tmp_path / "set"
    shutil.copytree(pretrained.resolve("pretrained:paper"), folder)
    spec = json.loads((folder / "steering.json").read_text())
    for alternates, error, match in (
        ({"sideways": ["forward"]}, ConfigError, "unknown command 'sideways'"),
        ({"goal": ["forward"]}, ConfigError, "does not fit its fly as a goal network"),
        ({"forward": "forwardC"}, ConfigError, "alternates of 'forward' need a list"),
        ({"left": ["nothing"]}, CheckpointError, "lists network 'nothing'"),
    ):
        (folder / "steering.json").write_text(json.dumps({**spec, "alternates": alternates}))
        with pytest.raises(error, match=match) as caught:
            load_steering(folder)
        assert type(caught.value) is error and len(str(caught.value).splitlines()) == 1, caught.value


def test_a_steering_config_names_alternates_of_the_commands_own_task(tmp_path):
    from animat.fly.steer.steering_set import read_steering_config

    base = (
        'speed = 2.0\n[networks.hover]\ntask = "hover"\n[networks.up]\ntask = "up"\n'
        '[networks.upB]\ntask = "up"\nseed = 1\n'
        '[networks.goal]\ntask = "goal"\n'
    )
    (tmp_path / "a.toml").write_text(base + '[alternates]\nup = ["upB"]\n')
    record = read_steering_config(tmp_path / "a.toml").record
    assert record.switch["up"] == "up" and record.alternates == {"up": ("upB",)}  # an alternate is never the set's own
    for bad, match in (
        ('up = ["hover"]', "no up network"),
        ('goal = ["up"]', "no goal network"),
        ('sideways = ["up"]', "command or goal"),
    ):
        (tmp_path / "b.toml").write_text(base + f"[alternates]\n{bad}\n")
        with pytest.raises(ConfigError, match=match) as caught:
            read_steering_config(tmp_path / "b.toml")
        assert len(str(caught.value).splitlines()) == 1, caught.value


def test_steer_refuses_a_negative_lookahead(tmp_path, animat_cli):
    code, _, err = animat_cli(
        "fly", "steer", "pretrained:paper", "--commands", "up:1", "--lookahead", "-1", "--out", str(tmp_path / "run")
    )
    assert code == 2 and "lookahead" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()
