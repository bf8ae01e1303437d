"""``animat fly train|replay`` and the fly's command group (its steering verbs: :mod:`animat.fly.cli_steer`)."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import typer

from animat import interrupt, runs
from animat.config import declared_options, no_animation_option
from animat.console import console, print_summary, progress
from animat.errors import ConfigError
from animat.fly import cli_steer, presets
from animat.fly.options import ReplayOptions, TrainConfig

app = typer.Typer(help="A flapping fly whose wings a neural network drives, evolved to fly.", no_args_is_help=True)


RESUME_MAY_CHANGE = {  # the options a resumed run may change (option -> its flag)
    "generations": "--generations",
    "backend": "--backend",
    "address": "--address",
    "anim_seconds": "--anim-seconds/--no-animation",
}


@app.command("train")
@declared_options(
    TrainConfig,
    "generations",
    "population",
    "seconds",
    "fitness",
    "layers",
    "control_ms",
    "asymmetric",
    "seed",
    "strategy",
    "backend",
    "address",
    "replay_seconds",
    "anim_seconds",
    "task",
    "speed",
    flags={
        "generations": ("--generations", "-g"),
        "population": ("--population", "-p"),
        "seconds": ("--seconds", "-s"),
        "fitness": ("--fitness", "-f"),
        "asymmetric": ("--asymmetric/--symmetric",),
    },
    helps={"population": "Flies per generation"},
    examples={"layers": "15,20,20,3"},
)
def train_cmd(
    options: dict,
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of training options."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the interrupted run in this directory."),
    preset: str | None = typer.Option(None, "--preset", help=presets.help_text()),
    from_run: Path | None = typer.Option(
        None,
        "--from",
        help="Start from this run's final population (its last checkpoint; with an "
        "evolution strategy: centred on its best genome), with any new task, fitness and GA settings; the same "
        "network (a goal run's may add the command inputs: zero weights).",
    ),
) -> None:
    """Evolve flies; writes a run directory with metrics, plots, the best genome and its flight. With no options,
    the paper's settings (configs/fly_paper.toml: 200 flies × 100 generations × 3 s, lateral fitness), whose
    fly need not fly the 30 s replay; configs/fly_default.toml (make run) evolves one that does."""
    from animat.fly.curriculum import stage_configs
    from animat.fly.train import replay_note

    if from_run is not None and resume is not None:
        raise ConfigError("--from starts a new run and --resume continues one; give one of them")
    chosen = presets.select(preset, config, resume)
    presets.refuse_others(chosen, options)
    if no_animation:
        options["anim_seconds"] = 0.0
    if from_run is not None:
        from animat.fly.evolve import check_source
        from animat.pretrained import resolve

        from_run = resolve(from_run)
        check_source(chosen.config.build(config, **options), from_run)  # refused before a run directory is made
    cfg, run_dir = runs.start_or_resume(
        "fly",
        chosen.config,
        resume=resume,
        config=config,
        out=out,
        options=options,
        may_change=RESUME_MAY_CHANGE,
    )
    if resume is not None and cfg.stages and "generations" in options:
        raise ConfigError(
            "--generations: a run in stages resumes with each stage's own generations (its config.json's stages)"
        )
    staged = f" in {len(cfg.stages) + 1} stages (animat.fly.curriculum)" if cfg.stages else ""
    console.print(f"fly train: {_describe(cfg)}{staged}, run dir {run_dir}")
    start = time.perf_counter()
    summary = _evolve(cfg, run_dir, chosen.trainer(), resume=resume is not None, from_run=from_run)
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    if note := replay_note(stage_configs(cfg)[-1] if cfg.stages else cfg, summary):
        console.print(note, markup=False)
    print_summary(summary, run_dir, [*chosen.train_keys, *(k for k in summary if k.startswith("replay_check_"))])


def _describe(cfg) -> str:
    """A training config in words: flies × generations × seconds, and what they are trained for."""
    return (
        f"{cfg.population} flies × {cfg.generations} generations × {cfg.seconds:g} s, "
        f"{getattr(cfg, 'label', 'fitness ' + str(cfg.fitness))}"
    )


def _evolve(cfg, run_dir: Path, train, *, resume: bool, from_run: Path | None) -> dict:
    """``train`` (or, for a run in stages, :func:`animat.fly.curriculum.train_stages` over it) under a progress
    bar of generations; an interruption prints the ``--resume`` command. Returns the run's summary."""
    fields = "best {task.fields[best]}  mean {task.fields[mean]}  crashes {task.fields[crashes]}"
    with progress("{task.description}", fields) as bar:
        # a stage's first generation compiles the rollout (seconds; later ones take a fraction of that)
        label = ["gen"]
        task = bar.add_task("gen (compiling)", total=cfg.generations, best="-", mean="-", crashes="-")

        def on_generation(row: dict) -> None:
            fmt = lambda v: "nan" if v is None else f"{float(v):.3f}"
            bar.update(
                task,
                description=label[0],
                completed=int(row["generation"]) + 1,
                best=fmt(row["best"]),
                mean=fmt(row["mean"]),
                crashes=row["crashes"],
            )

        def on_stage(k: int, n: int, stage_cfg) -> None:
            console.print(f"stage {k}/{n}: {_describe(stage_cfg)}, {stage_cfg.strategy}")
            label[0] = f"stage {k}/{n}"
            bar.reset(task, total=stage_cfg.generations, description=f"{label[0]} (compiling)")

        try:
            if not cfg.stages:
                return train(cfg, run_dir, resume=resume, from_run=from_run, on_generation=on_generation)
            from animat.fly.curriculum import train_stages

            return train_stages(
                cfg, run_dir, train, resume=resume, from_run=from_run, on_generation=on_generation, on_stage=on_stage
            )
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat fly train --resume {run_dir}")
            raise


@app.command("replay")
@declared_options(ReplayOptions, "seconds", "anim_seconds", flags={"seconds": ("--seconds", "-s")})
def replay_cmd(
    options: dict,
    source: Path = typer.Argument(
        ..., help="Run directory, genome file (.npz) or a shipped pretrained:NAME (pretrained:drosophila-hover)."
    ),
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file with seconds / anim_seconds."),
) -> None:
    """Re-simulate a saved genome for any duration: config.json, trajectory.npz, plots, animation (GIF, MP4),
    summary.json, report.html."""
    from animat.pretrained import resolve
    from animat.viz.report import write_report

    if no_animation:
        options["anim_seconds"] = 0.0
    opts = ReplayOptions.build(config, **options)
    seconds, anim_seconds = float(opts.seconds), float(opts.anim_seconds)
    source = resolve(source)
    preset = presets.of_source(source)
    params, genome = preset.load_for_replay(source)
    run_dir = runs.new_run_dir("fly", "replay", out)
    record = {"system": "fly", "verb": "replay", "preset": preset.name}
    runs.atomic_write_json(run_dir / "config.json", {**record, "source": str(source), **asdict(opts)})
    summary = preset.write_replay(
        params, genome, seconds, run_dir, anim_seconds=anim_seconds, title=f"replay of {source.name}"
    )
    summary["source"] = str(source)
    runs.atomic_write_json(run_dir / "summary.json", summary)
    write_report(run_dir, builders=preset.builders, params=params)
    print_summary(summary, run_dir, [*preset.replay_keys, *(k for k in summary if k.startswith("check_"))])


for _name, _command in cli_steer.COMMANDS.items():  # the steering verbs, after train and replay
    app.command(_name)(_command)
