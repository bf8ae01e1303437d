"""``animat swarm run SCHEME``: configuration, simulation and the run directory.

A run directory holds ``config.json`` (resolved), ``trajectory.npz`` (``positions`` (T, N, d),
``velocities`` where they exist, ``t``), ``metrics.csv`` (one row per recorded frame),
``summary.json`` (final metrics; the dt bound where one applies), ``plots/metrics.png`` and
``media/swarm.gif``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.config import check_instance, check_known, check_options, load_toml, require
from animat.errors import ConfigError
from animat.swarm import linear
from animat.swarm.defaults import DEFAULTS
from animat.swarm.flocking import FlockParams, Obstacles, check_start_outside
from animat.swarm.linear_runs import LINEAR_RUNS
from animat.swarm.metrics import metrics_series
from animat.swarm.options import SCHEMES, SwarmOptions

# per-scheme defaults: agents, dt, steps
LINEAR_PARAMS = {"alpha": 1.0, "omega": 1.0, "radius": 1.0, "weight": 1.0}
SCHEME_PARAMS = {
    "consensus": (),
    "second-order": ("alpha",),
    "ellipse": (),
    "segment": ("weight",),
    "circle": ("omega", "alpha", "radius", "weight"),
}  # the --param names each linear scheme uses
MAX_FRAMES = 150


@dataclass
class SwarmConfig(SwarmOptions):
    """Everything that defines a swarm run (defaults < config file < command line): the declared options
    of :class:`animat.swarm.options.SwarmOptions`, resolved per scheme and checked."""

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> SwarmConfig:
        values: dict[str, Any] = {}
        if file is not None:
            values.update(load_toml(file))
        values.update({k: v for k, v in overrides.items() if v is not None and v != [] and v != {}})
        if "params" in overrides and overrides["params"]:
            values["params"] = {**(load_toml(file).get("params", {}) if file else {}), **overrides["params"]}
        check_known((f.name for f in fields(cls)), values, "swarm option", file or "options")
        check_options(cls, values)
        return cls(**values).resolve()

    def resolve(self) -> SwarmConfig:
        require("scheme", self.scheme, choices=SCHEMES)
        for k, v in DEFAULTS[self.scheme].items():
            if getattr(self, k) is None:
                setattr(self, k, v)
        if self.record_every is None:
            self.record_every = default_record_every(int(self.steps))
        check_instance(self)
        self.agents, self.steps, self.seed = int(self.agents), int(self.steps), int(self.seed)
        self.dt, self.scale = float(self.dt), float(self.scale)
        if self.agents < 3:
            raise ConfigError(f"{self.scheme} needs at least 3 agents (--agents), got {self.agents}")
        if self.scheme != "flocking" and self.dim != 2:
            raise ConfigError(f"the {self.scheme} scheme is planar; --dim 3 applies to flocking only")
        if self.scheme == "flocking":
            self.flock_params()  # validates
            gamma_defaults(self)
            if self.algorithm != 3 and (self.spheres or self.walls or self.obstacles_file):
                raise ConfigError(f"obstacles act in algorithm 3 only; add --algorithm 3 (got {self.algorithm})")
        else:
            unknown = sorted(set(self.params) - set(SCHEME_PARAMS[self.scheme]))
            if unknown:
                raise ConfigError(
                    f"parameter(s) {unknown} do not apply to {self.scheme}; it takes "
                    f"{', '.join(SCHEME_PARAMS[self.scheme]) or 'none'}"
                )
            linear.check_params(
                self.scheme, scale=self.scale, **{k: self.linear_param(k) for k in SCHEME_PARAMS[self.scheme]}
            )
        return self

    def flock_params(self) -> FlockParams:
        return FlockParams.build(self.params, algorithm=self.algorithm, dt=self.dt)

    def linear_param(self, name: str) -> float:
        try:
            return float(self.params.get(name, LINEAR_PARAMS[name]))
        except (TypeError, ValueError):
            raise ConfigError(f"parameter {name} must be a number, got {self.params.get(name)!r}") from None

    def obstacles(self) -> Obstacles:
        dim = self.dim
        for s in self.spheres:
            if len(s) != dim + 1:
                raise ConfigError(f"a sphere in {dim}D is {dim + 1} numbers (centre, radius), got {s}")
        for w in self.walls:
            if len(w) != 2 * dim:
                raise ConfigError(f"a wall in {dim}D is {2 * dim} numbers (point, normal), got {w}")
        spheres = [(s[:dim], s[dim]) for s in map(list, self.spheres)]
        walls = [(w[:dim], w[dim:]) for w in map(list, self.walls)]
        if self.obstacles_file:
            spheres_f, walls_f = read_obstacles(self.obstacles_file, dim)
            spheres, walls = spheres + spheres_f, walls + walls_f
        if self.algorithm == 3 and not spheres and not walls:
            spheres, walls = default_obstacles(dim)
        return Obstacles.make(dim, spheres, walls)


def default_record_every(steps: int) -> int:
    """At most about MAX_FRAMES recorded frames: the smallest divisor of ``steps`` from ceil(steps /
    MAX_FRAMES) up to twice that (so that flocking, which records whole strides, runs exactly ``steps``),
    else ceil(steps / MAX_FRAMES)."""
    low = max(1, -(-steps // MAX_FRAMES))
    return next((k for k in range(low, 2 * low + 1) if steps % k == 0), low)


def read_obstacles(path: str | Path, dim: int) -> tuple[list, list]:
    """Obstacles from JSON or TOML: ``spheres = [{center = [...], radius = R}]``,
    ``walls = [{point = [...], normal = [...]}]``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"obstacles file {str(path)!r} not found")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"obstacles file {str(path)!r} is not valid JSON: {exc}") from None
    else:
        data = load_toml(path)
    form = "a table with lists 'spheres' ({center = [...], radius = R}) and 'walls' ({point = [...], normal = [...]})"
    try:
        if not isinstance(data, dict) or not all(isinstance(data.get(k, []), list) for k in ("spheres", "walls")):
            raise TypeError(form)
        spheres = [(s["center"], s["radius"]) for s in data.get("spheres", [])]
        walls = [(w["point"], w["normal"]) for w in data.get("walls", [])]
    except (KeyError, TypeError, IndexError):
        raise ConfigError(f"obstacles file {str(path)!r} must hold {form}") from None
    return spheres, walls


def default_obstacles(dim: int) -> tuple[list, list]:
    """Algorithm 3's default scene: two spheres across the path to the gamma-agent, and a floor."""
    if dim == 2:
        return [((120.0, 10.0), 12.0), ((170.0, -25.0), 10.0)], [((0.0, -70.0), (0.0, 1.0))]
    return [((120.0, 10.0, 0.0), 12.0), ((170.0, -25.0, 5.0), 10.0)], [((0.0, 0.0, -70.0), (0.0, 0.0, 1.0))]


def flock_start(cfg: SwarmConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random start: positions uniform in a box of half-width ``spread`` (default: a density of one
    150 agents in 2D: +-45) with no two closer than ``min_separation``; velocities uniform in
    [-speed, speed]^d."""
    prm = cfg.flock_params()
    n, dim = cfg.agents, cfg.dim
    spread = cfg.spread if cfg.spread is not None else 0.53 * prm.d * n ** (1.0 / dim)  # > 0: declared so, and d > 0
    sep = float(cfg.min_separation)
    if sep > 0 and n * (sep**dim) > 0.5 * (2 * spread) ** dim:
        raise ConfigError(
            f"cannot place {n} agents at least {sep} apart in a box of half-width {spread}; lower min_separation or "
            "raise spread"
        )
    q = rng.uniform(-spread, spread, (n, dim))
    if sep > 0:
        from scipy.spatial import cKDTree

        for _ in range(1000):  # redraw agents that start too close to an earlier one
            pairs = cKDTree(q).query_pairs(sep, output_type="ndarray")
            if pairs.size == 0:
                break
            bad = np.unique(pairs.max(axis=1))
            q[bad] = rng.uniform(-spread, spread, (bad.size, dim))
    p = rng.uniform(-cfg.speed, cfg.speed, (n, dim))
    return q, p


def gamma_defaults(cfg: SwarmConfig) -> tuple[np.ndarray, np.ndarray]:
    dim = cfg.dim
    pos = (
        cfg.gamma_pos
        if cfg.gamma_pos is not None
        else ([250.0] + [0.0] * (dim - 1) if cfg.algorithm == 3 else [0.0] * dim)
    )
    vel = cfg.gamma_vel if cfg.gamma_vel is not None else [0.0] * dim
    pos, vel = np.asarray(pos, float).ravel(), np.asarray(vel, float).ravel()
    if pos.shape != (dim,) or vel.shape != (dim,):
        raise ConfigError(f"--gamma-pos/--gamma-vel need {dim} numbers each, got {pos.tolist()} and {vel.tolist()}")
    return pos, vel


# --------------------------------------------------------------------------------------------------


def stability_bound(cfg: SwarmConfig) -> tuple[float, str] | None:
    """``(dt_max, what it bounds)`` of the scheme's explicit integration, or None where none applies:
    consensus and second-order consensus (exact, :mod:`animat.swarm.linear`), flocking (the velocity
    damping, :attr:`FlockParams.dt_max`; inf for algorithm 1)."""
    if cfg.scheme == "flocking":
        return cfg.flock_params().dt_max, "velocity damping"
    if cfg.scheme == "consensus":
        return linear.consensus_dt_max(cfg.agents, cfg.scale), "consensus"
    if cfg.scheme == "second-order":
        return linear.second_order_dt_max(cfg.agents, cfg.linear_param("alpha"), cfg.scale), "second-order consensus"
    return None


def dt_warning(cfg: SwarmConfig) -> str | None:
    """The warning for a time step at or above :func:`stability_bound` (None below it)."""
    bound = stability_bound(cfg)
    if bound is None or cfg.dt < bound[0]:
        return None
    return f"dt = {cfg.dt:g} exceeds the stability bound dt_max = {bound[0]:.6g} ({bound[1]}): Euler diverges"


def simulate(cfg: SwarmConfig, on_progress: Callable[[int], None] | None = None) -> dict:
    """Run the scheme; returns dict(positions, velocities, t, rows, summary, links, obstacles, warnings)."""
    rng = np.random.default_rng(cfg.seed)
    s = cfg.scheme
    out: dict[str, Any] = {"velocities": None, "links": None, "obstacles": None, "warnings": []}
    summary: dict[str, Any] = {"scheme": s, "agents": cfg.agents, "steps": cfg.steps, "dt": cfg.dt, "seed": cfg.seed}
    if s not in LINEAR_RUNS:
        return _simulate_flocking(cfg, rng, out, summary, on_progress)
    res, rows = LINEAR_RUNS[s](cfg, rng, summary)
    if s in ("consensus", "second-order") and dt_warning(cfg):
        out["warnings"].append(dt_warning(cfg))
    out.update(positions=res.positions, velocities=res.velocities, t=res.t, rows=rows, summary=summary)
    if on_progress:
        on_progress(cfg.steps)
    return out


def flock_setup(cfg: SwarmConfig) -> tuple[FlockParams, Obstacles, np.ndarray, np.ndarray]:
    """(params, obstacles, q0, p0) from the config; raises ConfigError if an obstacle overlaps the start."""
    rng = np.random.default_rng(cfg.seed)
    prm = cfg.flock_params()
    obs = cfg.obstacles() if cfg.algorithm == 3 else Obstacles.empty(cfg.dim)
    q0, p0 = flock_start(cfg, rng)
    check_start_outside(q0, obs)
    return prm, obs, q0, p0


def _simulate_flocking(cfg, rng, out, summary, on_progress):
    from animat.swarm.simulate import simulate_flock

    prm, obs, q0, p0 = flock_setup(cfg)
    qr, pr = gamma_defaults(cfg)
    summary["dt_max"] = prm.dt_max if math.isfinite(prm.dt_max) else None  # None: no damping bound (algorithm 1)
    if dt_warning(cfg):
        out["warnings"].append(dt_warning(cfg))
    run = simulate_flock(
        q0,
        p0,
        prm,
        cfg.steps,
        obstacles=obs,
        gamma_pos=qr,
        gamma_vel=pr,
        record_every=cfg.record_every,
        neighbours=cfg.neighbours,
        on_chunk=on_progress,
    )
    rows = metrics_series(run.positions, run.velocities, run.t, prm.d, prm.r)
    if obs.count:
        from animat.swarm.flocking import clearance

        for row, q in zip(rows, run.positions):
            row["min_clearance"] = float(clearance(q, obs).min())
    final = rows[-1]
    simulated = len(run.t) - 1
    if simulated * cfg.record_every != cfg.steps:
        out["warnings"].append(
            f"{simulated * cfg.record_every} steps simulated: {cfg.steps} rounded up to a multiple of --record-every "
            f"{cfg.record_every}"
        )
    summary["steps"] = simulated * cfg.record_every
    summary.update({f"final_{k}": v for k, v in final.items() if k not in ("frame", "t")})
    summary.update(
        algorithm=cfg.algorithm,
        dim=cfg.dim,
        neighbours=run.neighbours,
        capacity=run.capacity,
        list_width=run.width,
        list_builds=run.builds,
        overflow_events=len(run.events),
        params=prm.to_dict(),
        obstacles=obs.to_dict(),
        simulated_seconds=float(run.t[-1]),
    )
    out["warnings"].extend(run.events)
    out.update(
        positions=run.positions,
        velocities=run.velocities,
        t=run.t,
        rows=rows,
        summary=summary,
        links=prm.r,
        obstacles=obs.to_dict(),
        gamma=run.gamma,
    )
    return out


LOG_METRICS = (
    "error",
    "ellipse_residual",
    "spacing_spread",
    "deviation_energy",
    "velocity_mismatch",
)  # drawn on a log scale


def write_run(cfg: SwarmConfig, run_dir: Path, on_progress: Callable[[int], None] | None = None) -> dict:
    """Simulate and write the run directory; returns the summary (also in summary.json)."""
    from animat.swarm.report import write_swarm_report
    from animat.viz import plots
    from animat.viz.points import animate_points

    run_dir = Path(run_dir)
    runs.atomic_write_json(run_dir / "config.json", runs.config_record("swarm", "run", cfg))
    res = simulate(cfg, on_progress)
    arrays = {
        "positions": np.asarray(res["positions"], np.float32 if cfg.scheme == "flocking" else np.float64),
        "t": res["t"],
    }
    if res["velocities"] is not None:
        arrays["velocities"] = res["velocities"]
    if res.get("gamma") is not None:
        arrays["gamma"] = res["gamma"]
    runs.atomic_save_npz(run_dir / "trajectory.npz", **arrays)
    rows = res["rows"]
    fields_ = list(rows[0].keys())
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, fields_)
    plots.metrics_panel(
        rows,
        run_dir / "plots" / "metrics.png",
        title=f"{cfg.scheme}: metrics",
        skip=("frame", "theta0"),
        log_keys=LOG_METRICS,
    )
    summary = res["summary"]
    summary["warnings"] = res["warnings"]
    if cfg.animation:
        pos = np.asarray(res["positions"], float)
        with np.errstate(over="ignore", invalid="ignore"):
            pos = np.where(np.abs(pos) < 1e6, pos, np.nan)  # diverged states are left out of the drawing
        stride = max(1, -(-len(pos) // MAX_FRAMES))
        idx = np.arange(0, len(pos), stride)
        try:
            animate_points(
                pos[idx],
                run_dir / "media" / "swarm.gif",
                trails=8,
                links=res["links"],
                obstacles=res["obstacles"],
                times=res["t"][idx],
                title=cfg.scheme,
                follow=cfg.scheme == "flocking" and cfg.algorithm != 1,
            )
            summary["animation"] = "media/swarm.gif"
        except Exception as exc:  # the run's numbers matter more than its movie
            summary["warnings"].append(f"animation skipped: {exc}")
    runs.atomic_write_json(run_dir / "summary.json", summary)
    write_swarm_report(run_dir)
    return summary
