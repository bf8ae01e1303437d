"""Training run of the skier GA: configuration, the loop, checkpoints (resumable), the run directory."""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from animat import interrupt, runs
from animat.errors import CheckpointError
from animat.evolve import loop
from animat.evolve.start import begin, plan, write_config
from animat.evolve.strategies.keyframe_ga import KeyframeGA
from animat.skier import ga
from animat.skier.gene import mirror, random_genes, save_gene_json, standing_genes, validate_gene
from animat.skier.model import SkierParams
from animat.skier.options import REPLAY_SETTINGS, TrainConfig
from animat.skier.replay import write_replay
from animat.skier.rollout import Evaluator
from animat.skier.source import read_source
from animat.viz import plots

METRIC_FIELDS = ["generation", "best", "mean", "median", "fell", "best_net_forward_m", "best_ever", "seconds"]


def make_evaluator(cfg: TrainConfig, params: SkierParams):
    """The configured backend's evaluator: genes (P, n, m) -> Scores; a context manager."""
    kwargs = dict(
        fall_deg=cfg.fall_deg,
        bonus=cfg.bonus,
        tau=cfg.tau,
        chunk_seconds=cfg.chunk_seconds,
        skate_weight=cfg.skate_weight,
        skate_min_yaw_deg=cfg.skate_min_yaw_deg,
        effort_weight=cfg.effort_weight,
        skate_max_yaw_deg=cfg.skate_max_yaw_deg,
        effort_free_cot=cfg.effort_free_cot,
    )
    if cfg.backend == "ray":
        from animat.skier.distributed import RaySkierEvaluator

        return RaySkierEvaluator(
            params, cfg.seconds, cfg.frame_dt, address=cfg.ray_address, num_workers=cfg.nthread or None, **kwargs
        )
    return Evaluator(params, cfg.seconds, cfg.frame_dt, nthread=cfg.nthread or None, **kwargs)


def first_generation(rng: np.random.Generator, cfg: TrainConfig) -> np.ndarray:
    """Generation 0 (P, n, m): ``round(init_standing * P)`` standing-pose genes (the first one exact;
    ``init_spread_deg``, ``init_noise``), then random ones."""
    k = int(round(cfg.init_standing * cfg.population))
    seeds = standing_genes(
        rng,
        k,
        cfg.init_sigma_deg,
        cfg.n_states,
        cfg.n_joints,
        spread_deg=cfg.init_spread_deg,
        toe_deg=cfg.init_toe_deg,
        symmetric_noise=cfg.init_noise == "symmetric",
    )
    return np.concatenate([seeds, random_genes(rng, cfg.population - k, cfg.n_states, cfg.n_joints)])


def strategy(cfg: TrainConfig, source: np.ndarray | None = None):
    """The engine's strategy ``cfg.strategy``: the keyframe GA over the skier's genes, generation 0 from
    :func:`first_generation` (or the population ``source (P, n, m)``); or an evolution strategy over the first
    half of the keyframes (:func:`animat.skier.ga.decode`), from the standing pose (or the centre ``source``)
    with spread ``init_sigma_deg``. ``source``: what a ``--from`` run gives (:mod:`animat.skier.source`)."""
    if cfg.strategy == "keyframe_ga":
        first = (lambda rng: first_generation(rng, cfg)) if source is None else (lambda rng: np.array(source))
        return KeyframeGA(ga.layout(cfg.n_joints), first, cfg.ga_params())
    from animat.evolve.strategies.evosax_es import EvosaxES

    dims = cfg.n_states // 2 * cfg.n_joints
    return EvosaxES(
        cfg.strategy,
        int(cfg.population),
        np.zeros(dims, dtype=np.float32) if source is None else np.asarray(source, dtype=np.float32),
        float(cfg.init_sigma_deg) / ga.ES_UNIT_DEG,
        lambda x: ga.decode(x, cfg.n_states, cfg.n_joints),
    )


def _row(gen: int, scores, fitness: np.ndarray, best_ever: float, seconds: float) -> dict:
    """The metrics row of a generation (:data:`METRIC_FIELDS`; the signature is :func:`animat.evolve.loop.run`'s
    ``metrics``)."""
    f = scores.fitness
    b = int(np.argmax(f))
    return {
        "generation": gen,
        "best": float(f[b]),
        "mean": float(np.mean(f)),
        "median": float(np.median(f)),
        "fell": int(scores.fell.sum()),
        "best_net_forward_m": float(scores.net_forward_m[b]),
        "best_ever": float(best_ever),
        "seconds": round(seconds, 4),
    }


def _check_shape(cfg: TrainConfig, out: Path, ga_strategy):
    """The check of a resumed run's state (:func:`animat.evolve.start.begin`): its genes must have the config's
    shape, else CheckpointError (one line)."""

    def check(state) -> None:
        genes, _ = ga_strategy.ask(state.strategy)
        if genes.shape[1:] != (cfg.n_states, cfg.n_joints):
            raise CheckpointError(
                f"checkpoint in {str(out)!r} holds genes of shape {genes.shape}, config says {cfg.n_states} x "
                f"{cfg.n_joints}"
            )

    return check


def _evolve(cfg: TrainConfig, out: Path, params: SkierParams, ga_strategy, state, on_generation):
    """Run the engine's loop from ``state`` to ``cfg.generations`` (metrics.csv and checkpoints in ``out``);
    returns the final state."""
    with make_evaluator(cfg, params) as ev:
        state, _ = loop.run(
            ga_strategy,
            state,
            ev,
            cfg.generations,
            fitness_of=attrgetter("fitness"),
            metrics=_row,
            metric_fields=METRIC_FIELDS,
            out_dir=out,
            meta={"seed": cfg.seed},
            on_generation=None if on_generation is None else lambda st: on_generation(dict(st.history[-1])),
        )
    return state


def _write_best(cfg: TrainConfig, out: Path, params: SkierParams, best_gene: np.ndarray, state) -> dict:
    """Write best_gene.json, the fitness plot and the best skier's replay (trajectory, views, animation) into
    ``out``; returns the replay's figures."""
    save_gene_json(
        out / "best_gene.json",
        best_gene,
        state.best_fitness,
        {"friction": cfg.friction, "skier": params.to_dict(), **{k: getattr(cfg, k) for k in REPLAY_SETTINGS}},
        tau=cfg.tau,
    )
    plots.fitness_plot(list(state.history), out / "plots" / "fitness.png", title=f"skier ({cfg.friction} friction)")
    return write_replay(
        params,
        best_gene,
        cfg.seconds,
        out,
        anim_seconds=cfg.anim_seconds,
        frame_dt=cfg.frame_dt,
        title=f"best skier ({cfg.friction})",
        fall_deg=cfg.fall_deg,
        bonus=cfg.bonus,
        tau=cfg.tau,
    )


def _summary(cfg: TrainConfig, history: list[dict], best_fit: float, flight: dict) -> dict:
    """summary.json's content: the run's settings, fitness over the generations (first, last, best) and the best
    skier's replay figures (``replay_*``)."""
    first, last = history[0], history[-1]
    return {
        "generations": len(history),
        "population": cfg.population,
        "strategy": cfg.strategy,
        "friction": cfg.friction,
        "hip": cfg.hip,
        "best_fitness": best_fit,
        "best_net_forward_m": flight["net_forward_m"],
        "best_fell": flight["fell"],
        "first_generation_mean_fitness": first["mean"],
        "last_generation_mean_fitness": last["mean"],
        "mean_fitness_ratio_last_first": last["mean"] / first["mean"] if first["mean"] > 0 else math.nan,
        "seconds_per_generation": float(np.mean([r["seconds"] for r in history])),
        **{f"replay_{k}": v for k, v in flight.items()},
    }


def train(
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    from_run: Path | None = None,
    on_generation: Callable[[dict], Any] | None = None,
) -> dict:
    """Run the GA into ``out``; returns summary.json's content. Each generation writes
    ``metrics.csv`` and a checkpoint (population about to be evaluated, RNG state, best so far,
    history), so an interrupted run continues with ``resume=True`` exactly as if never stopped
    (also from a checkpoint written before the engine's loop existed); one stopped before its first
    checkpoint starts again from generation 0 (or from its ``--from`` run). ``from_run``: a skier run to start
    from (:mod:`animat.skier.source`), recorded as ``from`` in config.json."""
    out = Path(out)
    params = cfg.skier_params()
    start = plan(out, resume=resume, from_run=from_run, read_source=lambda path: read_source(cfg, path))
    ga_strategy = strategy(cfg, start.source)
    state = begin(
        ga_strategy, out, start, seed=cfg.seed, generations=cfg.generations, check=_check_shape(cfg, out, ga_strategy)
    )
    write_config(out, runs.config_record("skier", "train", cfg), start)
    state = _evolve(cfg, out, params, ga_strategy, state, on_generation)
    history, best_fit = list(state.history), state.best_fitness
    best_gene = mirror(validate_gene(state.best_genes, cfg.n_states, cfg.n_joints))
    flight = _write_best(cfg, out, params, best_gene, state)
    summary = _summary(cfg, history, best_fit, flight)
    interrupt.check()  # a signal whose KeyboardInterrupt was lost: no summary, so --resume writes the outputs again
    runs.atomic_write_json(out / "summary.json", summary)
    from animat.skier.report import write_skier_report

    write_skier_report(out, params=params)
    return summary
