"""Glue between the fruit fly (preset ``drosophila``) and the engine: the training run and its run directory,
the same as the paper preset's (:mod:`animat.fly.train`) through :mod:`animat.fly.evolve`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from animat import runs
from animat.evolve import loop
from animat.evolve.genome_file import save_genome
from animat.evolve.network import layer_activations
from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.fly.drosophila.replay import check_genome, write_replay
from animat.fly.drosophila.report import write_drosophila_report
from animat.fly.drosophila.tasks import DirectionFitness, HoverFitness
from animat.fly.evolve import evolve
from animat.viz import plots

OUTPUT_NAMES = ["frequency"] + [
    f"{side} {n}"
    for side in ("right", "left")
    for n in ("stroke amplitude", "stroke offset", "deviation", "rotation amplitude", "rotation timing")
]


def fitness_of(cfg: DrosophilaTrainConfig, start_pool_sha256: str | None = None) -> HoverFitness | DirectionFitness:
    """The run's batched fitness (deterministic: its perturbed starts and noise come from the run's seed, or its start
    pool, checked against ``start_pool_sha256``)."""
    activations = layer_activations(cfg.layers, cfg.activations)
    pool = {"start_pool": cfg.start_pool, "start_pool_sha256": start_pool_sha256}
    if cfg.fitness != "hover":
        return DirectionFitness(
            cfg.fly_params(),
            float(cfg.seconds),
            activations,
            cfg.fitness,
            float(cfg.speed),
            cfg.starts,
            cfg.seed,
            cfg.noise,
            cfg.power_weight,
            cfg.position_weight,
            cfg.velocity_weight,
            **pool,
        )
    return HoverFitness(
        cfg.fly_params(),
        float(cfg.seconds),
        activations,
        cfg.starts,
        cfg.seed,
        cfg.noise,
        cfg.power_weight,
        cfg.peak_weight,
        **pool,
    )


def train(
    cfg: DrosophilaTrainConfig,
    out: Path,
    *,
    resume: bool = False,
    from_run: Path | None = None,
    on_generation: Callable[[dict], Any] | None = None,
) -> dict:
    """Evolve fruit flies per ``cfg`` into run directory ``out`` (already created, or the one being resumed),
    with the paper GA or ``cfg.strategy``; ``from_run``: another drosophila run to start from (a curriculum
    of episode lengths, fitness weights or strategies: :func:`animat.fly.evolve.evolve`).

    Writes ``config.json``, ``metrics.csv``, ``checkpoints/`` (resumable), ``best_genome.npz/.json``,
    ``plots/fitness.png``, the best fly's replay (:func:`animat.fly.drosophila.replay.write_replay`) and
    ``report.html``; returns ``summary.json``'s content."""
    from animat.fly.train import start_pool_record

    params = cfg.fly_params()
    pool = start_pool_record(cfg, out, resume)
    fitness = fitness_of(cfg, pool.get("start_pool_sha256"))
    t0 = time.perf_counter()
    best, best_fitness, history, generation = evolve(
        cfg, out, fitness, OUTPUT_NAMES, resume=resume, from_run=from_run, on_generation=on_generation, record=pool
    )
    train_seconds = time.perf_counter() - t0
    check_genome(best)
    save_genome(
        out / "best_genome.npz",
        best,
        best_fitness,
        {"preset": "drosophila", "drosophila": params.to_dict(), "seconds": cfg.seconds},
    )
    plots.fitness_plot(history, out / "plots" / "fitness.png", title=f"drosophila, {cfg.fitness} fitness")
    flight = write_replay(
        params,
        best,
        cfg.replay_seconds,
        out,
        anim_seconds=cfg.anim_seconds,
        title=f"best fruit fly ({cfg.fitness})",
        ref_vel=getattr(fitness, "command_velocity", None),
    )
    summary = {
        "preset": "drosophila",
        "generations": int(generation),
        "population": cfg.population,
        "strategy": cfg.strategy,
        "fitness": cfg.fitness,
        **loop.history_summary(history, best_fitness, train_seconds),
        **{f"replay_{k}": v for k, v in flight.items() if k != "preset"},
    }
    runs.atomic_write_json(out / "summary.json", summary)
    write_drosophila_report(out, params=params)
    return summary
