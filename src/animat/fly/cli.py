"""``animat fly train|replay``."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import typer

from animat import interrupt, runs
from animat.config import animation_seconds, cli_option, no_animation_option, parse_list
from animat.console import console, print_summary, progress
from animat.errors import CheckpointError, ConfigError
from animat.fly.options import DistillConfig, ReplayOptions, SteerOptions, TrainConfig

app = typer.Typer(help="A flapping fly whose wings a neural network drives, evolved to fly.", no_args_is_help=True)


FLIGHT_KEYS = [
    "seconds",
    "final_height",
    "min_height_change_body_lengths",
    "mean_lateral_drift_body_lengths",
    "stroke_cycles",
    "stroke_cycles_per_3s",
    "crashed",
]


@app.command("train")
def train_cmd(
    generations: int | None = cli_option(TrainConfig, "generations", "--generations", "-g"),
    population: int | None = cli_option(TrainConfig, "population", "--population", "-p", help="Flies per generation"),
    seconds: float | None = cli_option(TrainConfig, "seconds", "--seconds", "-s"),
    fitness: str | None = cli_option(TrainConfig, "fitness", "--fitness", "-f"),
    layers: str | None = cli_option(TrainConfig, "layers", "--layers"),
    control_ms: float | None = cli_option(TrainConfig, "control_ms", "--control-ms"),
    asymmetric: bool | None = cli_option(TrainConfig, "asymmetric", "--asymmetric/--symmetric"),
    seed: int | None = cli_option(TrainConfig, "seed", "--seed"),
    strategy: str | None = cli_option(TrainConfig, "strategy", "--strategy"),
    backend: str | None = cli_option(TrainConfig, "backend", "--backend"),
    address: str | None = cli_option(TrainConfig, "address", "--address"),
    replay_seconds: float | None = cli_option(TrainConfig, "replay_seconds", "--replay-seconds"),
    anim_seconds: float | None = cli_option(TrainConfig, "anim_seconds", "--anim-seconds"),
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of training options."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the interrupted run in this directory."),
    preset: str | None = typer.Option(
        None,
        "--preset",
        help="paper (the paper's fly) | drosophila (the real-scale fruit fly; also set by the config file's preset "
        "key). \\[default: paper]",
    ),
    task: str | None = cli_option(TrainConfig, "task", "--task"),
    speed: float | None = cli_option(TrainConfig, "speed", "--speed"),
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
    from animat.fly.drosophila.options import selected
    from animat.fly.train import TrainConfig, replay_note, train

    if from_run is not None and resume is not None:
        raise ConfigError("--from starts a new run and --resume continues one; give one of them")
    keys = ["best_fitness", "generations", "total_crashes", "mean_seconds_per_generation"] + [
        f"replay_{k}" for k in FLIGHT_KEYS
    ]
    drosophila = selected(preset, config, resume)
    if drosophila:
        paper_only = {
            "--task": task,
            "--speed": speed,
            "--control-ms": control_ms,
            "--asymmetric/--symmetric": asymmetric,
        }
        if given := [flag for flag, value in paper_only.items() if value is not None]:
            raise ConfigError(
                f"{', '.join(given)}: the paper preset's options; the drosophila preset trains its hover, "
                "both wings under one network that acts once per wingbeat"
            )
        from animat.fly.drosophila.options import DrosophilaTrainConfig as TrainConfig
        from animat.fly.drosophila.train import SUMMARY_KEYS as keys
        from animat.fly.drosophila.train import train

    options = dict(
        generations=generations,
        population=population,
        seconds=seconds,
        fitness=fitness,
        layers=parse_list(layers, "--layers", "15,20,20,3"),
        control_ms=control_ms,
        asymmetric=asymmetric,
        seed=seed,
        strategy=strategy,
        backend=backend,
        address=address,
        replay_seconds=replay_seconds,
        anim_seconds=animation_seconds(no_animation, anim_seconds),
        **({} if drosophila else {"task": task, "speed": speed}),
    )
    if from_run is not None:
        from animat.fly.train import check_source

        check_source(TrainConfig.build(config, **options), from_run)  # refused before a run directory is made
    cfg, run_dir = runs.start_or_resume(
        "fly",
        TrainConfig,
        resume=resume,
        config=config,
        out=out,
        options=options,
        may_change={
            "generations": "--generations",
            "backend": "--backend",
            "address": "--address",
            "anim_seconds": "--anim-seconds/--no-animation",
        },
    )
    if resume is not None and cfg.stages and generations is not None:
        raise ConfigError(
            "--generations: a run in stages resumes with each stage's own generations (its config.json's stages)"
        )
    describe = lambda c: (
        f"{c.population} flies × {c.generations} generations × {c.seconds:g} s, "
        f"{getattr(c, 'label', 'fitness ' + str(c.fitness))}"
    )
    staged = f" in {len(cfg.stages) + 1} stages (animat.fly.curriculum)" if cfg.stages else ""
    console.print(f"fly train: {describe(cfg)}{staged}, run dir {run_dir}")
    start = time.perf_counter()
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
            console.print(f"stage {k}/{n}: {describe(stage_cfg)}, {stage_cfg.strategy}")
            label[0] = f"stage {k}/{n}"
            bar.reset(task, total=stage_cfg.generations, description=f"{label[0]} (compiling)")

        try:
            if cfg.stages:
                from animat.fly.curriculum import train_stages

                summary = train_stages(
                    cfg,
                    run_dir,
                    train,
                    resume=resume is not None,
                    from_run=from_run,
                    on_generation=on_generation,
                    on_stage=on_stage,
                )
            else:
                summary = train(cfg, run_dir, resume=resume is not None, from_run=from_run, on_generation=on_generation)
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat fly train --resume {run_dir}")
            raise
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    if note := replay_note(stage_configs(cfg)[-1] if cfg.stages else cfg, summary):
        console.print(note, markup=False)
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
    source: Path = typer.Argument(
        ..., help="Run directory, genome file (.npz) or a shipped pretrained:NAME (pretrained:drosophila-hover)."
    ),
    seconds: float | None = cli_option(ReplayOptions, "seconds", "--seconds", "-s"),
    anim_seconds: float | None = cli_option(ReplayOptions, "anim_seconds", "--anim-seconds"),
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file with seconds / anim_seconds."),
) -> None:
    """Re-simulate a saved genome for any duration: config.json, trajectory.npz, plots, animation (GIF, MP4),
    summary.json, report.html."""
    from animat.fly.drosophila import replay as drosophila_replay
    from animat.fly.replay import write_replay
    from animat.fly.report import write_fly_report
    from animat.pretrained import resolve

    opts = ReplayOptions.build(config, seconds=seconds, anim_seconds=animation_seconds(no_animation, anim_seconds))
    seconds, anim_seconds = float(opts.seconds), float(opts.anim_seconds)
    source = resolve(source)
    drosophila = drosophila_replay.load_for_replay(source)
    params, genome = drosophila or _load_for_replay(source)
    if drosophila:
        write_replay = drosophila_replay.write_replay
    run_dir = runs.new_run_dir("fly", "replay", out)
    record = {"system": "fly", "verb": "replay", "preset": "drosophila" if drosophila else "paper"}
    runs.atomic_write_json(run_dir / "config.json", {**record, "source": str(source), **asdict(opts)})
    summary = write_replay(
        params, genome, seconds, run_dir, anim_seconds=anim_seconds, title=f"replay of {source.name}"
    )
    summary["source"] = str(source)
    runs.atomic_write_json(run_dir / "summary.json", summary)
    write_fly_report(run_dir, params=params)
    keys = drosophila_replay.SUMMARY_KEYS if drosophila else FLIGHT_KEYS
    print_summary(summary, run_dir, keys + [k for k in summary if k.startswith("check_")])


@app.command("steer")
def steer_cmd(
    source: str = typer.Argument(
        ...,
        help="Steering directory (animat fly train-steering), pretrained:NAME (e.g. pretrained:paper), or a goal "
        "network's run directory (animat fly distill; flown by the goal controller).",
    ),
    commands: str | None = cli_option(SteerOptions, "commands", "--commands"),
    interactive: bool = typer.Option(
        False,
        "--interactive",
        help="Steer live from the keyboard instead: arrows, page up/down, space = hover, q = quit.",
    ),
    controller: str | None = cli_option(SteerOptions, "controller", "--controller"),
    speed: float | None = cli_option(SteerOptions, "speed", "--speed"),
    seed: int | None = cli_option(SteerOptions, "seed", "--seed"),
    anim_seconds: float | None = cli_option(SteerOptions, "anim_seconds", "--anim-seconds"),
    no_animation: bool = no_animation_option(),
    lookahead: float | None = cli_option(SteerOptions, "lookahead", "--lookahead"),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of steer options."),
) -> None:
    """Fly by command: a command script (or the keyboard) steers the fly; writes its trajectory, the
    steering score per command (summary.json), plots, an animation and report.html."""
    from animat.fly.report import write_fly_report
    from animat.fly.steer.pilot import goal_run
    from animat.fly.steer.run import fly_request, write_steer_run
    from animat.pretrained import resolve

    if controller is None and goal_run(resolve(source)):
        controller = "goal"  # a goal network's run holds no switch networks
    opts = SteerOptions.build(
        config,
        commands=commands,
        controller=controller,
        speed=speed,
        seed=seed,
        anim_seconds=animation_seconds(no_animation, anim_seconds),
        lookahead=lookahead,
    )
    if out is not None:
        runs.check_out(out)
    flight, params, target_speed, start = fly_request(source, opts, interactive=interactive)
    run_dir = runs.new_run_dir("fly", "steer", out)
    record = {
        "steering": source,
        "commands": opts.commands if not interactive else "interactive",
        "controller": opts.controller,
        "speed": target_speed,
        "seed": opts.seed,
        "lookahead": opts.lookahead,
    }
    summary = write_steer_run(
        run_dir,
        flight,
        params=params,
        speed=target_speed,
        config=record,
        anim_seconds=opts.anim_seconds,
        start=start,
        title=f"{opts.controller} controller",
    )
    write_fly_report(run_dir, params=params)
    print_summary(
        summary,
        run_dir,
        [
            "controller",
            "commands",
            "speed",
            "seconds",
            "all_ok",
            "segments_ok",
            "segments_scored",
            "min_direction_ok_fraction",
            "max_hover_distance_body_lengths",
            "crashed",
            "fell",
        ],
        where="summary.json holds the score of each command",
    )


@app.command("handovers")
def handovers_cmd(
    source: str = typer.Argument(..., help="Steering directory (animat fly train-steering) or pretrained:NAME."),
    out: Path = typer.Option(..., "--out", "-o", help="The start pool's .npz (must not exist)."),
    scripts: int = typer.Option(100, "--scripts", help="Random 20 s scripts to fly (every command once, 2-4 s each)."),
    seed: int = typer.Option(0, "--seed", help="Script i is drawn by seed + i."),
    speed: float | None = typer.Option(None, "--speed", help="Target speed (u/s). \\[default: the steering set's]"),
) -> None:
    """Record a start pool: the fly's state at every command hand-over of random scripts flown by the switch
    controller; train a steering network from it with start_pool = FILE (the states it must take over from)."""
    import numpy as np

    from animat.fly.steer.pilot import handover_states, load_steering

    if out.exists():
        raise ConfigError(f"{str(out)!r} exists; give a new file (a start pool is never overwritten)")
    if speed is not None and not (np.isfinite(speed) and speed > 0):
        raise ConfigError(f"--speed must be a finite number of u/s > 0, got {speed}")
    states = handover_states(load_steering(source), scripts, seed, speed)
    runs.atomic_save_npz(out, **states)
    speeds, spins = np.linalg.norm(states["vel"], axis=1), np.linalg.norm(states["omega"], axis=1)
    print_summary(
        {
            "states": len(speeds),
            "median_speed": float(np.median(speeds)),
            "p90_speed": float(np.percentile(speeds, 90)),
            "median_angular_speed": float(np.median(spins)),
        },
        out,
        ["states", "median_speed", "p90_speed", "median_angular_speed"],
        where="vel, quat, omega and wing of each state",
    )


@app.command("distill")
def distill_cmd(
    source: str | None = typer.Argument(
        None, help="Steering directory whose switch networks teach (one per command), or pretrained:NAME."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Run directory of the goal network (must not hold an earlier run)."
    ),
    rounds: int | None = cli_option(DistillConfig, "rounds", "--rounds"),
    episodes: int | None = cli_option(DistillConfig, "episodes", "--episodes"),
    seconds: float | None = cli_option(DistillConfig, "seconds", "--seconds"),
    hidden: str | None = cli_option(DistillConfig, "hidden", "--hidden"),
    epochs: int | None = cli_option(DistillConfig, "epochs", "--epochs"),
    start_pool: str | None = cli_option(DistillConfig, "start_pool", "--start-pool"),
    seed: int | None = cli_option(DistillConfig, "seed", "--seed"),
    no_animation: bool = no_animation_option(),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of distill options."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue the interrupted distillation in this directory (--rounds may grow)."
    ),
) -> None:
    """Learn one goal network from a steering set's switch networks (DAgger): it flies more of each round's
    random-command episodes, and learns the switch networks' outputs in the states it reaches."""
    from animat.fly.steer.distill import check_teacher, distill
    from animat.fly.steer.pilot import load_steering

    options = dict(
        rounds=rounds,
        episodes=episodes,
        seconds=seconds,
        hidden=parse_list(hidden, "--hidden", "64,64"),
        epochs=epochs,
        start_pool=start_pool,
        seed=seed,
        anim_seconds=animation_seconds(no_animation, None),
    )
    if resume is not None:
        if (
            source is not None
            or config is not None
            or out is not None
            or any(v is not None for k, v in options.items() if k != "rounds")
        ):
            raise ConfigError(
                "--resume continues a distillation with its own options and teacher; only --rounds may change"
            )
        stored = dict(runs.read_run_config(resume, "a fly distill run directory (--resume)").get("distilled") or {})
        if not stored:
            raise ConfigError(
                f"--resume {str(resume)!r}: its config.json records no distillation (is it an animat fly distill run?)"
            )
        source = stored.pop("teacher")
        stored.pop("teacher_sha256", None)
        cfg = DistillConfig.build(None, **{**stored, **({"rounds": rounds} if rounds is not None else {})})
        run_dir = resume
    else:
        if source is None:
            raise ConfigError("give the steering directory whose switch networks teach (or --resume RUN_DIR)")
        cfg = DistillConfig.build(config, **options)
        run_dir = None
    if out is not None:
        runs.check_out(out)
    steering = load_steering(source)
    check_teacher(steering)
    run_dir = run_dir or runs.new_run_dir("fly", "distill", out)
    console.print(
        f"fly distill: {cfg.rounds} rounds × {cfg.episodes} episodes × {cfg.seconds:g} s from {source}, hidden "
        f"{cfg.hidden}, run dir {run_dir}"
    )
    with progress(
        "round", "loss {task.fields[loss]}  on-policy {task.fields[on_policy]}  crashes {task.fields[crashes]}"
    ) as bar:
        task = bar.add_task("distill", total=cfg.rounds, loss="-", on_policy="-", crashes="-")

        def on_round(row: dict) -> None:
            fmt = lambda v: "-" if v is None else f"{float(v):.4f}"
            bar.update(
                task,
                completed=int(row["round"]) + 1,
                loss=fmt(row["loss"]),
                on_policy=fmt(row["on_policy_loss"]),
                crashes=row["goal_crashes"],
            )

        try:
            summary = distill(
                steering, cfg, Path(run_dir), resume=resume is not None, teacher=str(source), on_round=on_round
            )
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat fly distill --resume {run_dir}")
            raise
    print_summary(
        summary,
        run_dir,
        [
            "rounds",
            "samples",
            "final_loss",
            "final_on_policy_loss",
            "goal_crashes",
            "train_seconds",
            "replay_segments_ok",
            "replay_segments_scored",
            "replay_crashed",
        ],
    )


@app.command("train-steering")
def train_steering_cmd(
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Steering directory: steering.json and one run directory per network (an interrupted set continues).",
    ),
    config: Path = typer.Option(
        ...,
        "--config",
        "-c",
        help="TOML of the set (e.g. configs/fly_steer.toml): preset, speed and the \\[train] and \\[networks.NAME] "
        "tables.",
    ),
    networks: str | None = typer.Option(
        None, "--networks", help="Train only these networks, e.g. 'goal' (two processes can share a set)."
    ),
) -> None:
    """Train a steering set (hover, directions, goal network) into one directory, resumably."""
    from animat.fly.steer.train import train_steering

    only = None if networks is None else [n.strip() for n in networks.split(",") if n.strip()]
    done = train_steering(
        config, out, only, on_network=lambda name, what: console.print(f"train-steering: {name} {what}")
    )
    summary = {
        f"{name}_best_fitness": float(d["summary"]["best_fitness"])
        for name, d in done.items()
        if "best_fitness" in d["summary"]
    }
    summary.update({f"{name}_seconds": round(d["seconds"], 1) for name, d in done.items()})
    print_summary(summary, out, list(summary))


@app.command("score-steering")
def score_steering_cmd(
    source: str = typer.Argument(
        ..., help="Steering directory (animat fly train-steering) or pretrained:NAME, e.g. pretrained:paper."
    ),
    scripts: int = typer.Option(20, "--scripts", "-n", help="Random 20 s command scripts to fly (every command once)."),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Seed of the first script (script i: seed + i). pretrained:paper saw none of 11000 and above in training.",
    ),
    controller: str = typer.Option("both", "--controller", help="switch | goal | both (one after the other)."),
    lookahead: float | None = cli_option(SteerOptions, "lookahead", "--lookahead"),
) -> None:
    """Fly random command scripts with a steering set and print its pass rates: segments (one command each) and
    whole scripts; writes nothing."""
    from animat.config import require
    from animat.fly.options import CONTROLLERS
    from animat.fly.steer.pass_rates import pass_rates
    from animat.fly.steer.pilot import load_steering

    require("--scripts", scripts, ge=1)
    require("--controller", controller, choices=(*CONTROLLERS, "both"))
    lookahead = SteerOptions.build(None, lookahead=lookahead).lookahead
    steering = load_steering(source)
    summary: dict = {"steering": source, "scripts": scripts, "seed": seed, "lookahead_s": lookahead}
    for name in CONTROLLERS if controller == "both" else (controller,):
        with progress(f"{name}: scripts") as bar:
            task = bar.add_task(name, total=scripts)
            rates = pass_rates(steering, name, scripts, seed, lookahead, on_script=lambda i: bar.advance(task))
        summary.update({f"{name}_{k}": v for k, v in rates.items()})
    print_summary(summary, None)
