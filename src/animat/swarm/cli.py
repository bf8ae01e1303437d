"""``animat swarm run SCHEME``."""

from __future__ import annotations

import math
import time
from pathlib import Path

import typer
from rich.markup import escape

from animat import runs
from animat.config import declared_options, no_animation_option, parse_list
from animat.console import console, print_summary, progress
from animat.errors import ConfigError
from animat.swarm.options import SwarmOptions

app = typer.Typer(help="Multi-agent swarms: consensus, Van Loan schemes, Olfati-Saber flocking.", no_args_is_help=True)


def _numbers(text: str, what: str) -> list[float]:
    return parse_list(text, what, "1,2,3", float)


def _params(items: list[str]) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--param takes NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--param {name.strip()}: value must be a number, got {value!r}") from None
    return out


@app.command("run")
@declared_options(
    SwarmOptions,
    "agents",
    "dt",
    "steps",
    "seed",
    "scale",
    "algorithm",
    "dim",
    "spread",
    "neighbours",
    "record_every",
    flags={"agents": ("--agents", "-n"), "steps": ("--steps", "-k")},
)
def run_cmd(
    options: dict,
    scheme: str = typer.Argument(..., help="consensus | second-order | ellipse | segment | circle | flocking"),
    param: list[str] = typer.Option(
        [], "--param", "-p", help="Model parameter NAME=VALUE (repeatable): d, r, a, b, h, eps, c1, c2, alpha, ..."
    ),
    sphere: list[str] = typer.Option([], "--sphere", help="Sphere obstacle 'x,y[,z],R' (repeatable; algorithm 3)."),
    wall: list[str] = typer.Option([], "--wall", help="Wall 'px,py[,pz],nx,ny[,nz]' (point, normal into free space)."),
    obstacles: Path | None = typer.Option(None, "--obstacles", help="Obstacles file (JSON/TOML: spheres, walls)."),
    gamma_pos: str | None = typer.Option(None, "--gamma-pos", help="Gamma-agent start 'x,y[,z]'."),
    gamma_vel: str | None = typer.Option(None, "--gamma-vel", help="Gamma-agent velocity 'vx,vy[,vz]'."),
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of run options."),
) -> None:
    """Simulate a swarm; writes trajectory.npz, metrics.csv, plots/metrics.png, media/swarm.gif, summary.json."""
    from animat.swarm.run import SwarmConfig, write_run

    cfg = SwarmConfig.build(
        config,
        scheme=scheme,
        **options,
        params=_params(param),
        spheres=[_numbers(s, "--sphere") for s in sphere],
        walls=[_numbers(w, "--wall") for w in wall],
        obstacles_file=str(obstacles) if obstacles else None,
        gamma_pos=_numbers(gamma_pos, "--gamma-pos") if gamma_pos else None,
        gamma_vel=_numbers(gamma_vel, "--gamma-vel") if gamma_vel else None,
        animation=False if no_animation else None,
    )
    if cfg.scheme == "flocking":
        from animat.swarm.run import flock_setup

        flock_setup(cfg)  # bad obstacles or an obstacle over the start: fail before creating the run directory
    run_dir = runs.new_run_dir("swarm", cfg.scheme, out)
    warned = _announce(cfg)
    start = time.perf_counter()
    with progress("steps", transient=True, eta=False) as bar:
        task = bar.add_task("run", total=cfg.steps)
        summary = write_run(cfg, run_dir, on_progress=lambda k: bar.update(task, completed=min(k, cfg.steps)))
    for w in summary.get("warnings", []):
        if w != warned:  # printed above
            console.print(f"[yellow]note:[/] {escape(w)}")
    console.print(f"done in {time.perf_counter() - start:.1f} s")
    print_summary(summary, run_dir)


def _announce(cfg) -> str | None:
    """Prints the run in one line (scheme, agents, dt, steps, seed; flocking: algorithm, dimension, neighbours), its
    stability bound on dt where the scheme has one, and the time step's warning, which it returns (None: none)."""
    from animat.swarm.run import dt_warning, stability_bound

    head = f"swarm {cfg.scheme}: {cfg.agents} agents, dt {cfg.dt:g}, {cfg.steps} steps, seed {cfg.seed}"
    if cfg.scheme == "flocking":
        head += f", algorithm {cfg.algorithm}, {cfg.dim}D, {cfg.neighbours}"
    console.print(head)
    bound, warned = stability_bound(cfg), dt_warning(cfg)
    if bound is not None and math.isfinite(bound[0]):
        console.print(f"stability bound dt_max = {bound[0]:.6g} ({bound[1]}; dt / dt_max = {cfg.dt / bound[0]:.4g})")
    if warned:
        console.print(f"[bold yellow]warning:[/] {escape(warned)}")
    return warned
