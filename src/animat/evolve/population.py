"""The engine's user-facing API: ``Population(size, layers).run(fitness, generations)``.

One generation, top to bottom (:meth:`Population.run`)::

    fitness  = evaluator(genes)                          # (P,), NaN/inf = crashed
    row      = {generation, best, mean, median, crashes, seconds}
    genes    = next_generation(fold_in(base_key, g), genes, fitness, ...)
    best-ever genome updated; threshold genomes saved; g += 1
    checkpoint every save_every generations (and always after the last one); on_generation(row)

Breeding keys depend only on the seed and the generation number, and a checkpoint holds the whole
state, so a run interrupted at any generation and resumed with :meth:`Population.resume` gives
bit-identical genes, history (but for its wall-clock ``seconds``) and best genome to an uninterrupted
one (for a deterministic fitness).
Elites are copied unchanged, so with a deterministic fitness and ``elite_frac`` > 0 the generation's best
never decreases.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from animat.config import check_options, require
from animat.errors import CheckpointError, ConfigError
from animat.evolve import checkpoint, network, operators
from animat.evolve.evaluate import LocalEvaluator
from animat.evolve.genome import Genome
from animat.evolve.options import PopulationOptions, check_settings, run_defaults

#: Defaults of the run settings (:func:`animat.evolve.options.run_defaults`); a resumed population uses its
#: stored values instead, and values passed explicitly to :meth:`Population.run` override both. save_every 1:
#: with out_dir, a checkpoint every generation (the last 3 kept).
RUN_DEFAULTS: dict[str, Any] = run_defaults()

METRIC_FIELDS = ["generation", "best", "mean", "median", "crashes", "seconds"]


@dataclass
class RunResult:
    """What :meth:`Population.run` returns.

    ``genes (P, G)`` / ``fitness (P,)``: the last evaluated generation (``generation - 1``);
    ``generation``: generations evaluated so far (the next one to evaluate);
    ``history``: one metrics row per generation since generation 0 (resumed runs included);
    ``checkpoint``: manifest of the last checkpoint written, if any; ``threshold_hits``:
    ``{generation, fitness, threshold, path}`` per threshold crossing.
    """

    best_genome: Genome | None
    best_fitness: float
    history: list[dict]
    genes: np.ndarray | None
    fitness: np.ndarray | None
    generation: int
    checkpoint: Path | None = None
    threshold_hits: list[dict] = field(default_factory=list)


def rank_scores(fitness: np.ndarray) -> np.ndarray:
    """Exact float32 stand-in for float64 ``fitness``: ``-rank`` (best 0, ties by index), crashes (non-finite)
    ``-inf`` so that breeding knows them (:func:`~animat.evolve.operators.next_generation`).

    Breeding on these instead of the raw values keeps the ranking exact and the same on every backend.
    """
    fitness = np.asarray(fitness, dtype=np.float64)
    ok = np.isfinite(fitness)
    key = np.where(ok, fitness, -np.inf)
    order = np.argsort(-key, kind="stable")
    ranks = np.empty(len(order), dtype=np.float32)
    ranks[order] = np.arange(len(order), dtype=np.float32)
    return np.where(ok, -ranks, -np.inf).astype(np.float32)


def generation_metrics(generation: int, fitness: np.ndarray, seconds: float) -> dict:
    """``{generation, best, mean, median, crashes, seconds}``; crashes (non-finite) excluded from the stats."""
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


class Population:
    """A population of ``size`` fully connected networks with architecture ``layers``.

    Initial genes: every weight and bias from N(0, init_std^2) (``network.init_genes``), from ``seed``.
    """

    def __init__(self, size: int, layers: Sequence[int], activations: str | Sequence[str] = "tanh", init_std: float = 1.0, seed: int = 0):
        check_options(PopulationOptions, {"size": size, "init_std": init_std, "seed": seed})
        self.size = int(size)
        self.layers = network.check_architecture(layers)
        self.activations = network.layer_activations(self.layers, activations)
        self.init_std = float(init_std)
        self.seed = int(seed)
        init_key, base_key = jax.random.split(jax.random.PRNGKey(self.seed))
        self.base_key = np.asarray(base_key, dtype=np.uint32)
        self.genes = np.asarray(network.init_genes(init_key, self.size, self.layers, self.init_std))
        self.generation = 0
        self.last_genes: np.ndarray | None = None
        self.last_fitness: np.ndarray | None = None
        self.best_genes: np.ndarray | None = None
        self.best_fitness = float("-inf")
        self.history: list[dict] = []
        self.threshold: float | None = None
        self.threshold_hits: list[dict] = []
        self.settings: dict[str, Any] = dict(RUN_DEFAULTS)

    # ------------------------------------------------------------------ properties
    @property
    def num_genes(self) -> int:
        return network.param_count(self.layers)

    @property
    def best_genome(self) -> Genome | None:
        return None if self.best_genes is None else Genome(self.layers, self.best_genes, self.activations)

    # ------------------------------------------------------------------ settings
    def _resolve_settings(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The stored settings overlaid by the ``overrides`` that are not None, checked by the declarations
        the fly's config file and command line apply too (:func:`animat.evolve.options.check_settings`)."""
        s = dict(self.settings)
        s.update({k: v for k, v in overrides.items() if v is not None})
        return check_settings(s, self.layers[-1])

    # ------------------------------------------------------------------ the loop
    def run(
        self,
        fitness: Callable | None,
        generations: int,
        *,
        batched: bool | None = None,
        crossover_prob: float | None = None,
        mutation_rate: float | None = None,
        mutation: str | None = None,
        mutation_std: float | None = None,
        pool_frac: float | None = None,
        elite_frac: float | None = None,
        output_names: Sequence[str] | None = None,
        fitness_threshold: float | None = None,
        delta_fitness: float | None = None,
        save_every: int | None = None,
        out_dir: str | os.PathLike | None = None,
        evaluator: Any = None,
        on_generation: Callable[[dict], Any] | None = None,
    ) -> RunResult:
        """Evolve from the current generation up to ``generations`` (exclusive; a total, not a count).

        ``fitness``: per-genome (``list[Genome] -> floats``) or, with ``batched=True``, batched
        (stacked param tree -> ``(P,)``); ignored when ``evaluator`` (``genes (P, G) -> (P,)`` with
        ``.close()``) is given. Settings left as ``None`` take the stored value (resumed runs) or the
        default in :data:`RUN_DEFAULTS` (batched False, crossover_prob 0.5, mutation_rate 0.05,
        mutation "normal", mutation_std = init_std, pool_frac 0.1, elite_frac 0.05, save_every 1).

        ``fitness_threshold``: each time a generation's best exceeds it, that genome is saved to
        ``out_dir/genomes/threshold-<gen>.npz`` and the threshold raised by ``delta_fitness`` until it
        is above the best again (without ``delta_fitness`` it becomes that best). ``on_generation(row)``
        is called once per generation with its metrics row. With ``out_dir``, the population is
        checkpointed every ``save_every`` generations and always after the last one. An evaluator passed
        in is not closed here (its owner closes it); the default local one is.
        """
        overrides = dict(
            batched=batched, crossover_prob=crossover_prob, mutation_rate=mutation_rate, mutation=mutation,
            mutation_std=mutation_std, pool_frac=pool_frac, elite_frac=elite_frac, output_names=output_names,
            fitness_threshold=fitness_threshold, delta_fitness=delta_fitness, save_every=save_every,
        )
        s = self._resolve_settings(overrides)
        if fitness_threshold is not None and (self.threshold is None or float(fitness_threshold) != self.settings.get("fitness_threshold")):
            self.threshold = float(fitness_threshold)  # a new threshold; an unchanged one keeps its raised value
        self.settings = s
        generations = int(require("generations (a total, not a count)", generations, ge=0, integer=True))
        mut_std = self.init_std if s["mutation_std"] is None else float(s["mutation_std"])

        own_evaluator = evaluator is None
        if own_evaluator:
            if fitness is None:
                raise ConfigError("run() needs a fitness function or an evaluator")
            evaluator = LocalEvaluator(fitness, self.layers, self.activations, s["batched"])
        last_ckpt: Path | None = None
        saved_at = None
        try:
            while self.generation < generations:
                g, genes = self.generation, self.genes
                t0 = time.perf_counter()
                fit = np.asarray(evaluator(genes), dtype=np.float64).reshape(-1)
                if fit.shape != (self.size,):
                    raise ValueError(f"fitness returned shape {fit.shape} for a population of {self.size}")
                key = jax.random.fold_in(jnp.asarray(self.base_key), g)
                new = operators.next_generation(
                    key, jnp.asarray(genes), jnp.asarray(rank_scores(fit)),
                    pool_frac=s["pool_frac"], elite_frac=s["elite_frac"], crossover_prob=s["crossover_prob"],
                    mutation_rate=s["mutation_rate"], mutation=s["mutation"], mutation_std=mut_std,
                )
                new = np.asarray(jax.block_until_ready(new))
                row = generation_metrics(g, fit, time.perf_counter() - t0)
                # commit the generation in one go: an interruption before here leaves the state untouched
                self._track_best(genes, fit)
                self._check_threshold(g, genes, fit, s["delta_fitness"], out_dir)
                self.last_genes, self.last_fitness = genes, fit
                self.history.append(row)
                self.genes, self.generation = new, g + 1
                if out_dir is not None and s["save_every"] and self.generation % int(s["save_every"]) == 0:
                    last_ckpt = self.save(out_dir)
                    saved_at = self.generation
                if on_generation is not None:
                    on_generation(dict(row))
            if out_dir is not None and saved_at != self.generation and self.last_fitness is not None:
                last_ckpt = self.save(out_dir)
        finally:
            if own_evaluator:
                evaluator.close()
        return RunResult(
            best_genome=self.best_genome,
            best_fitness=self.best_fitness,
            history=[dict(r) for r in self.history],
            genes=self.last_genes,
            fitness=self.last_fitness,
            generation=self.generation,
            checkpoint=last_ckpt,
            threshold_hits=[dict(h) for h in self.threshold_hits],
        )

    def _track_best(self, genes: np.ndarray, fit: np.ndarray) -> None:
        finite = np.where(np.isfinite(fit), fit, -np.inf)
        i = int(np.argmax(finite))
        if np.isfinite(finite[i]) and finite[i] > self.best_fitness:
            self.best_fitness = float(finite[i])
            self.best_genes = genes[i].copy()

    def _check_threshold(self, g: int, genes: np.ndarray, fit: np.ndarray, delta: float | None, out_dir) -> None:
        if self.threshold is None:
            return
        finite = np.where(np.isfinite(fit), fit, -np.inf)
        i = int(np.argmax(finite))
        best = float(finite[i])
        if not (np.isfinite(best) and best > self.threshold):
            return
        hit = {"generation": g, "fitness": best, "threshold": self.threshold, "path": None}
        if out_dir is not None:
            genome = Genome(self.layers, genes[i], self.activations)
            path = Path(out_dir) / "genomes" / f"threshold-{g:06d}.npz"
            checkpoint.save_genome(path, genome, best, extra={"generation": g, "threshold": self.threshold, "output_names": self.settings["output_names"]})
            hit["path"] = str(path)
        self.threshold_hits.append(hit)
        if delta is None:
            self.threshold = best
        else:  # raised by whole steps of delta to at least best (directly: a loop would not end for a delta below the spacing)
            steps = math.ceil((best - self.threshold) / float(delta))
            raised = self.threshold + steps * float(delta)
            self.threshold = max(raised if raised >= best else raised + float(delta), best)

    # ------------------------------------------------------------------ checkpoints
    def _state_arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "genes": self.genes,
            "base_key": self.base_key,
            "best_fitness": np.asarray(self.best_fitness, dtype=np.float64),
        }
        if self.best_genes is not None:
            arrays["best_genes"] = self.best_genes
        if self.last_genes is not None:
            arrays["last_genes"] = self.last_genes
            arrays["last_fitness"] = self.last_fitness
        for name in METRIC_FIELDS:
            dtype = np.int64 if name in ("generation", "crashes") else np.float64
            arrays[f"history_{name}"] = np.asarray([r[name] for r in self.history], dtype=dtype)
        return arrays

    def _state_meta(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "layers": list(self.layers),
            "activations": list(self.activations),
            "init_std": self.init_std,
            "seed": self.seed,
            "generation": self.generation,
            "num_genes": self.num_genes,
            "threshold": self.threshold,
            "threshold_hits": self.threshold_hits,
            "settings": self.settings,
            "output_names": self.settings.get("output_names"),
        }

    def save(self, out_dir: str | os.PathLike, keep: int = 3) -> Path:
        """Checkpoint the whole state to ``out_dir/checkpoints/gen-<generation>.{npz,json}``; returns the manifest."""
        return checkpoint.save_checkpoint(out_dir, self.generation, self._state_arrays(), self._state_meta(), keep=keep)

    @classmethod
    def resume(cls, path: str | os.PathLike) -> "Population":
        """Restore a population from a checkpoint: a run dir or its ``checkpoints/`` (latest), or a ``gen-*.json``/``.npz``."""
        arrays, meta = checkpoint.read_checkpoint(path, kind="population")
        try:
            pop = cls.__new__(cls)
            pop.size = int(meta["size"])
            pop.layers = network.check_architecture(meta["layers"])
            pop.activations = network.layer_activations(pop.layers, meta["activations"])
            pop.init_std = float(meta["init_std"])
            pop.seed = int(meta["seed"])
            pop.generation = int(meta["generation"])
            pop.threshold = None if meta["threshold"] is None else float(meta["threshold"])
            pop.threshold_hits = list(meta.get("threshold_hits", []))
            pop.settings = {**RUN_DEFAULTS, **meta["settings"]}
            pop.base_key = np.asarray(arrays["base_key"], dtype=np.uint32)
            pop.genes = np.asarray(arrays["genes"], dtype=np.float32)
            pop.best_fitness = float(arrays["best_fitness"])
            pop.best_genes = arrays.get("best_genes")
            pop.last_genes = arrays.get("last_genes")
            pop.last_fitness = arrays.get("last_fitness")
            n_hist = len(arrays["history_generation"])
            pop.history = [
                {name: (int if name in ("generation", "crashes") else float)(arrays[f"history_{name}"][i]) for name in METRIC_FIELDS}
                for i in range(n_hist)
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks or garbles field {exc}") from None
        g = network.param_count(pop.layers)
        if pop.genes.shape != (pop.size, g) or pop.base_key.shape != (2,) or n_hist != pop.generation:
            raise CheckpointError(
                f"checkpoint {str(path)!r} is inconsistent: genes {pop.genes.shape} for ({pop.size}, {g}), "
                f"key {pop.base_key.shape}, {n_hist} history rows for generation {pop.generation}"
            )
        return pop
