"""Declared options of ``animat swarm run`` (:class:`SwarmOptions`; resolved per scheme and checked by
:class:`animat.swarm.run.SwarmConfig`). Imports no simulation code: the command line reads its help
and defaults from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from animat.config import option
from animat.swarm.defaults import per_scheme

SCHEMES = ("consensus", "second-order", "ellipse", "segment", "circle", "flocking")


@dataclass
class SwarmOptions:
    """What a swarm run's config file and command line may set (None: the scheme's default)."""

    scheme: str = option("flocking", "consensus | second-order | ellipse | segment | circle | flocking")
    agents: int | None = option(None, "Number of agents", shown=per_scheme("agents"))
    dt: float | None = option(None, "Time step", gt=0, shown=per_scheme("dt"))
    steps: int | None = option(None, "Number of steps", ge=1, shown=per_scheme("steps"))
    seed: int = option(0, "Random seed", ge=0)
    scale: float = option(1.0, "Consensus scale s (1 or 0.5)")
    algorithm: int = option(2, "Flocking algorithm 1, 2 or 3", choices=(1, 2, 3))
    dim: int = option(2, "Flocking dimension 2 or 3", choices=(2, 3))
    params: dict = option(help="Model parameters: d, r, a, b, h, eps, c1, c2, alpha, ...", factory=dict)
    spheres: list = option(help="Sphere obstacles [[x, y(, z), R], ...]", factory=list)
    walls: list = option(help="Walls [[px, py(, pz), nx, ny(, nz)], ...]", factory=list)
    obstacles_file: str | None = option(None, "Obstacles file (JSON/TOML: spheres, walls)")
    gamma_pos: list | None = option(None, "Gamma-agent start")
    gamma_vel: list | None = option(None, "Gamma-agent velocity")
    spread: float | None = option(None, "Half-width of the random start box (flocking)", gt=0)
    speed: float = option(2.0, "Initial velocities uniform in [-speed, speed]^d (flocking)")
    min_separation: float = option(3.0, "No two agents start closer (flocking)")
    record_every: int | None = option(None, "Record every k-th step", ge=1, shown="about 150 frames in all")
    neighbours: str = option("grid", "grid | allpairs (flocking)", choices=("grid", "allpairs"))
    animation: bool = option(True, "Write the GIF")
    OPTION_NAME: ClassVar[str] = "{flag}"  # "--dt must be > 0"
