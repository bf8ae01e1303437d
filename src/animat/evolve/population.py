"""The engine's paper-style API: ``Population(size, layers).run(fitness, generations)``, a thin front
of the generation loop (:mod:`animat.evolve.loop`) with the paper's network GA
(:mod:`animat.evolve.strategies.paper_ga`).

One generation (:func:`animat.evolve.loop.run`)::

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

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from animat.config import check_options, require
from animat.errors import CheckpointError, ConfigError
from animat.evolve import loop, network
from animat.evolve.evaluate import LocalEvaluator
from animat.evolve.genome import Genome
from animat.evolve.genome_file import save_genome
from animat.evolve.loop import METRIC_FIELDS
from animat.evolve.options import PopulationOptions, check_settings, run_defaults
from animat.evolve.ranking import rank_scores  # noqa: F401  (the paper GA breeds on these)
from animat.evolve.strategies.paper_ga import PaperGA, check_state

#: Defaults of the run settings; a resumed population uses its stored values instead, and
#: values passed explicitly to :meth:`Population.run` override both.
RUN_DEFAULTS: dict[str, Any] = (
    run_defaults()
)  # save_every 1: with out_dir, a checkpoint every generation (the last 3 kept)
BREEDING = ("pool_frac", "elite_frac", "crossover_prob", "mutation_rate", "mutation", "mutation_std")


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


class Population:
    """A population of ``size`` fully connected networks with architecture ``layers``.

    Initial genes: every weight and bias from N(0, init_std^2) (``network.init_genes``), from ``seed``.
    The run's whole state is one :class:`animat.evolve.loop.LoopState` (``self.state``); the
    attributes below read it.
    """

    def __init__(
        self,
        size: int,
        layers: Sequence[int],
        activations: str | Sequence[str] = "tanh",
        init_std: float = 1.0,
        seed: int = 0,
    ):
        check_options(PopulationOptions, {"size": size, "init_std": init_std, "seed": seed})
        self.size = int(size)
        self.layers = network.check_architecture(layers)
        self.activations = network.layer_activations(self.layers, activations)
        self.init_std = float(init_std)
        self.seed = int(seed)
        self.settings: dict[str, Any] = dict(RUN_DEFAULTS)
        self.state = loop.start(self._strategy(), self.seed)

    # ------------------------------------------------------------------ the state, read
    @property
    def num_genes(self) -> int:
        return network.param_count(self.layers)

    @property
    def genes(self) -> np.ndarray:
        """``(P, G)`` float32: the generation to evaluate next."""
        return self.state.strategy.genes

    @property
    def base_key(self) -> np.ndarray:
        return self.state.strategy.base_key

    @property
    def generation(self) -> int:
        return self.state.generation

    @property
    def history(self) -> list[dict]:
        return list(self.state.history)

    @property
    def best_genes(self) -> np.ndarray | None:
        return self.state.best_genes

    @property
    def best_fitness(self) -> float:
        return self.state.best_fitness

    @property
    def last_genes(self) -> np.ndarray | None:
        return self.state.last_genes

    @property
    def last_fitness(self) -> np.ndarray | None:
        return self.state.last_fitness

    @property
    def threshold(self) -> float | None:
        return self.state.threshold

    @threshold.setter
    def threshold(self, value: float | None) -> None:
        self.state = replace(self.state, threshold=value)

    @property
    def threshold_hits(self) -> list[dict]:
        return list(self.state.threshold_hits)

    @property
    def best_genome(self) -> Genome | None:
        return None if self.best_genes is None else Genome(self.layers, self.best_genes, self.activations)

    def _strategy(self) -> PaperGA:
        s = self.settings
        return PaperGA(self.size, self.layers, self.init_std, **{k: s[k] for k in BREEDING})

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
        metrics_csv: bool = False,
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
        checkpointed every ``save_every`` generations and always after the last one, and with
        ``metrics_csv`` the whole history is rewritten to ``out_dir/metrics.csv`` every generation. An
        evaluator passed in is not closed here (its owner closes it); the default local one is.
        """
        overrides = dict(
            batched=batched,
            crossover_prob=crossover_prob,
            mutation_rate=mutation_rate,
            mutation=mutation,
            mutation_std=mutation_std,
            pool_frac=pool_frac,
            elite_frac=elite_frac,
            output_names=output_names,
            fitness_threshold=fitness_threshold,
            delta_fitness=delta_fitness,
            save_every=save_every,
        )
        s = self._settle(overrides)
        generations = int(require("generations (a total, not a count)", generations, ge=0, integer=True))
        return self._evolve(fitness, generations, s, evaluator, out_dir, metrics_csv, on_generation)

    def _settle(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The run's settings, now :attr:`settings`: the stored ones overlaid by the ``overrides`` that are not None,
        checked; a new ``fitness_threshold`` restarts the threshold (an unchanged one keeps its raised value)."""
        s = check_settings({**self.settings, **{k: v for k, v in overrides.items() if v is not None}}, self.layers[-1])
        threshold = overrides["fitness_threshold"]
        if threshold is not None and (
            self.threshold is None or float(threshold) != self.settings.get("fitness_threshold")
        ):
            self.threshold = float(threshold)
        self.settings = s
        return s

    def _evolve(self, fitness, generations: int, s: dict, evaluator, out_dir, metrics_csv: bool, on_generation):
        """:func:`animat.evolve.loop.run` up to ``generations`` with settings ``s`` (see :meth:`run`): ``evaluator``,
        else a local one over ``fitness`` (closed at the end); each generation's state committed to ``self`` before
        ``on_generation`` is called (an exception in it leaves the state committed)."""
        own_evaluator = evaluator is None
        if own_evaluator:
            if fitness is None:
                raise ConfigError("run() needs a fitness function or an evaluator")
            evaluator = LocalEvaluator(fitness, self.layers, self.activations, s["batched"])

        def commit(state: loop.LoopState) -> None:
            self.state = state
            if on_generation is not None:
                on_generation(dict(state.history[-1]))

        try:
            self.state, last_ckpt = loop.run(
                self._strategy(),
                self.state,
                evaluator,
                generations,
                out_dir=out_dir,
                save_every=s["save_every"],
                metric_fields=METRIC_FIELDS if metrics_csv else None,
                delta_fitness=s["delta_fitness"],
                save_genome=self._save_genome,
                meta=self._state_meta(),
                on_generation=commit,
            )
        finally:
            if own_evaluator:
                evaluator.close()
        return RunResult(
            best_genome=self.best_genome,
            best_fitness=self.best_fitness,
            history=self.history,
            genes=self.last_genes,
            fitness=self.last_fitness,
            generation=self.generation,
            checkpoint=last_ckpt,
            threshold_hits=[dict(h) for h in self.threshold_hits],
        )

    def _save_genome(self, path: Path, genes: np.ndarray, fitness: float, info: dict) -> Path:
        """A threshold genome to ``path``.npz/.json (:func:`animat.evolve.genome_file.save_genome`)."""
        extra = {**info, "output_names": self.settings["output_names"]}
        return save_genome(path, Genome(self.layers, genes, self.activations), fitness, extra=extra)

    def _check_threshold(self, g: int, genes: np.ndarray, fit: np.ndarray, delta: float | None, out_dir) -> None:
        self.state = loop.check_threshold(self.state, g, genes, fit, delta, out_dir, self._save_genome)

    def seeded(self, genes: np.ndarray) -> Population:
        """This population (generation 0) with ``genes (size, num_genes)`` as the generation to evaluate
        first, e.g. another run's final population (``animat fly train --from``); breeding keys stay this
        population's (from its seed)."""
        genes = np.asarray(genes, dtype=np.float32)
        if genes.shape != (self.size, self.num_genes) or self.generation:
            raise ConfigError(
                f"a population of {self.size} × {self.num_genes} genes at generation 0 cannot start from genes "
                f"{genes.shape}"
            )
        self.state = replace(self.state, strategy=replace(self.state.strategy, genes=genes.copy()))
        return self

    # ------------------------------------------------------------------ checkpoints
    def _state_meta(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "layers": list(self.layers),
            "activations": list(self.activations),
            "init_std": self.init_std,
            "seed": self.seed,
            "num_genes": self.num_genes,
            "settings": self.settings,
            "output_names": self.settings.get("output_names"),
        }

    def save(self, out_dir: str | os.PathLike, keep: int = 3) -> Path:
        """Checkpoint the whole state to ``out_dir/checkpoints/gen-<generation>.{npz,json}``; returns the manifest."""
        return loop.save(out_dir, self._strategy(), self.state, self._state_meta(), keep=keep)

    @classmethod
    def resume(cls, path: str | os.PathLike) -> Population:
        """Restore a population from a checkpoint: a run dir or its ``checkpoints/`` (latest), or a
        ``gen-*.json``/``.npz`` (also one written before the engine's loop existed)."""
        state, meta = loop.load(path, PaperGA)
        try:
            pop = cls.__new__(cls)
            pop.size = int(meta["size"])
            pop.layers = network.check_architecture(meta["layers"])
            pop.activations = network.layer_activations(pop.layers, meta["activations"])
            pop.init_std = float(meta["init_std"])
            pop.seed = int(meta["seed"])
            pop.settings = {**RUN_DEFAULTS, **meta["settings"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks or garbles field {exc}") from None
        check_state(state.strategy, pop.size, pop.layers, str(path))
        pop.state = state
        return pop
