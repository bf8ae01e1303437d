"""``animat fly steer`` flying real networks: the run directory, the command trace, the live loop, and
issue 21's acceptance on random command scripts against ``pretrained:paper``."""

from __future__ import annotations

import json
import os
import pty
import threading
import io

import numpy as np
import pytest

from animat import pretrained, runs
from animat.fly.commands import COMMANDS, direction, heading, parse_script
from animat.fly.live import fly_interactive, fly_live
from animat.fly.steer_score import steer_score

PAPER = "pretrained:paper"
HAS_PAPER = "paper" in pretrained.available()
needs_paper = pytest.mark.skipif(not HAS_PAPER, reason="pretrained:paper is not shipped on this branch yet (the steer branch trains it)")


def random_script(rng: np.random.Generator, total: float = 20.0, shortest: float = 2.0, longest: float = 4.0) -> str:
    """Every command once, in a random order, each ``shortest``-``longest`` s (whole 0.1 s), ``total`` s in all."""
    tenths, n = int(round(total * 10)), len(COMMANDS)
    lo, hi = int(shortest * 10), int(longest * 10)
    while True:
        extra = rng.multinomial(tenths - n * lo, np.ones(n) / n)
        if (extra <= hi - lo).all():
            break
    order = rng.permutation(COMMANDS)
    return ",".join(f"{name}:{(lo + e) / 10:g}" for name, e in zip(order, extra))


def test_random_scripts_hold_every_command_for_2_to_4_s_and_20_s_in_all():
    for seed in range(20):
        script = parse_script(random_script(np.random.default_rng(seed)))
        assert sorted(n for n, _ in script) == sorted(COMMANDS)
        assert all(2.0 <= s <= 4.0 for _, s in script) and sum(s for _, s in script) == pytest.approx(20.0)


def synthetic_flight(script: str, speed: float = 2.0, dt: float = 0.01) -> dict[str, np.ndarray]:
    """A flight that does exactly what ``script`` commands at ``speed``, heading 0, wings still."""
    names = [n for n, s in parse_script(script) for _ in range(int(round(s / dt)))]
    d = np.array([direction(n, 0.0) for n in names])
    vel = speed * d
    T = len(names)
    return {"t": dt * np.arange(1, T + 1), "position": np.cumsum(vel * dt, axis=0), "velocity": vel, "quat": np.tile([1.0, 0, 0, 0], (T, 1)),
            "wing": np.zeros((T, 2, 3)), "command": np.array(names), "command_direction": d, "crashed": np.zeros(T, bool)}


def test_steer_run_directory_of_a_flight(tmp_path):
    from animat.fly.model import FlyParams
    from animat.fly.steer_run import write_steer_run
    from animat.viz.report import write_report

    flight = synthetic_flight("up:1,left:1.5,hover:1")
    params = FlyParams()
    summary = write_steer_run(tmp_path, flight, params=params, speed=2.0, config={"controller": "switch", "commands": "up:1,left:1.5,hover:1"},
                              anim_seconds=0.3)
    write_report(tmp_path, params=params)
    for name in ("config.json", "trajectory.npz", "summary.json", "plots/velocity.png", "plots/path.png", "media/flight.gif", "report.html"):
        assert (tmp_path / name).is_file(), name
    traj = runs.read_npz(tmp_path / "trajectory.npz", keys=("t", "position", "velocity", "command_direction", "command", "quaternion", "wing_angles"))
    assert traj["command"].dtype.kind == "U" and list(traj["command"][[0, 100, 250]]) == ["up", "left", "hover"]
    assert traj["t"].shape == (350,) and traj["command_direction"].shape == (350, 3) and traj["wing_angles"].shape == (350, 6)
    stored = json.loads((tmp_path / "summary.json").read_text())
    assert stored == json.loads(json.dumps(summary)) and stored["all_ok"] and stored["controller"] == "switch"
    assert [s["command"] for s in stored["segments"]] == ["up", "left", "hover"]
    up, left, hover = stored["segments"]
    assert up["direction_ok_fraction"] == 1.0 and left["mean_speed_along"] == pytest.approx(2.0, rel=1e-5)
    assert hover["max_hover_distance_body_lengths"] == pytest.approx(0.0, abs=1e-6)
    assert "command: left" in (tmp_path / "report.html").read_text()  # the replay's captions
