"""``animat fly train|replay``."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from animat import runs
from animat.console import console, print_summary
from animat.errors import CheckpointError, ConfigError
from animat.evolve.checkpoint import load_genome
from animat.fly.model import FlyParams
from animat.config import load_toml
from animat.fly.train import TrainConfig, train

app = typer.Typer(help="A flapping fly whose wings a neural network drives, evolved to fly.", no_args_is_help=True)


def _layers(text: Optional[str]) -> Optional[list[int]]:
    if text is None:
        return None
    try:
        return [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise ConfigError(f"--layers must be integers like '15,20,20,3', got {text!r}") from None




FLIGHT_KEYS = ["seconds", "final_height", "min_height_change_body_lengths", "mean_lateral_drift_body_lengths", "stroke_cycles", "stroke_cycles_per_3s", "crashed"]


@app.command("train")
def train_cmd(
    generations: Optional[int] = typer.Option(None, "--generations", "-g", help="Number of generations [100]."),
    population: Optional[int] = typer.Option(None, "--population", "-p", help="Flies per generation [200]."),
    seconds: Optional[float] = typer.Option(None, "--seconds", "-s", help="Episode length (s) [3]."),
    fitness: Optional[str] = typer.Option(None, "--fitness", "-f", help="hover | mean-height | final-height | lateral (see animat.fly.tasks) \\[lateral]."),
    layers: Optional[str] = typer.Option(None, "--layers", help="Network layers, e.g. '15,20,20,3' \\[15,20,20,3; 18,20,20,6 with --asymmetric]."),
    control_ms: Optional[float] = typer.Option(None, "--control-ms", help="Control interval (ms) [10]."),
    asymmetric: Optional[bool] = typer.Option(None, "--asymmetric/--symmetric", help="Drive both wings (18 in, 6 out) \\[symmetric]."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed [0]."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="paper_ga (the paper's GA) | cma_es | snes | open_es (evosax evolution strategies) \\[paper_ga]."),
    backend: Optional[str] = typer.Option(None, "--backend", help="local | ray \\[local]."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --backend ray)."),
    replay_seconds: Optional[float] = typer.Option(None, "--replay-seconds", help="Replay length of the best fly (s) [30]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="TOML file of training options."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue the interrupted run in this directory."),
) -> None:
    """Evolve flies; writes a run directory with metrics, plots, the best genome and its flight."""
    options = dict(
        generations=generations, population=population, seconds=seconds, fitness=fitness, layers=_layers(layers),
        control_ms=control_ms, asymmetric=asymmetric, seed=seed, strategy=strategy, backend=backend, address=address, replay_seconds=replay_seconds,
    )
    cfg, run_dir = runs.start_or_resume(
        "fly", TrainConfig, resume=resume, config=config, out=out, options=options,
        may_change={"generations": "--generations", "backend": "--backend", "address": "--address"},
    )
    console.print(f"fly train: {cfg.population} flies × {cfg.generations} generations × {cfg.seconds:g} s, fitness {cfg.fitness}, run dir {run_dir}")
    start = time.perf_counter()
    columns = [
        TextColumn("gen"), MofNCompleteColumn(), BarColumn(),
        TextColumn("best {task.fields[best]}  mean {task.fields[mean]}  crashes {task.fields[crashes]}"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
    ]
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("train", total=cfg.generations, best="-", mean="-", crashes="-")

        def on_generation(row: dict) -> None:
            fmt = lambda v: "nan" if v is None else f"{float(v):.3f}"
            progress.update(task, completed=int(row["generation"]) + 1, best=fmt(row["best"]), mean=fmt(row["mean"]), crashes=row["crashes"])

        try:
            summary = train(cfg, run_dir, resume=resume is not None, on_generation=on_generation)
        except KeyboardInterrupt:
            console.print(f"interrupted; continue with: animat fly train --resume {run_dir}")
            raise
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    print_summary(summary, run_dir, ["best_fitness", "generations", "total_crashes", "mean_seconds_per_generation"] + [f"replay_{k}" for k in FLIGHT_KEYS] + [k for k in summary if k.startswith("replay_check_")])


def _load_for_replay(source: Path):
    """A run directory (best_genome + config.json) or a genome file (.npz/.json saved by animat)."""
    if source.is_dir():
        genome_file = source / "best_genome.npz"
        if not genome_file.exists():
            raise CheckpointError(f"{str(source)!r} holds no best_genome.npz; is it a fly training run directory?")
        params = TrainConfig.build(None, **runs.read_run_config(source, "a fly training run directory")).fly_params()
        saved = load_genome(genome_file)
        return params, saved.genome
    if not source.exists():
        raise CheckpointError(f"{str(source)!r} does not exist; give a run directory or a best_genome.npz")
    if source.suffix not in (".npz", ".json"):
        raise CheckpointError(f"{str(source)!r} is not a genome file (.npz with its .json) nor a run directory")
    saved = load_genome(source)
    params = FlyParams.from_dict(saved.extra.get("fly", {}))
    return params, saved.genome


@app.command("replay")
def replay_cmd(
    source: Path = typer.Argument(..., help="Run directory or genome file (.npz)."),
    seconds: Optional[float] = typer.Option(None, "--seconds", "-s", help="Simulated time (s) [30]."),
    anim_seconds: Optional[float] = typer.Option(None, "--anim-seconds", help="Seconds of flight in the animation [6]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="TOML file with seconds / anim_seconds."),
) -> None:
    """Re-simulate a saved genome for any duration: trajectory.npz, plots, animation, summary.json."""
    from animat.fly.replay import write_replay

    values = {"seconds": 30.0, "anim_seconds": 6.0}
    if config is not None:
        loaded = load_toml(config)
        unknown = sorted(set(loaded) - set(values))
        if unknown:
            raise ConfigError(f"unknown replay option(s) {unknown} in {str(config)!r}; expected some of {sorted(values)}")
        values.update(loaded)
    values.update({k: v for k, v in (("seconds", seconds), ("anim_seconds", anim_seconds)) if v is not None})
    seconds, anim_seconds = float(values["seconds"]), float(values["anim_seconds"])
    if not (0 < seconds < math.inf and 0 < anim_seconds < math.inf):
        raise ConfigError(f"--seconds and --anim-seconds must be finite and > 0, got {seconds} and {anim_seconds}")
    params, genome = _load_for_replay(source)
    run_dir = runs.new_run_dir("fly", "replay", out)
    summary = write_replay(params, genome, seconds, run_dir, anim_seconds=anim_seconds, title=f"replay of {source.name}")
    summary["source"] = str(source)
    runs.atomic_write_json(run_dir / "summary.json", summary)
    print_summary(summary, run_dir, FLIGHT_KEYS + [k for k in summary if k.startswith("check_")])
