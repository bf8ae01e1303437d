"""``animat fly steer|handovers|distill|train-steering|score-steering``: the steering verbs (flying by command,
the start pools, the goal network's distillation, a steering set's training and pass rates), registered on the
fly's command group by :mod:`animat.fly.cli` after its training verbs."""

from __future__ import annotations

from pathlib import Path

import typer

from animat import interrupt, runs
from animat.config import declared_options, no_animation_option
from animat.console import console, print_summary, progress
from animat.errors import ConfigError
from animat.fly.options import DistillConfig, SteerOptions
from animat.fly.steer.score import HEADLINE

STEER_KEYS = ["controller", "commands", "speed", "seconds", *HEADLINE]


@declared_options(SteerOptions, "commands", "controller", "speed", "seed", "anim_seconds", "lookahead")
def steer_cmd(
    options: dict,
    source: str = typer.Argument(
        ...,
        help="Steering directory (animat fly train-steering), pretrained:NAME (e.g. pretrained:paper), or a goal "
        "network's run directory (animat fly distill; flown by the goal controller).",
    ),
    interactive: bool = typer.Option(
        False,
        "--interactive",
        help="Steer live from the keyboard instead: arrows, page up/down, space = hover, q = quit.",
    ),
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of steer options."),
) -> None:
    """Fly by command: a command script (or the keyboard) steers the fly; writes its trajectory, the
    steering score per command (summary.json), plots, an animation and report.html."""
    from animat.fly.steer.pilot import goal_run
    from animat.fly.steer.run import fly_request, write_steer_report, write_steer_run
    from animat.pretrained import resolve

    if "controller" not in options and goal_run(resolve(source)):
        options["controller"] = "goal"  # a goal network's run holds no switch networks
    if no_animation:
        options["anim_seconds"] = 0.0
    opts = SteerOptions.build(config, **options)
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
    write_steer_report(run_dir, params)
    print_summary(summary, run_dir, STEER_KEYS, where="summary.json holds the score of each command")


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


DISTILL_KEYS = [
    "rounds",
    "samples",
    "final_loss",
    "final_on_policy_loss",
    "goal_crashes",
    "train_seconds",
    "replay_segments_ok",
    "replay_segments_scored",
    "replay_crashed",
]


@declared_options(DistillConfig, "rounds", "episodes", "seconds", "hidden", "epochs", "start_pool", "seed")
def distill_cmd(
    options: dict,
    source: str | None = typer.Argument(
        None, help="Steering directory whose switch networks teach (one per command), or pretrained:NAME."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Run directory of the goal network (must not hold an earlier run)."
    ),
    no_animation: bool = no_animation_option(),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of distill options."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue the interrupted distillation in this directory (--rounds may grow)."
    ),
) -> None:
    """Learn one goal network from a steering set's switch networks (DAgger): it flies more of each round's
    random-command episodes, and learns the switch networks' outputs in the states it reaches."""
    from animat.fly.steer.distill import check_teacher
    from animat.fly.steer.pilot import load_steering

    if no_animation:
        options["anim_seconds"] = 0.0
    source, cfg = _distill_config(source, options, config=config, out=out, resume=resume)
    if out is not None:
        runs.check_out(out)
    steering = load_steering(source)
    check_teacher(steering)
    run_dir = resume or runs.new_run_dir("fly", "distill", out)
    console.print(
        f"fly distill: {cfg.rounds} rounds × {cfg.episodes} episodes × {cfg.seconds:g} s from {source}, hidden "
        f"{cfg.hidden}, run dir {run_dir}"
    )
    summary = _distill(steering, cfg, Path(run_dir), resume=resume is not None, teacher=str(source))
    print_summary(summary, run_dir, DISTILL_KEYS)


def _distill_config(source: str | None, options: dict, *, config: Path | None, out: Path | None, resume: Path | None):
    """``(teacher, DistillConfig)`` of ``animat fly distill``: the teacher ``source`` and ``config`` + ``options``;
    with ``resume``, the run's own (its config.json's ``distilled`` record), where only ``--rounds`` may change."""
    if resume is None:
        if source is None:
            raise ConfigError("give the steering directory whose switch networks teach (or --resume RUN_DIR)")
        return source, DistillConfig.build(config, **options)
    if source is not None or config is not None or out is not None or set(options) - {"rounds"}:
        raise ConfigError(
            "--resume continues a distillation with its own options and teacher; only --rounds may change"
        )
    stored = dict(runs.read_run_config(resume, "a fly distill run directory (--resume)").get("distilled") or {})
    if not stored:
        raise ConfigError(
            f"--resume {str(resume)!r}: its config.json records no distillation (is it an animat fly distill run?)"
        )
    teacher = stored.pop("teacher")
    stored.pop("teacher_sha256", None)
    return teacher, DistillConfig.build(None, **{**stored, **options})


def _distill(steering, cfg, run_dir: Path, *, resume: bool, teacher: str) -> dict:
    """:func:`animat.fly.steer.distill.distill` under a progress bar of rounds; an interruption prints the
    ``--resume`` command. Returns the run's summary."""
    from animat.fly.steer.distill import distill

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
            return distill(steering, cfg, run_dir, resume=resume, teacher=teacher, on_round=on_round)
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat fly distill --resume {run_dir}")
            raise


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


@declared_options(SteerOptions, "lookahead")
def score_steering_cmd(
    options: dict,
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
) -> None:
    """Fly random command scripts with a steering set and print its pass rates: segments (one command each) and
    whole scripts; writes nothing."""
    from animat.config import require
    from animat.fly.options import CONTROLLERS
    from animat.fly.steer.pass_rates import pass_rates
    from animat.fly.steer.pilot import load_steering

    require("--scripts", scripts, ge=1)
    require("--controller", controller, choices=(*CONTROLLERS, "both"))
    lookahead = SteerOptions.build(None, **options).lookahead
    steering = load_steering(source)
    summary: dict = {"steering": source, "scripts": scripts, "seed": seed, "lookahead_s": lookahead}
    for name in CONTROLLERS if controller == "both" else (controller,):
        with progress(f"{name}: scripts") as bar:
            task = bar.add_task(name, total=scripts)
            rates = pass_rates(steering, name, scripts, seed, lookahead, on_script=lambda i: bar.advance(task))
        summary.update({f"{name}_{k}": v for k, v in rates.items()})
    print_summary(summary, None)


#: the verbs, in the order ``animat fly --help`` lists them after train and replay: name -> command
COMMANDS = {
    "steer": steer_cmd,
    "handovers": handovers_cmd,
    "distill": distill_cmd,
    "train-steering": train_steering_cmd,
    "score-steering": score_steering_cmd,
}
