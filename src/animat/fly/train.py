"""Glue between the paper's fly (preset ``paper``) and the engine: its fitness, the training run and its run
directory (the generations themselves, either preset's: :mod:`animat.fly.evolve`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from animat import interrupt, runs
from animat.evolve import loop
from animat.evolve.genome import Genome
from animat.evolve.genome_file import export_pickle, save_genome
from animat.evolve.network import layer_activations
from animat.fly.evolve import evolve
from animat.fly.options import TrainConfig
from animat.fly.replay import check_genome, write_replay
from animat.fly.steer.pilot import task_flight
from animat.fly.steer.score import HEADLINE
from animat.fly.tasks import FlyFitness, TrackFitness
from animat.viz import plots


def output_names(cfg: TrainConfig) -> list[str]:
    names = ["flap", "feather", "sweep"]
    return [f"{side} {n}" for side in ("right", "left") for n in names] if cfg.asymmetric else names


def start_pool_record(cfg: TrainConfig, out: Path, resume: bool) -> dict:
    """What config.json records of ``cfg.start_pool``: ``{"start_pool_sha256": digest}`` of the pool when the run
    began (read back from ``out``'s config.json on ``resume``); ``{}`` without a pool. The pool is checked now
    (:func:`animat.fly.steer.tracking.read_start_pool`), so a bad or changed one is a one-line error before any
    generation."""
    from animat.fly.steer.tracking import read_start_pool

    if cfg.start_pool is None:
        return {}
    path = Path(cfg.start_pool)
    if resume:
        sha = runs.read_run_config(out).get("start_pool_sha256")
    else:
        sha = runs.sha256_hex(path.read_bytes()) if path.is_file() else None
    read_start_pool(path, sha)
    return {"start_pool_sha256": sha}


def fitness_of(
    cfg: TrainConfig, params, activations: list[str], start_pool_sha256: str | None = None
) -> FlyFitness | TrackFitness:
    """The batched fitness of ``cfg``: its steering task (:class:`TrackFitness`; its start pool checked against
    ``start_pool_sha256``) or its ``fitness``."""
    if cfg.task is None:
        return FlyFitness(params, float(cfg.seconds), cfg.fitness, activations, cfg.starts, cfg.seed, cfg.noise)
    return TrackFitness(
        params,
        float(cfg.seconds),
        cfg.task,
        tuple(activations),
        cfg.starts,
        cfg.seed,
        float(cfg.speed),
        float(cfg.start_speed),
        float(cfg.start_angle),
        float(cfg.start_spin),
        tuple(float(s) for s in cfg.segment),
        float(cfg.position_weight),
        float(cfg.velocity_weight),
        cfg.start_pool,
        start_pool_sha256,
        float(cfg.window_power),
        float(cfg.cone_weight),
        float(cfg.cone_angle_deg),
    )


def task_replay(cfg: TrainConfig, out: Path) -> dict:
    """A steering task's replay: the best network flown from rest on its task for ``replay_seconds``
    (:func:`animat.fly.steer.pilot.task_flight`) into ``out/steer/`` as ``animat fly steer`` writes a flight
    (trajectory, per-segment steering score, velocity and path plots, captioned GIF). Returns the
    figures for summary.json (``replay_``-prefixed there)."""
    from animat.fly.steer.run import write_steer_run

    flight, steering, controller, script = task_flight(out, cfg.task, cfg.speed, cfg.replay_seconds)
    score = write_steer_run(
        out / "steer",
        flight,
        params=steering.params,
        speed=steering.speed,
        anim_seconds=cfg.anim_seconds,
        config={"network": str(out), "controller": controller, "commands": script, "speed": steering.speed},
        title=f"{cfg.task} network",
    )
    return {"dir": "steer", "commands": script, **{k: score[k] for k in HEADLINE}}


def replay_note(cfg: TrainConfig, summary: dict) -> str | None:
    """One line on a failed replay check of a fitness run's ``summary``: which checks failed and, where the
    replay is longer than the episodes the GA saw (the paper's 3 s against a 30 s replay), that this is why;
    None where every check passed (or the run has none: a steering task, the drosophila preset's own)."""
    failed = [k.removeprefix("replay_check_") for k, v in summary.items() if k.startswith("replay_check_") and not v]
    if not failed or cfg.preset != "paper":
        return None
    why = (
        f"the GA scored {cfg.seconds:g} s episodes and the replay flies {cfg.replay_seconds:g} s: nothing made the "
        "flies stay up longer than they were scored"
        if cfg.seconds < cfg.replay_seconds
        else "the best fly of this run does not meet them"
    )
    return (
        f"the best fly failed its replay's checks ({', '.join(failed)}): {why}; configs/fly_default.toml "
        "(make run) evolves a fly that flies its 30 s replay"
    )


def train(
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    from_run: Path | None = None,
    on_generation: Callable[[dict], Any] | None = None,
) -> dict:
    """Evolve flies per ``cfg`` into run directory ``out`` (already created, or the one being resumed).
    ``from_run``: a run directory whose final population (its last checkpoint) is the first generation
    here (any new task, fitness or GA settings; the same network), or with an evolution strategy whose
    best genome is the first distribution's centre; config.json records it as ``from``.

    Writes ``config.json``, ``metrics.csv`` (per generation), ``checkpoints/`` (resumable),
    ``best_genome.npz/.json`` (+ ``best_genome.pkl`` export), ``plots/fitness.png``, and a replay of the
    best fly (:func:`animat.fly.replay.write_replay`; with a steering task :func:`task_replay`, in
    ``steer/``); returns
    ``summary.json``'s content.
    """
    params = cfg.fly_params()
    activations = layer_activations(cfg.layers, cfg.activations)
    pool = start_pool_record(cfg, out, resume)
    t0 = time.perf_counter()
    best, best_fitness, history, generation = evolve(
        cfg,
        out,
        fitness_of(cfg, params, activations, pool.get("start_pool_sha256")),
        output_names(cfg),
        resume=resume,
        from_run=from_run,
        on_generation=on_generation,
        record=pool,
    )
    train_seconds = time.perf_counter() - t0
    if cfg.task is None:
        check_genome(params, best)
    scored_by = (
        "tracking" if cfg.task else cfg.fitness
    )  # a steering task is scored by animat.fly.tasks.tracking, not cfg.fitness
    flight = _write_best(cfg, out, params, best, best_fitness, history, scored_by)
    summary = {
        "generations": int(generation),
        "population": cfg.population,
        "strategy": cfg.strategy,
        "fitness": scored_by,
        **({"task": cfg.task} if cfg.task else {}),
        **loop.history_summary(history, best_fitness, train_seconds),
        **{f"replay_{k}": v for k, v in flight.items()},
    }
    interrupt.check()  # a signal whose KeyboardInterrupt was lost: no summary, so --resume writes the outputs again
    runs.atomic_write_json(out / "summary.json", summary)
    from animat.fly.report import write_fly_report, write_task_report

    if cfg.task is None:
        write_fly_report(out, params=params)
    else:
        write_task_report(out, params)
    return summary


def _write_best(
    cfg: TrainConfig, out: Path, params, best: Genome, best_fitness: float, history, scored_by: str
) -> dict:
    """The best fly's files in ``out``: ``best_genome.npz/.json`` (with the fly, its fitness ``scored_by``, episode
    length and task), ``best_genome.pkl``, ``plots/fitness.png`` of ``history``, and its replay
    (:func:`animat.fly.replay.write_replay`, or with a steering task :func:`task_replay`); returns the replay's
    summary."""
    extra = {
        "fly": params.to_dict(),
        "fitness": scored_by,
        "seconds": cfg.seconds,
        **({"task": cfg.task} if cfg.task else {}),
    }
    save_genome(out / "best_genome.npz", best, best_fitness, extra)
    export_pickle(best, out / "best_genome.pkl")
    plots.fitness_plot(history, out / "plots" / "fitness.png", title=f"fly, {cfg.label}")
    if cfg.task:
        return task_replay(cfg, out)
    return write_replay(
        params, best, cfg.replay_seconds, out, anim_seconds=cfg.anim_seconds, title=f"best fly ({cfg.fitness})"
    )
