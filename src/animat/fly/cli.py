"""``animat fly train|replay``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from animat import runs
from animat.console import console, print_summary, progress
from animat.errors import CheckpointError
from animat.config import cli_option, parse_list
from animat.fly.options import ReplayOptions, TrainConfig

app = typer.Typer(help="A flapping fly whose wings a neural network drives, evolved to fly.", no_args_is_help=True)


FLIGHT_KEYS = ["seconds", "final_height", "min_height_change_body_lengths", "mean_lateral_drift_body_lengths", "stroke_cycles", "stroke_cycles_per_3s", "crashed"]


@app.command("train")
def train_cmd(
    generations: Optional[int] = cli_option(TrainConfig, "generations", "--generations", "-g"),
    population: Optional[int] = cli_option(TrainConfig, "population", "--population", "-p", help="Flies per generation"),
    seconds: Optional[float] = cli_option(TrainConfig, "seconds", "--seconds", "-s"),
    fitness: Optional[str] = cli_option(TrainConfig, "fitness", "--fitness", "-f"),
    layers: Optional[str] = cli_option(TrainConfig, "layers", "--layers"),
    control_ms: Optional[float] = cli_option(TrainConfig, "control_ms", "--control-ms"),
    asymmetric: Optional[bool] = cli_option(TrainConfig, "asymmetric", "--asymmetric/--symmetric"),
    seed: Optional[int] = cli_option(TrainConfig, "seed", "--seed"),
    strategy: Optional[str] = cli_option(TrainConfig, "strategy", "--strategy"),
    backend: Optional[str] = cli_option(TrainConfig, "backend", "--backend"),
    address: Optional[str] = cli_option(TrainConfig, "address", "--address"),
    replay_seconds: Optional[float] = cli_option(TrainConfig, "replay_seconds", "--replay-seconds"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="TOML file of training options."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue the interrupted run in this directory."),
    preset: Optional[str] = typer.Option(None, "--preset", help="paper (the paper's fly, the default) | drosophila (the real-scale fruit fly; also set by the config file's preset key)"),
) -> None:
    """Evolve flies; writes a run directory with metrics, plots, the best genome and its flight."""
    from animat.fly.drosophila.options import selected
    from animat.fly.train import TrainConfig, train

    keys = ["best_fitness", "generations", "total_crashes", "mean_seconds_per_generation"] + [f"replay_{k}" for k in FLIGHT_KEYS]
    if selected(preset, config, resume):
        from animat.fly.drosophila.options import DrosophilaTrainConfig as TrainConfig
        from animat.fly.drosophila.train import SUMMARY_KEYS as keys, train

    options = dict(
        generations=generations, population=population, seconds=seconds, fitness=fitness, layers=parse_list(layers, "--layers", "15,20,20,3"),
        control_ms=control_ms, asymmetric=asymmetric, seed=seed, strategy=strategy, backend=backend, address=address, replay_seconds=replay_seconds,
    )
    cfg, run_dir = runs.start_or_resume(
        "fly", TrainConfig, resume=resume, config=config, out=out, options=options,
        may_change={"generations": "--generations", "backend": "--backend", "address": "--address"},
    )
    console.print(f"fly train: {cfg.population} flies × {cfg.generations} generations × {cfg.seconds:g} s, fitness {cfg.fitness}, run dir {run_dir}")
    start = time.perf_counter()
    with progress("gen", "best {task.fields[best]}  mean {task.fields[mean]}  crashes {task.fields[crashes]}") as bar:
        task = bar.add_task("train", total=cfg.generations, best="-", mean="-", crashes="-")

        def on_generation(row: dict) -> None:
            fmt = lambda v: "nan" if v is None else f"{float(v):.3f}"
            bar.update(task, completed=int(row["generation"]) + 1, best=fmt(row["best"]), mean=fmt(row["mean"]), crashes=row["crashes"])

        try:
            summary = train(cfg, run_dir, resume=resume is not None, on_generation=on_generation)
        except KeyboardInterrupt:
            console.print(f"interrupted; continue with: animat fly train --resume {run_dir}")
            raise
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    print_summary(summary, run_dir, keys + [k for k in summary if k.startswith("replay_check_")])


def _load_for_replay(source: Path):
    """A run directory (best_genome + config.json) or a genome file (.npz/.json saved by animat)."""
    from animat.evolve.genome_file import load_genome
    from animat.fly.model import FlyParams
    from animat.fly.train import TrainConfig

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
    source: Path = typer.Argument(..., help="Run directory, genome file (.npz) or a shipped pretrained:NAME (pretrained:drosophila-hover)."),
    seconds: Optional[float] = cli_option(ReplayOptions, "seconds", "--seconds", "-s"),
    anim_seconds: Optional[float] = cli_option(ReplayOptions, "anim_seconds", "--anim-seconds"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="TOML file with seconds / anim_seconds."),
) -> None:
    """Re-simulate a saved genome for any duration: trajectory.npz, plots, animation, summary.json."""
    from animat.fly.replay import write_replay
    from animat.viz.report import write_report

    from animat.fly.drosophila import replay as drosophila_replay
    from animat.pretrained import resolve

    opts = ReplayOptions.build(config, seconds=seconds, anim_seconds=anim_seconds)
    seconds, anim_seconds = float(opts.seconds), float(opts.anim_seconds)
    source = resolve(source)
    drosophila = drosophila_replay.load_for_replay(source)
    params, genome = drosophila or _load_for_replay(source)
    if drosophila:
        write_replay = drosophila_replay.write_replay
    run_dir = runs.new_run_dir("fly", "replay", out)
    summary = write_replay(params, genome, seconds, run_dir, anim_seconds=anim_seconds, title=f"replay of {source.name}")
    summary["source"] = str(source)
    runs.atomic_write_json(run_dir / "summary.json", summary)
    write_report(run_dir, params=params)
    keys = drosophila_replay.SUMMARY_KEYS if drosophila else FLIGHT_KEYS
    print_summary(summary, run_dir, keys + [k for k in summary if k.startswith("check_")])
