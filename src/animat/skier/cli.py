"""``animat skier train|replay``."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from animat import interrupt, runs
from animat.config import animation_seconds, declared_options, no_animation_option, require
from animat.console import console, print_summary, progress
from animat.errors import CheckpointError, ConfigError
from animat.skier.options import TrainConfig

app = typer.Typer(
    help="A humanoid on skis with poles, keyframed joint angles evolved by a GA to ski forward.", no_args_is_help=True
)


KEYS = [
    "best_fitness",
    "best_net_forward_m",
    "best_fell",
    "first_generation_mean_fitness",
    "last_generation_mean_fitness",
    "mean_fitness_ratio_last_first",
    "seconds_per_generation",
    "replay_renderer",
    "replay_pushoff_legs_alternate",
    "replay_mean_pushoff_yaw_deg",
    "replay_mechanical_work_J",
    "replay_cost_of_transport_J_per_kg_m",
]


REPLAY_KEYS = [
    "seconds",
    "fitness",
    "net_forward_m",
    "fell",
    "max_tilt_deg",
    "renderer",
    "pushoff_legs_alternate",
    "mean_pushoff_yaw_deg",
    "mechanical_work_J",
    "cost_of_transport_J_per_kg_m",
]


def _check_from(config: Path | None, options: dict, from_run: Path | None, resume: Path | None) -> None:
    """Refuse (one line) a ``--from`` run that does not fit, before a run directory is made."""
    if from_run is None:
        return
    if resume is not None:
        raise ConfigError("--from starts a new run and --resume continues one; give one of them")
    from animat.skier.source import read_source  # loads MuJoCo

    read_source(TrainConfig.build(config, **options), from_run)


@app.command("train")
@declared_options(
    TrainConfig,
    "generations",
    "population",
    "seconds",
    "seed",
    "strategy",
    "friction",
    "hip",
    "backend",
    "ray_address",
    "nthread",
    "anim_seconds",
    flags={
        "generations": ("--generations", "-g"),
        "population": ("--population", "-p"),
        "seconds": ("--seconds", "-s"),
        "ray_address": ("--address", "--ray-address"),
        "nthread": ("--threads",),
    },
)
def train_cmd(
    options: dict,
    no_animation: bool = no_animation_option(),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file of training options."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the interrupted run in this directory."),
    from_run: Path | None = typer.Option(
        None,
        "--from",
        help="Start from this skier run: the keyframe GA from its final population (same population and genes), "
        "an evolution strategy centred on its best skier; any new terrain, fitness and GA settings.",
    ),
) -> None:
    """Evolve skiers; writes a run directory with metrics, plots, the best gene, its trajectory and a GIF."""
    from animat.skier.train import train

    options["anim_seconds"] = animation_seconds(no_animation, options.get("anim_seconds"))
    _check_from(config, options, from_run, resume)
    cfg, run_dir = runs.start_or_resume(
        "skier",
        TrainConfig,
        resume=resume,
        config=config,
        out=out,
        options=options,
        may_change={
            "generations": "--generations",
            "nthread": "--threads",
            "backend": "--backend",
            "ray_address": "--address",
            "anim_seconds": "--anim-seconds/--no-animation",
        },
    )
    console.print(
        f"skier train: {cfg.population} skiers × {cfg.generations} generations × {cfg.seconds:g} s, "
        f"{cfg.friction} friction, {cfg.hip} hip, {cfg.backend} backend, run dir {run_dir}"
    )
    start = time.perf_counter()
    with progress("gen", "best {task.fields[best]}  mean {task.fields[mean]}  fell {task.fields[fell]}") as bar:
        task = bar.add_task("train", total=cfg.generations, best="-", mean="-", fell="-")

        def on_generation(row: dict) -> None:
            bar.update(
                task,
                completed=int(row["generation"]) + 1,
                best=f"{row['best']:.2f}",
                mean=f"{row['mean']:.2f}",
                fell=row["fell"],
            )

        try:
            summary = train(cfg, run_dir, resume=resume is not None, from_run=from_run, on_generation=on_generation)
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat skier train --resume {run_dir}")
            raise
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    print_summary(summary, run_dir, KEYS)


@app.command("replay")
def replay_cmd(
    source: Path = typer.Argument(..., help="Run directory, or a gene JSON file (degrees)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
    seconds: float | None = typer.Option(
        None, "--seconds", "-s", help="Simulated time (s). \\[default: the run's, else 20]"
    ),
    friction: str | None = typer.Option(
        None, "--friction", help="anisotropic | isotropic. \\[default: the run's, else anisotropic]"
    ),
    anim_seconds: float = typer.Option(10.0, "--anim-seconds", help="Seconds in the animation (GIF, MP4; 0: none)."),
    no_animation: bool = no_animation_option(),
) -> None:
    """Re-simulate a saved gene: trajectory.npz, top view, animation (GIF, MP4), summary.json, report.html."""
    from animat.skier.gene import mirror
    from animat.skier.replay import write_replay
    from animat.skier.report import write_skier_report

    cfg, gene = _replay_source(source, friction)
    seconds = cfg.seconds if seconds is None else seconds
    require("--seconds", seconds, gt=0)
    anim_seconds = animation_seconds(no_animation, require("--anim-seconds", anim_seconds, ge=0))
    run_dir = runs.new_run_dir("skier", "replay", out)
    record = {"system": "skier", "verb": "replay", "source": str(source), "friction": cfg.friction}
    runs.atomic_write_json(run_dir / "config.json", {**record, "seconds": seconds, "anim_seconds": anim_seconds})
    summary = write_replay(
        cfg.skier_params(),
        mirror(gene),
        seconds,
        run_dir,
        anim_seconds=anim_seconds,
        frame_dt=cfg.frame_dt,
        title=f"replay of {source.name}",
        fall_deg=cfg.fall_deg,
        bonus=cfg.bonus,
        tau=cfg.tau,
    )
    summary.update(source=str(source), friction=cfg.friction)
    runs.atomic_write_json(run_dir / "summary.json", summary)
    write_skier_report(run_dir, params=cfg.skier_params())
    print_summary(summary, run_dir, REPLAY_KEYS)


def _replay_source(source: Path, friction: str | None):
    """The replay's settings and gene (n, m) degrees of ``source``: a skier training run directory (its config and
    best_gene.json), or a gene JSON file (the skier, friction, keyframe period and scoring it records); ``friction``,
    when given, in place of theirs."""
    from animat.skier.gene import load_gene_json
    from animat.skier.model import JOINTS
    from animat.skier.options import REPLAY_SETTINGS

    if source.is_dir():
        stored = runs.read_run_config(source, "a skier training run directory")
        if not (source / "best_gene.json").is_file():
            raise CheckpointError(f"{str(source)!r} holds no best_gene.json; is it a finished skier training run?")
        cfg = TrainConfig.from_run(stored, **({} if friction is None else {"friction": friction}))
        gene, _ = load_gene_json(source / "best_gene.json", cfg.n_states, cfg.n_joints)  # the run's settings: cfg
    elif source.is_file():  # the skier, friction, keyframe period and scoring the file records (a run's best_gene.json)
        gene, info = load_gene_json(source, n_states=None)  # 12 columns: one-axis hip, 14: two-axis
        recorded = info.get("skier") or {}
        skier = {k: v for k, v in recorded.items() if k not in ("friction", "hip")}
        cfg = (
            TrainConfig.from_run(  # a gene file records no training options: those of old runs, which a replay ignores
                {},
                friction=friction or recorded.get("friction", info.get("friction")),
                hip="one-axis" if gene.shape[1] == len(JOINTS) else "two-axis",
                tau=info["tau"],
                n_states=gene.shape[0],
                skier=skier,
                **{k: info[k] for k in REPLAY_SETTINGS if k in info},
            )
        )
    else:
        raise CheckpointError(f"{str(source)!r} does not exist; give a run directory or a gene JSON file")
    return cfg, gene
