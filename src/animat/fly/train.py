"""Glue between the fly and the engine: configuration, the training run, its run directory."""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from animat import runs
from animat.evolve.genome_file import export_pickle, save_genome
from animat.evolve.evaluate import make_evaluator
from animat.evolve.population import Population
from animat.fly.replay import check_genome, write_replay
from animat.fly.options import TrainConfig
from animat.fly.tasks import FlyFitness
from animat.viz import plots


def output_names(cfg: TrainConfig) -> list[str]:
    names = ["flap", "feather", "sweep"]
    return [f"{side} {n}" for side in ("right", "left") for n in names] if cfg.asymmetric else names


def train(cfg: TrainConfig, out: Path, *, resume: bool = False, on_generation: Callable[[dict], Any] | None = None) -> dict:
    """Evolve flies per ``cfg`` into run directory ``out`` (already created, or the one being resumed).

    Writes ``config.json``, ``metrics.csv`` (per generation), ``checkpoints/`` (resumable),
    ``best_genome.npz/.json`` (+ ``best_genome.pkl`` export), ``plots/fitness.png``, and a replay
    of the best fly (see :func:`animat.fly.replay.write_replay`); returns ``summary.json``'s content.
    """
    params = cfg.fly_params()
    if resume:
        pop = Population.resume(out)
        runs.refuse_finished(out, pop.generation, cfg.generations, "generations", "--generations")
    else:
        pop = Population(cfg.population, cfg.layers, cfg.activations, cfg.init_std, cfg.seed)
    runs.atomic_write_json(out / "config.json", asdict(cfg))  # on --resume too: --generations etc. may have changed
    fitness = FlyFitness(params, float(cfg.seconds), cfg.fitness, pop.activations, cfg.starts, cfg.seed, cfg.noise)

    evaluator = make_evaluator(fitness, pop.layers, pop.activations, True, backend=cfg.backend, address=cfg.address)
    t0 = time.perf_counter()
    try:
        result = pop.run(
            fitness, cfg.generations, batched=True, crossover_prob=cfg.crossover_prob, mutation_rate=cfg.mutation_rate,
            mutation=cfg.mutation, mutation_std=cfg.mutation_std, pool_frac=cfg.pool_frac, elite_frac=cfg.elite_frac,
            output_names=output_names(cfg), fitness_threshold=cfg.fitness_threshold, delta_fitness=cfg.delta_fitness,
            save_every=cfg.save_every, out_dir=out, metrics_csv=True, evaluator=evaluator, on_generation=on_generation,
        )
    finally:
        evaluator.close()
    train_seconds = time.perf_counter() - t0
    best = result.best_genome
    check_genome(params, best)
    extra = {"fly": params.to_dict(), "fitness": cfg.fitness, "seconds": cfg.seconds}
    save_genome(out / "best_genome.npz", best, result.best_fitness, extra)
    export_pickle(best, out / "best_genome.pkl")
    plots.fitness_plot(result.history, out / "plots" / "fitness.png", title=f"fly, {cfg.fitness} fitness")
    flight = write_replay(params, best, cfg.replay_seconds, out, anim_seconds=cfg.anim_seconds, title=f"best fly ({cfg.fitness})")
    last = result.history[-1]
    summary = {
        "generations": int(result.generation),
        "population": cfg.population,
        "fitness": cfg.fitness,
        "best_fitness": float(result.best_fitness),
        "last_generation_mean_fitness": float(last["mean"]) if last["mean"] is not None else math.nan,
        "total_crashes": int(sum(int(r["crashes"]) for r in result.history)),
        "train_seconds_this_session": round(train_seconds, 3),
        "mean_seconds_per_generation": float(np.mean([float(r["seconds"]) for r in result.history])),
        **{f"replay_{k}": v for k, v in flight.items()},
    }
    runs.atomic_write_json(out / "summary.json", summary)
    from animat.viz.report import write_report

    write_report(out, params=params)
    return summary
