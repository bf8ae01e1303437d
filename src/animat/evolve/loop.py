"""The engine's one generation loop, for every strategy (:mod:`animat.evolve.strategies`). No JAX here.

One generation, top to bottom (:func:`run`)::

    genomes, s = strategy.ask(state.strategy)         # (P, ...) to evaluate
    fitness    = evaluate(genomes)                    # (P,) float64, NaN/inf = crashed (or fitness_of(result))
    s          = strategy.tell(s, fitness)            # breeds the next generation
    best-ever genome updated; threshold genomes saved; row = metrics(...) appended to the history
    out_dir/metrics.csv rewritten; a checkpoint every save_every generations (and after the last); on_generation(state)

The state (:class:`LoopState`) is immutable: a generation commits a new one in one go, so an
interruption leaves the last committed state whole. A checkpoint holds all of it (the strategy's
state included), so a run resumed from any checkpoint (:func:`load`) gives bit-identical genomes,
history (but for its wall-clock ``seconds``) and best genome to an uninterrupted one, for a
deterministic fitness. A signal whose ``KeyboardInterrupt`` was lost stops the loop before the next
generation (:func:`animat.interrupt.check`); a run stopped before its first checkpoint (:func:`unstarted`)
starts again from generation 0.

Checkpoint layout (kind ``"population"``, :func:`animat.checkpoint.save_checkpoint`): arrays
= the strategy state's array fields plus ``best_fitness``, ``best_genes``, ``last_genes``,
``last_fitness``; meta = ``engine`` (format), ``strategy`` (its name), ``state`` (the state's
JSON fields), ``generation``, ``history``, ``threshold``, ``threshold_hits`` and the caller's own
keys. Checkpoints written before this loop existed are read through the strategy's ``upgrade``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from animat import checkpoint, interrupt, runs
from animat.errors import CheckpointError
from animat.evolve.strategies.base import Strategy, pack_state, unpack_state

FORMAT = 1  # meta["engine"] of the checkpoints this loop writes
METRIC_FIELDS = ["generation", "best", "mean", "median", "crashes", "seconds"]  # the default row's
_LOOP_ARRAYS = ("best_fitness", "best_genes", "last_genes", "last_fitness")
_LOOP_META = ("engine", "strategy", "state", "generation", "history", "threshold", "threshold_hits")


@dataclass(frozen=True)
class LoopState:
    """Everything a run carries from one generation to the next.

    ``strategy``: the strategy's state (its genomes to evaluate next); ``generation``: generations
    evaluated so far; ``best_genes``/``best_fitness``: the best genome ever evaluated (None/-inf
    before any finite fitness); ``last_genes``/``last_fitness``: the last evaluated generation;
    ``history``: one metrics row per generation since generation 0; ``threshold``: the current
    fitness threshold (None: off), ``threshold_hits``: ``{generation, fitness, threshold, path}`` per crossing.
    """

    strategy: Any
    generation: int = 0
    best_genes: np.ndarray | None = None
    best_fitness: float = -math.inf
    last_genes: np.ndarray | None = None
    last_fitness: np.ndarray | None = None
    history: tuple[dict, ...] = ()
    threshold: float | None = None
    threshold_hits: tuple[dict, ...] = ()


def start(strategy: Strategy, key: Any) -> LoopState:
    """Generation 0 of ``strategy`` from ``key`` (its seed or PRNG key)."""
    return LoopState(strategy.init(key))


def generation_metrics(
    generation: int, evaluation: Any, fitness: np.ndarray, best_fitness: float, seconds: float
) -> dict:
    """The default metrics row ``{generation, best, mean, median, crashes, seconds}`` (:data:`METRIC_FIELDS`);
    crashes (non-finite fitness) are excluded from the stats. The signature is :func:`run`'s ``metrics``."""
    ok = np.isfinite(fitness)
    good = fitness[ok]
    nan = float("nan")
    return {
        "generation": int(generation),
        "best": float(good.max()) if good.size else nan,
        "mean": float(good.mean()) if good.size else nan,
        "median": float(np.median(good)) if good.size else nan,
        "crashes": int((~ok).sum()),
        "seconds": float(seconds),
    }


def history_summary(history: list[dict], best_fitness: float, train_seconds: float) -> dict:
    """A run's headline numbers from its default metrics rows (:func:`generation_metrics`): the best fitness,
    the last generation's mean, the crashes over all generations, this session's training time and the mean
    seconds per generation."""
    last = history[-1]
    return {
        "best_fitness": float(best_fitness),
        "last_generation_mean_fitness": float(last["mean"]) if last["mean"] is not None else math.nan,
        "total_crashes": int(sum(int(r["crashes"]) for r in history)),
        "train_seconds_this_session": round(train_seconds, 3),
        "mean_seconds_per_generation": float(np.mean([float(r["seconds"]) for r in history])),
    }


def _best(fitness: np.ndarray) -> int | None:
    """Index of the best finite fitness (first of ties), None when every one crashed."""
    finite = np.where(np.isfinite(fitness), fitness, -np.inf)
    i = int(np.argmax(finite))
    return i if np.isfinite(finite[i]) else None


def track_best(state: LoopState, genes: np.ndarray, fitness: np.ndarray) -> LoopState:
    """``state`` with the best-ever genome replaced when this generation's best finite fitness beats it."""
    i = _best(fitness)
    if i is None or not fitness[i] > state.best_fitness:
        return state
    return replace(state, best_genes=genes[i].copy(), best_fitness=float(fitness[i]))


def check_threshold(
    state: LoopState,
    generation: int,
    genes: np.ndarray,
    fitness: np.ndarray,
    delta: float | None,
    out_dir: str | os.PathLike | None = None,
    save_genome: Callable | None = None,
) -> LoopState:
    """Each time a generation's best exceeds ``state.threshold``, that genome is saved (with ``out_dir``
    and ``save_genome(path_stem, genome, fitness, {generation, threshold}) -> path``, to
    ``out_dir/genomes/threshold-<gen>``) and the threshold raised by whole steps of ``delta`` to at
    least the best (without ``delta`` it becomes that best). Returns the new state."""
    if state.threshold is None:
        return state
    i = _best(fitness)
    if i is None or not fitness[i] > state.threshold:
        return state
    best = float(fitness[i])
    hit = {"generation": generation, "fitness": best, "threshold": state.threshold, "path": None}
    if out_dir is not None and save_genome is not None:
        stem = Path(out_dir) / "genomes" / f"threshold-{generation:06d}"
        hit["path"] = str(save_genome(stem, genes[i], best, {"generation": generation, "threshold": state.threshold}))
    if delta is None:
        threshold = best
    else:  # directly, not by a loop of += delta: that would not end for a delta below the spacing of the floats
        steps = math.ceil((best - state.threshold) / float(delta))
        raised = state.threshold + steps * float(delta)
        threshold = max(raised if raised >= best else raised + float(delta), best)
    return replace(state, threshold=threshold, threshold_hits=state.threshold_hits + (hit,))


def run(
    strategy: Strategy,
    state: LoopState,
    evaluate: Callable[[np.ndarray], Any],
    generations: int,
    *,
    fitness_of: Callable[[Any], np.ndarray] | None = None,
    metrics: Callable[..., dict] = generation_metrics,
    metric_fields: list[str] | None = None,
    out_dir: str | os.PathLike | None = None,
    save_every: int | None = 1,
    keep: int = 3,
    delta_fitness: float | None = None,
    save_genome: Callable | None = None,
    meta: Mapping[str, Any] | None = None,
    on_generation: Callable[[LoopState], Any] | None = None,
) -> tuple[LoopState, Path | None]:
    """Evolve ``state`` up to ``generations`` (a total, not a count); returns ``(state, last checkpoint or None)``.

    ``evaluate(genomes) -> result``; the fitness is ``result`` itself or ``fitness_of(result)`` (e.g. a
    score object's ``.fitness``), ``(P,)``. ``metrics(generation, result, fitness, best_fitness,
    seconds) -> row`` makes the generation's history row (default :func:`generation_metrics`). With
    ``out_dir``: ``metrics.csv`` (columns ``metric_fields``; none without them) rewritten every
    generation, threshold genomes saved through ``save_genome`` (:func:`check_threshold`), and a
    checkpoint (:func:`save`, with the caller's ``meta``) every ``save_every`` generations and after
    the last one. ``on_generation(state)`` is called with each committed state (its row: ``state.history[-1]``).
    """
    last_ckpt, saved_at = None, None
    while state.generation < generations:
        interrupt.check()  # a safe point: the last generation is committed (and checkpointed where due)
        g = state.generation
        t0 = time.perf_counter()
        genes, inner = strategy.ask(state.strategy)
        result = evaluate(genes)
        fit = np.asarray(result if fitness_of is None else fitness_of(result), dtype=np.float64).reshape(-1)
        if fit.shape != (len(genes),):
            raise ValueError(f"fitness returned shape {fit.shape} for a population of {len(genes)}")
        inner = strategy.tell(inner, fit)
        seconds = time.perf_counter() - t0
        new = check_threshold(track_best(state, genes, fit), g, genes, fit, delta_fitness, out_dir, save_genome)
        row = metrics(g, result, fit, new.best_fitness, seconds)
        state = replace(
            new, strategy=inner, generation=g + 1, last_genes=genes, last_fitness=fit, history=new.history + (row,)
        )
        if out_dir is not None:
            if metric_fields:
                runs.atomic_write_csv(Path(out_dir) / "metrics.csv", state.history, metric_fields)
            if save_every and state.generation % int(save_every) == 0:
                last_ckpt, saved_at = save(out_dir, strategy, state, meta, keep), state.generation
        if on_generation is not None:
            on_generation(state)
    if out_dir is not None and saved_at != state.generation and state.last_fitness is not None:
        last_ckpt = save(out_dir, strategy, state, meta, keep)
    interrupt.check()
    return state, last_ckpt


# ---------------------------------------------------------------------------------- checkpoints
def save(
    out_dir: str | os.PathLike,
    strategy: Strategy,
    state: LoopState,
    meta: Mapping[str, Any] | None = None,
    keep: int = 3,
) -> Path:
    """Checkpoint ``state`` to ``out_dir/checkpoints/gen-<generation>.{npz,json}`` (the last ``keep`` kept),
    with the caller's ``meta`` keys beside the loop's; returns the manifest."""
    arrays, values = pack_state(state.strategy)
    ours = {"best_fitness": np.asarray(state.best_fitness, dtype=np.float64)}
    for name in ("best_genes", "last_genes", "last_fitness"):
        if getattr(state, name) is not None:
            ours[name] = getattr(state, name)
    meta = dict(meta or {})
    clash = sorted((set(arrays) & set(_LOOP_ARRAYS)) | (set(meta) & set(_LOOP_META)))
    if clash:
        raise ValueError(f"names {clash} are the loop's own in a checkpoint")
    meta.update(
        engine=FORMAT,
        strategy=strategy.name,
        state=values,
        generation=state.generation,
        history=list(state.history),
        threshold=state.threshold,
        threshold_hits=list(state.threshold_hits),
    )
    return checkpoint.save_checkpoint(out_dir, state.generation, {**arrays, **ours}, meta, keep=keep)


def unstarted(out_dir: str | os.PathLike) -> bool:
    """Whether run directory ``out_dir`` stopped before its first checkpoint (:func:`animat.runs.unstarted`): its
    ``--resume`` starts it again from generation 0 with its config.json."""
    return runs.unstarted(out_dir, Path(checkpoint.CHECKPOINT_DIR) / checkpoint.LATEST)


def load(path: str | os.PathLike, strategy: Strategy) -> tuple[LoopState, dict[str, Any]]:
    """Restore ``(state, caller's meta)`` from a checkpoint: a run dir or its ``checkpoints/`` (latest), or a
    ``gen-*.json``/``.npz``. ``strategy`` (an instance or its class) reads its state and upgrades a
    checkpoint written before this loop existed."""
    arrays, meta = checkpoint.read_checkpoint(path, kind="population")
    where = str(path)
    if "engine" not in meta:
        arrays, meta = strategy.upgrade(arrays, meta, where)
    elif meta.get("engine") != FORMAT or meta.get("strategy") != strategy.name:
        raise CheckpointError(
            f"checkpoint {where!r} is of format {meta.get('engine')!r} for strategy {meta.get('strategy')!r}; "
            f"expected format {FORMAT} for {strategy.name!r}"
        )
    try:
        state = LoopState(
            strategy=unpack_state(strategy.State, arrays, meta["state"], where),
            generation=int(meta["generation"]),
            best_genes=arrays.get("best_genes"),
            best_fitness=float(arrays["best_fitness"]),
            last_genes=arrays.get("last_genes"),
            last_fitness=arrays.get("last_fitness"),
            history=tuple(dict(r) for r in meta["history"]),
            threshold=None if meta["threshold"] is None else float(meta["threshold"]),
            threshold_hits=tuple(dict(h) for h in meta["threshold_hits"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {where!r} lacks or garbles field {exc}") from None
    if len(state.history) != state.generation:
        raise CheckpointError(
            f"checkpoint {where!r} is inconsistent: {len(state.history)} history rows for generation {state.generation}"
        )
    return state, {k: v for k, v in meta.items() if k not in _LOOP_META}
