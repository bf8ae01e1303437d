"""The flock played live (``animat play swarm flocking -n N``): Olfati-Saber's algorithm 2
(:mod:`animat.swarm.flocking`) stepped one dt at a time by the play server (:mod:`animat.play`); a click on the
ground moves the γ-agent (the flock's target) there, arrows nudge it by the desired distance d, space puts it on
the flock's centre."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.errors import ConfigError

KEYS = {"ArrowUp": "north", "ArrowDown": "south", "ArrowLeft": "west", "ArrowRight": "east", " ": "stop"}
NUDGE = {"north": (0.0, 1.0), "south": (0.0, -1.0), "west": (-1.0, 0.0), "east": (1.0, 0.0)}
RECORD_EVERY = 10  # steps between the trajectory's samples (0.1 s at the default dt)


def _in_3d(x) -> np.ndarray:
    """Points ``(..., 2)`` in the plane as ``(..., 3)`` at z = 0."""
    x = np.asarray(x, np.float32)
    return np.concatenate([x, np.zeros(x.shape[:-1] + (1,), np.float32)], axis=-1)


class FlockLive:
    """A 2D flock of ``agents`` (default the scheme's 150) from the random start of ``seed``, the γ-agent at rest."""

    system = "swarm"
    rate = 1.0
    keys = KEYS
    targets = True

    def __init__(self, agents: int | None = None, seed: int = 0):
        from animat.swarm.flocking import FlockState
        from animat.swarm.run import SwarmConfig, flock_setup, gamma_defaults
        from animat.swarm.simulate import make_chunk

        self.cfg = SwarmConfig.build(None, scheme="flocking", agents=agents, seed=seed, algorithm=2, dim=2)
        self.prm, obs, self._q0, self._p0 = flock_setup(self.cfg)
        self._gamma = gamma_defaults(self.cfg)
        self._step = make_chunk(self.prm, obs, None, 1, 1)  # one all-pairs step, jitted
        self._state_type = FlockState
        self.dt = float(self.prm.dt)
        reach = 3.0 * float(np.abs(self._q0).max())
        self.arena = ((-reach, -reach, 0.0), (reach, reach, 0.0))
        self.reset()
        self.step()  # compile now, not at the first frame the page waits for
        self.reset()

    def reset(self) -> None:
        import jax.numpy as jnp

        qr, pr = self._gamma
        self.state = self._state_type(*(jnp.asarray(x, jnp.float32) for x in (self._q0, self._p0, qr, pr)))
        self.ticks, self.name = 0, "target (0, 0)"
        self.records: dict[str, list] = {"t": [], "positions": [], "velocities": [], "gamma": []}

    def scene(self):
        from animat.viz.scene import Scene

        radius = 0.12 * self.prm.d
        scene = Scene(np.zeros(1), view=(0.0, -0.35, 1.0), focus=1.2 * float(np.ptp(self._q0)), ground=-radius)
        scene.add_points("agents", _in_3d(self._q0)[None], radius=radius)
        scene.add_prims("γ-agent", ["sphere"], [[1.5 * radius] * 3], _in_3d(self._gamma[0])[None, None])
        return scene

    def step(self) -> None:
        self.state = self._step(self.state)[0]
        self.ticks += 1
        if self.ticks % RECORD_EVERY == 0:
            for key, value in zip(("positions", "velocities", "gamma"), (self.state.q, self.state.p, self.state.qr)):
                self.records[key].append(np.asarray(value, np.float32))
            self.records["t"].append(self.ticks * self.dt)

    def target(self, x: float, y: float) -> None:
        import jax.numpy as jnp

        self.state = self.state._replace(qr=jnp.asarray([x, y], jnp.float32), pr=jnp.zeros(2, jnp.float32))
        self.name = f"target ({x:.0f}, {y:.0f})"

    def command(self, name: str) -> None:
        if name not in KEYS.values():
            raise ConfigError(f"unknown command {name!r} for the flock; choose from {', '.join(KEYS.values())}")
        if name == "stop":
            x, y = np.asarray(self.state.q).mean(axis=0)
        else:
            x, y = np.asarray(self.state.qr) + self.prm.d * np.asarray(NUDGE[name])
        self.target(float(x), float(y))

    def status(self) -> dict[str, Any]:
        return {
            "t": self.ticks * self.dt,
            "position": _in_3d(np.asarray(self.state.q).mean(axis=0)),
            "velocity": _in_3d(np.asarray(self.state.p).mean(axis=0)),
            "command": self.name,
            "network": f"Olfati-Saber algorithm 2, {len(self._q0)} agents",
            "target": _in_3d(np.asarray(self.state.qr)),
        }

    def frame(self) -> dict[str, dict[str, Any]]:
        return {"agents": {"positions": _in_3d(self.state.q).ravel()}, "γ-agent": {"pos": _in_3d(self.state.qr)}}

    def steps(self) -> int:
        return self.ticks

    def write(self, run_dir: Path, log: dict[str, Any]) -> dict[str, Any]:
        """A flocking run directory (config, trajectory, metrics.csv, summary, report.html) of the samples every
        RECORD_EVERY steps since the start (or the last reset)."""
        from animat.swarm.metrics import metrics_series
        from animat.swarm.report import write_swarm_report

        arrays = {k: np.asarray(v, np.float32) for k, v in self.records.items()}
        if not len(arrays["t"]):
            raise ConfigError(f"the flock flew under {RECORD_EVERY} steps: nothing to write")
        config = asdict(replace(self.cfg, steps=self.ticks, record_every=RECORD_EVERY))  # as swarm run's: steps done
        runs.atomic_write_json(run_dir / "config.json", config)
        runs.atomic_save_npz(run_dir / "trajectory.npz", **arrays)
        rows = metrics_series(arrays["positions"], arrays["velocities"], arrays["t"], self.prm.d, self.prm.r)
        runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
        summary = {"scheme": "flocking", "agents": len(self._q0), "algorithm": 2, "dim": 2, "live": True}
        summary |= {f"final_{k}": v for k, v in rows[-1].items() if k not in ("frame", "t")}
        summary |= {"params": self.prm.to_dict(), "simulated_seconds": float(arrays["t"][-1])}
        runs.atomic_write_json(run_dir / "summary.json", summary)
        write_swarm_report(run_dir)
        return summary


def open(source: str, agents: int | None = None, seed: int = 0) -> FlockLive:
    """``animat play swarm flocking``'s session (the one scheme that can be played)."""
    if source != "flocking":
        raise ConfigError(f"animat play swarm plays the flocking scheme, not {source!r}: animat play swarm flocking")
    return FlockLive(agents, seed)
