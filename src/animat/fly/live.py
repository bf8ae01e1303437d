"""The fly played live (``animat play fly SOURCE``): a steering set's :class:`~animat.fly.steer.pilot.Pilot` stepped
one control tick at a time by the play server (:mod:`animat.play`), its run directory that of ``fly steer``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from animat.errors import ConfigError
from animat.fly.steer.commands import COMMANDS
from animat.fly.steer.pilot import Pilot, load_steering

KEYS = {
    "ArrowUp": "forward",
    "ArrowDown": "back",
    "ArrowLeft": "left",
    "ArrowRight": "right",
    "PageUp": "up",
    "PageDown": "down",
    " ": "hover",
}
ARENA_BODY_LENGTHS = 40.0  # the page's ground grid reaches this far from the start, each way
ANIM_SECONDS = 20.0  # seconds of flight in media/flight.gif, as fly steer's default


class FlyLive:
    """``source``: a steering directory or ``pretrained:NAME``; ``controller``, ``speed`` (u/s), ``seed``,
    ``lookahead`` (s): as ``animat fly steer``'s. Every network is compiled before the play starts, so that no key
    waits seconds for it."""

    system = "fly"
    rate = 1.0
    keys = KEYS
    targets = False

    def __init__(self, source: str, controller: str = "switch", speed=None, seed: int = 0, lookahead=None):
        from animat.fly.geometry import points_function

        self.source, self.options = source, {"controller": controller, "speed": speed, "seed": seed}
        self.options["lookahead"] = lookahead
        steering = load_steering(source)
        self._pilot = lambda: Pilot(steering, **self.options)
        pilot = self._pilot()
        for name in COMMANDS:  # compile each network (and its lookahead) now
            try:
                pilot.command(name)
            except ConfigError:
                continue
            pilot.tick()
        self.reset()
        self.dt, self.params = self.pilot.dt, self.pilot.params
        self._points = points_function(self.params)
        self.frame()  # compile the drawing too
        reach = ARENA_BODY_LENGTHS * self.params.body_length
        self.arena = ((-reach, -reach, -0.25 * reach), (reach, reach, 0.25 * reach))

    def reset(self) -> None:
        self.pilot = self._pilot()
        self.start = np.asarray(self.pilot.state.pos, float).reshape(3)
        self.records: list[dict] = []

    def _pose(self) -> tuple[np.ndarray, ...]:
        s = self.pilot.state
        return tuple(np.asarray(x, np.float32)[None] for x in (s.pos, s.quat, np.reshape(s.wing, (2, 3))))

    def scene(self):
        from animat.fly.report import flight_scene

        return flight_scene(self.params, np.zeros(1), *self._pose())

    def step(self) -> None:
        if not (self.records and self.records[-1]["crashed"]):  # a crashed fly stays where it is
            self.records.append(self.pilot.tick())

    def command(self, name: str) -> None:
        self.pilot.command(name)

    def target(self, x: float, y: float) -> None:
        raise ConfigError("the fly takes commands, not targets")

    def status(self) -> dict[str, Any]:
        s = self.pilot.state
        return {
            "t": self.pilot.t,
            "position": np.asarray(s.pos),
            "velocity": np.asarray(s.vel),
            "command": self.pilot.name,
            "network": self.pilot.flying,
            "direction": self.pilot.direction,  # the command's world-frame unit vector (zeros for hover)
        }

    def frame(self) -> dict[str, dict[str, Any]]:
        body, wings = self._points(*self._pose())
        return {"body": {"positions": np.ravel(body)}, "wings": {"positions": np.ravel(wings)}}

    def steps(self) -> int:
        return len(self.records)

    def write(self, run_dir: Path, log: dict[str, Any]) -> dict[str, Any]:
        """``fly steer``'s run directory of the flight since the start (or the last reset)."""
        from animat.fly.report import write_fly_report
        from animat.fly.steer.run import stack_ticks, write_steer_run

        config = {"steering": self.source, "commands": "live (animat play)", **self.options}
        config["speed"] = self.pilot.speed
        summary = write_steer_run(
            run_dir,
            stack_ticks(self.records),
            params=self.params,
            speed=self.pilot.speed,
            config=config,
            anim_seconds=ANIM_SECONDS,
            start=self.start,
            title=f"{self.options['controller']} controller, live",
        )
        write_fly_report(run_dir, params=self.params)
        return summary


def open(source: str, agents: int | None = None, seed: int = 0) -> FlyLive:
    """``animat play fly SOURCE``'s session (``agents`` is the flock's option: refused here)."""
    if agents is not None:
        raise ConfigError("-n/--agents is the flock's option; the fly is one")
    return FlyLive(source, seed=seed)
