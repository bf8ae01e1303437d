"""The generations of a fly run of either preset (:mod:`animat.fly.presets`): the paper GA or an evolution strategy
over the network's weights on a batched fitness, started fresh, resumed or from another run of the same preset and
network through the engine's one start path (:mod:`animat.evolve.start`, :mod:`animat.evolve.network_source`: the
goal network's command inputs are the hook that widens a source network), its config.json written first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.evolve import loop
from animat.evolve.evaluate import make_evaluator
from animat.evolve.genome import Genome
from animat.evolve.genome_file import save_genome
from animat.evolve.network import layer_activations, param_count
from animat.evolve.network_source import best_genome, final_population
from animat.evolve.population import Population
from animat.evolve.start import Start, begin, plan, refuse_finished, write_config
from animat.evolve.strategies.evosax_es import EvosaxES


def evolution_strategy(cfg, mean: np.ndarray | None = None) -> EvosaxES:
    """``cfg.strategy`` (one of :data:`EVOLUTION_STRATEGIES`) over the network's weights, from ``mean``
    (default 0: a new network; ``--from``: another run's best genome) with spread ``init_std``."""
    start = np.zeros(param_count(cfg.layers), dtype=np.float32) if mean is None else np.asarray(mean, dtype=np.float32)
    return EvosaxES(cfg.strategy, int(cfg.population), start, float(cfg.init_std))


def run_strategy(
    cfg,
    out: Path,
    resume: bool,
    evaluator,
    activations: list[str],
    names: list[str],
    on_generation: Callable[[dict], Any] | None,
    mean: np.ndarray | None = None,
) -> tuple[Genome, float, list[dict], int]:
    """Evolve with the evolution strategy ``cfg.strategy`` on the engine's loop (the paper GA's run
    directory: metrics.csv, checkpoints, threshold genomes), its distribution centred on ``mean`` at the
    start (:func:`evolution_strategy`); ``names``: the network's outputs, for the threshold genomes;
    ``(genome, its fitness, history, generations)``: with ``cfg.es_result`` "best" the best sample
    evaluated, with "centre" the distribution's final mean and its fitness, evaluated once more. The
    centre is the network an evolution strategy delivers (Salimans et al. 2017 report their centre's
    return); the best sample is the one whose perturbation happened to suit the run's fixed starts."""
    strategy = evolution_strategy(cfg, mean)
    state = begin(strategy, out, Start(resume), seed=int(cfg.seed), generations=cfg.generations)
    if not resume and cfg.fitness_threshold is not None:
        state = replace(state, threshold=float(cfg.fitness_threshold))

    def save_threshold(path: Path, genes: np.ndarray, fitness: float, info: dict) -> Path:
        return save_genome(path, Genome(cfg.layers, genes, activations), fitness, extra={**info, "output_names": names})

    state, _ = loop.run(
        strategy,
        state,
        evaluator,
        int(cfg.generations),
        metric_fields=loop.METRIC_FIELDS,
        out_dir=out,
        save_every=cfg.save_every,
        delta_fitness=cfg.delta_fitness,
        save_genome=save_threshold,
        meta={"seed": cfg.seed, "layers": list(cfg.layers), "activations": list(activations)},
        on_generation=None if on_generation is None else lambda st: on_generation(dict(st.history[-1])),
    )
    if cfg.es_result == "centre":
        genes = strategy.decode(strategy.distribution_mean(state.strategy)[None])
        return (
            Genome(cfg.layers, genes[0], activations),
            float(evaluator(genes)[0]),
            list(state.history),
            state.generation,
        )
    return Genome(cfg.layers, state.best_genes, activations), state.best_fitness, list(state.history), state.generation


def command_inputs_to_add(cfg, layers) -> int:
    """3 where run ``cfg`` trains the goal network (the fly's inputs + the command's 3) from a source network
    ``layers`` without the command inputs but otherwise the same size (a hover or direction network): its
    genes are widened with zero weights on them (:func:`animat.evolve.network.widen_inputs`); else 0."""
    return 3 if getattr(cfg, "task", None) == "goal" and list(layers) == [cfg.layers[0] - 3, *cfg.layers[1:]] else 0


def _check_same_network(cfg, source: Path, layers, activations, stored: dict) -> int:
    """The command inputs to add to ``source``'s network (:func:`command_inputs_to_add`): the hook of
    :mod:`animat.evolve.network_source`. ConfigError (one line) unless its network (``layers``, ``activations``,
    its config's wings) is ``cfg``'s (a goal run's network may lack the command inputs)."""
    mine = (
        list(cfg.layers),
        list(layer_activations(cfg.layers, cfg.activations)),
        bool(getattr(cfg, "asymmetric", False)),
    )
    added = command_inputs_to_add(cfg, layers)
    theirs = ([layers[0] + added, *layers[1:]], list(activations), bool(stored.get("asymmetric", False)))
    if mine != theirs:
        describe = lambda a: (
            f"layers {a[0]}, activations {sorted(set(a[1]))}, {'asymmetric' if a[2] else 'symmetric'} wings"
        )
        raise ConfigError(
            f"--from {str(source)!r}: its network ({describe(theirs)}) is not this run's ({describe(mine)})"
        )
    return added


def read_source_config(cfg, source: Path) -> dict:
    """The config.json of ``--from`` run ``source``; ConfigError (one line) unless it is a run of ``cfg``'s preset."""
    stored = runs.read_run_config(source, "a fly training run directory (--from)")
    preset, theirs = cfg.preset, stored.get("preset", "paper")
    if preset != theirs:
        raise ConfigError(f"--from {str(source)!r}: it is a run of the {theirs} preset, this one is {preset}")
    return stored


def _same_network(cfg, source: Path):
    """The hook ``(layers, activations) -> inputs to add`` checking ``source``'s network against ``cfg``'s
    (:func:`_check_same_network`), once its config.json says it is a run of ``cfg``'s preset."""
    stored = read_source_config(cfg, source)
    return lambda layers, activations: _check_same_network(cfg, source, layers, activations, stored)


def source_population(cfg, source: Path) -> tuple[np.ndarray, dict]:
    """The final population's genes ``(P, G)`` of run ``source`` (its last checkpoint; widened for a goal run,
    :func:`command_inputs_to_add`) to start ``cfg``'s paper-GA run from, and the ``from`` record ``{path,
    generation}``. ConfigError (one line) unless its network is ``cfg``'s (layers, activations, wings) and
    its size ``cfg.population``."""
    return final_population(source, cfg.population, _same_network(cfg, source), unit="flies")


def source_mean(cfg, source: Path) -> tuple[np.ndarray, dict]:
    """The best genome of finished run ``source`` (its ``best_genome.npz``, any strategy), where an
    evolution strategy's run ``cfg`` centres its first distribution, and the ``from`` record ``{path,
    generation}``. ConfigError/CheckpointError (one line) for a run without one or another network."""
    return best_genome(source, cfg.strategy, _same_network(cfg, source))


def read_source(cfg, source: Path) -> tuple[np.ndarray, dict]:
    """What run ``cfg`` starts from in ``--from`` run ``source`` (:func:`source_population` for the paper GA,
    :func:`source_mean` for an evolution strategy) and the ``from`` record."""
    return (source_population if cfg.strategy == "paper_ga" else source_mean)(cfg, Path(source))


def check_source(cfg, source: Path) -> dict:
    """The one-line refusal of a ``--from`` that ``cfg``'s strategy cannot start from (:func:`read_source`); else
    the ``from`` record."""
    return read_source(cfg, source)[1]


def evolve(
    cfg,
    out: Path,
    fitness,
    names: list[str],
    *,
    resume: bool = False,
    from_run: Path | None = None,
    on_generation: Callable[[dict], Any] | None = None,
    record: dict | None = None,
) -> tuple[Genome, float, list[dict], int]:
    """The generations of a fly run (either preset): ``cfg.generations`` of the paper GA or of the evolution
    strategy ``cfg.strategy`` on the batched ``fitness`` into run directory ``out``, fresh, resumed, or
    started ``from_run`` (:mod:`animat.evolve.start`: its final population for the GA, its best genome as the
    first distribution's centre for a strategy; recorded as ``from`` in config.json, written here beside the
    run's system, verb and options). ``names``: the network's
    outputs (the activations are ``fitness``'s own); ``record``: more for config.json
    (:func:`animat.fly.train.start_pool_record`).
    Returns ``(best genome, its fitness, history, generations)``."""
    ga = cfg.strategy == "paper_ga"
    start = plan(out, resume=resume, from_run=from_run, read_source=lambda path: read_source(cfg, path))
    pop = None
    if start.resume and ga:
        pop = Population.resume(out)
        refuse_finished(out, pop.generation, cfg.generations)
    write_config(out, {**runs.config_record("fly", "train", cfg), **(record or {})}, start)
    if ga and pop is None:
        pop = Population(cfg.population, cfg.layers, cfg.activations, cfg.init_std, cfg.seed)
        pop = pop if start.source is None else pop.seeded(start.source)
    activations = list(fitness.activations)
    evaluator = make_evaluator(fitness, cfg.layers, activations, True, backend=cfg.backend, address=cfg.address)
    try:
        if not ga:
            return run_strategy(cfg, out, start.resume, evaluator, activations, names, on_generation, start.source)
        return run_paper_ga(cfg, out, pop, fitness, evaluator, names, on_generation)
    finally:
        evaluator.close()


def run_paper_ga(
    cfg, out: Path, pop: Population, fitness, evaluator, names: list[str], on_generation
) -> tuple[Genome, float, list[dict], int]:
    """``cfg.generations`` of the paper GA (``pop``, fresh or resumed) with ``cfg``'s breeding settings, the batched
    ``fitness`` through ``evaluator`` (not closed here), metrics and checkpoints in ``out``; ``names``: the network's
    outputs. Returns ``(best genome, its fitness, history, generations)``."""
    result = pop.run(
        fitness,
        cfg.generations,
        batched=True,
        crossover_prob=cfg.crossover_prob,
        mutation_rate=cfg.mutation_rate,
        mutation=cfg.mutation,
        mutation_std=cfg.mutation_std,
        pool_frac=cfg.pool_frac,
        elite_frac=cfg.elite_frac,
        output_names=names,
        fitness_threshold=cfg.fitness_threshold,
        delta_fitness=cfg.delta_fitness,
        save_every=cfg.save_every,
        out_dir=out,
        metrics_csv=True,
        evaluator=evaluator,
        on_generation=on_generation,
    )
    return result.best_genome, result.best_fitness, result.history, result.generation
