"""The fly played live (``animat play fly SOURCE``): a steering set's :class:`~animat.fly.steer.pilot.Pilot` stepped
one control tick at a time by the play server (:mod:`animat.play`), its run directory that of ``fly steer``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from animat.errors import ConfigError
from animat.fly.steer.commands import COMMANDS
from animat.fly.steer.pilot import load_steering, make_pilot

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
    """``source``: a steering directory or ``pretrained:NAME`` of either preset; ``controller``, ``speed``, ``seed``,
    ``lookahead`` (s): as ``animat fly steer``'s. Every network is compiled before the play starts, so that no key
    waits seconds for it. The page draws the fly through its preset's view (:func:`view_of`: the paper's fly in
    real time and its units, the fruit fly in mm slowed down 10 times), which also sets ``rate``."""

    system = "fly"
    keys = KEYS
    targets = False

    def __init__(self, source: str, controller: str = "switch", speed=None, seed: int = 0, lookahead=None):
        self.source, self.options = source, {"controller": controller, "speed": speed, "seed": seed}
        self.options["lookahead"] = lookahead
        steering = load_steering(source)
        self._pilot = lambda: make_pilot(steering, **self.options)
        pilot = self._pilot()
        for name in COMMANDS:  # compile each network (and its lookahead) now
            try:
                pilot.command(name)
            except ConfigError:
                continue
            pilot.tick()
        self.reset()
        self.dt, self.params = self.pilot.dt, self.pilot.params
        self.view = view_of(self.params)
        self.rate = self.view.rate
        self.frame()  # compile the drawing too
        reach = ARENA_BODY_LENGTHS * self.params.body_length * self.view.scale
        self.arena = ((-reach, -reach, -0.25 * reach), (reach, reach, 0.25 * reach))

    def reset(self) -> None:
        self.pilot = self._pilot()
        self.start = np.asarray(self.pilot.state.pos, float).reshape(3)
        self.records: list[dict] = []

    def _pose(self) -> tuple[np.ndarray, ...]:
        pos, quat, wing = self.pilot.pose()
        return tuple(np.asarray(x, np.float32)[None] for x in (pos, quat, np.reshape(wing, (2, 3))))

    def scene(self):
        return self.view.scene(*self._pose())

    def step(self) -> None:
        if not (self.records and self.records[-1]["crashed"]):  # a crashed fly stays where it is
            self.records.append(self.pilot.tick())

    def command(self, name: str) -> None:
        self.pilot.command(name)

    def target(self, x: float, y: float) -> None:
        raise ConfigError("the fly takes commands, not targets")

    def status(self) -> dict[str, Any]:
        s, scale = self.pilot.state, self.view.scale
        return {
            "t": self.pilot.t,
            "position": np.asarray(s.pos) * scale,
            "velocity": np.asarray(s.vel) * scale,
            "command": self.pilot.name,
            "network": self.pilot.flying,
            "direction": self.pilot.direction,  # the command's world-frame unit vector (zeros for hover)
        }

    def frame(self) -> dict[str, dict[str, Any]]:
        body, wings = self.view.points(*self._pose())
        return {"body": {"positions": np.ravel(body)}, "wings": {"positions": np.ravel(wings)}}

    def steps(self) -> int:
        return len(self.records)

    def write(self, run_dir: Path, log: dict[str, Any]) -> dict[str, Any]:
        """``fly steer``'s run directory of the flight since the start (or the last reset)."""
        from animat.fly.steer.run import stack_ticks, write_steer_report, write_steer_run

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
        write_steer_report(run_dir, self.params)
        return summary


def open(source: str, agents: int | None = None, seed: int = 0) -> FlyLive:
    """``animat play fly SOURCE``'s session (``agents`` is the flock's option: refused here)."""
    if agents is not None:
        raise ConfigError("-n/--agents is the flock's option; the fly is one")
    return FlyLive(source, seed=seed)


class PaperView:
    """How the page draws the paper preset's fly: its body box and wing triangles in simulation units (u), in real
    time (``rate`` 1)."""

    rate = 1.0
    scale = 1.0  # scene units per simulation length unit

    def __init__(self, params):
        from animat.fly.geometry import points_function

        self.params, self._points = params, points_function(params)

    def scene(self, pos, quat, wing):
        from animat.fly.report import flight_scene

        return flight_scene(self.params, np.zeros(1), pos, quat, wing)

    def points(self, pos, quat, wing):
        return self._points(pos, quat, wing)


class DrosophilaView:
    """How the page draws the fruit fly: its spheroid body and wing outlines in mm, slowed down ``1 / rate`` times (at
    0.3 m/s it crosses 120 body lengths a second; slowed, the eye follows it and the page shows the factor). The wings
    are drawn at whatever phase of their 220 Hz beat each frame catches."""

    rate = 0.1
    scale = 1e3  # mm per m

    def __init__(self, params):
        self.params = params

    def scene(self, pos, quat, wing):
        from animat.fly.drosophila.report import flight_scene

        traj = {"position": pos, "quaternion": quat, "wing_angles": np.reshape(wing, (len(pos), 6))}
        return flight_scene(self.params, np.zeros(1), traj, np.arange(len(pos)), [])

    def points(self, pos, quat, wing):
        from animat.fly.drosophila.geometry import fly_world

        body, wings = fly_world(self.params, pos, quat, wing)
        return body * self.scale, wings * self.scale


def view_of(params) -> PaperView | DrosophilaView:
    """The view of the fly of ``params`` (:class:`animat.fly.model.FlyParams` or the fruit fly's)."""
    from animat.fly.drosophila.model import DrosophilaParams

    return (DrosophilaView if isinstance(params, DrosophilaParams) else PaperView)(params)
