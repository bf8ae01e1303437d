"""A live session without physics for the play server's tests: a point moving at its commanded velocity."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.viz.scene import Scene

VELOCITY = {"forward": (0.0, 1.0, 0.0), "up": (0.0, 0.0, 1.0), "hover": (0.0, 0.0, 0.0)}


class PointLive:
    system = "point"
    dt = 0.01
    rate = 1.0
    keys = {"ArrowUp": "forward", "PageUp": "up", " ": "hover"}
    targets = False
    arena = ((-5.0, -5.0, 0.0), (5.0, 5.0, 2.0))

    def __init__(self):
        self.reset()

    def reset(self):
        self.pos, self.name, self.ticks = np.zeros(3), "hover", 0

    def scene(self):
        scene = Scene(np.zeros(1))
        scene.add_points("point", self.pos[None, None], radius=0.1)
        return scene

    def step(self):
        self.pos = self.pos + self.dt * np.array(VELOCITY[self.name])
        self.ticks += 1

    def command(self, name):
        if name not in VELOCITY:
            raise ConfigError(f"unknown command {name!r}")
        self.name = name

    def target(self, x, y):
        raise ConfigError("no targets")

    def status(self):
        return {
            "t": self.ticks * self.dt,
            "position": self.pos,
            "velocity": np.array(VELOCITY[self.name]),
            "command": self.name,
            "network": "none",
        }

    def frame(self):
        return {"point": {"positions": self.pos}}

    def steps(self):
        return self.ticks

    def write(self, run_dir: Path, log):
        runs.atomic_write_json(Path(run_dir) / "summary.json", {"steps": self.ticks, "x": self.pos.tolist()})
        return {}


def open(source, agents=None, seed=0):
    return PointLive()
