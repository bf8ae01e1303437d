"""Glue between the fly and the engine: configuration, the training run, its run directory."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from animat import runs
from animat.config import merge_options
from animat.errors import ConfigError
from animat.evolve import loop
from animat.evolve.checkpoint import export_pickle, save_genome
from animat.evolve.evaluate import make_evaluator
from animat.evolve.genome import Genome
from animat.evolve.network import check_architecture, layer_activations, param_count
from animat.evolve.operators import MUTATIONS
from animat.evolve.population import Population
from animat.evolve.strategies import EVOLUTION_STRATEGIES
from animat.evolve.strategies.evosax_es import EvosaxES
from animat.fly.model import FlyParams
from animat.fly.replay import check_genome, write_replay
from animat.fly.tasks import FlyFitness, fitness_function
from animat.viz import plots


HIDDEN = (20, 20)  # the default network's hidden layers
STRATEGIES = ("paper_ga", *EVOLUTION_STRATEGIES)  # --strategy: the paper's GA, or an evolution strategy (animat.evolve.strategies)


@dataclass
class TrainConfig:
    """Everything that defines a training run (resolved: defaults < config file < command line)."""

    generations: int = 100
    population: int = 200
    seconds: float = 3.0  # episode length, s
    fitness: str = "lateral"
    starts: int = 1  # start states per fly (1: at rest only; more: perturbed starts too, for robustness)
    noise: float = 0.0  # sensor-noise std on the perturbed starts (network-input units)
    layers: list[int] | None = None  # None: [inputs, 20, 20, outputs] of the fly (15,20,20,3; 18,20,20,6 asymmetric)
    activations: str | list[str] = "tanh"  # one name for every layer, or one per non-input layer
    control_ms: float = 10.0
    asymmetric: bool = False
    seed: int = 0
    strategy: str = "paper_ga"  # or an evolution strategy (STRATEGIES); those ignore the GA's breeding settings below
    init_std: float = 1.0  # generation 0's weights ~ N(0, init_std^2); an evolution strategy's starting spread around 0
    crossover_prob: float = 0.5
    mutation_rate: float = 0.05
    mutation: str = "normal"
    mutation_std: float | None = None
    pool_frac: float = 0.1
    elite_frac: float = 0.05
    fitness_threshold: float | None = None
    delta_fitness: float | None = None
    save_every: int = 1
    backend: str = "local"
    address: str | None = None
    replay_seconds: float = 30.0
    anim_seconds: float = 6.0
    fly: dict = field(default_factory=dict)  # FlyParams overrides, e.g. {"speed_limits": [30, 20, 10]}

    def fly_params(self) -> FlyParams:
        base = FlyParams.from_dict(self.fly)
        return base.with_(control_dt=self.control_ms / 1000.0, asymmetric=self.asymmetric)

    def validate(self) -> "TrainConfig":
        fitness_function(self.fitness)
        for name in ("generations", "population"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("seconds", "control_ms", "replay_seconds", "anim_seconds", "init_std"):
            if not float(getattr(self, name)) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        checks = {
            "crossover_prob": 0 <= self.crossover_prob <= 1, "mutation_rate": 0 <= self.mutation_rate <= 1,
            "pool_frac": 0 < self.pool_frac <= 1, "elite_frac": 0 <= self.elite_frac < 1,
            "starts": int(self.starts) >= 1, "noise": self.noise >= 0, "save_every": int(self.save_every) >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ConfigError(f"{name} = {getattr(self, name)} is out of range")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}; expected one of {list(STRATEGIES)}")
        if self.mutation not in MUTATIONS:
            raise ConfigError(f"unknown mutation {self.mutation!r}; expected one of {list(MUTATIONS)}")
        if self.population < 4:
            raise ConfigError(f"population must be >= 4 (elites and a mating pool), got {self.population}")
        if self.backend not in ("local", "ray"):
            raise ConfigError(f"unknown backend {self.backend!r}; expected 'local' or 'ray'")
        params = self.fly_params()
        if self.layers is None:
            self.layers = [params.n_inputs, *HIDDEN, params.n_outputs]
        self.layers = [int(n) for n in self.layers]
        layer_activations(check_architecture(self.layers), self.activations)
        if self.layers[0] != params.n_inputs or self.layers[-1] != params.n_outputs:
            raise ConfigError(
                f"network layers {self.layers} do not fit the fly: first layer must be {params.n_inputs} "
                f"(observation size) and last {params.n_outputs} (wing angles){' with --asymmetric' if self.asymmetric else ''}"
            )
        return self

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> "TrainConfig":
        values = merge_options(cls, file, overrides)
        return cls(**values).validate()


def output_names(cfg: TrainConfig) -> list[str]:
    names = ["flap", "feather", "sweep"]
    return [f"{side} {n}" for side in ("right", "left") for n in names] if cfg.asymmetric else names


def evolution_strategy(cfg: TrainConfig) -> EvosaxES:
    """``cfg.strategy`` (one of :data:`EVOLUTION_STRATEGIES`) over the network's weights, from mean 0 with spread ``init_std``."""
    return EvosaxES(cfg.strategy, int(cfg.population), np.zeros(param_count(cfg.layers), dtype=np.float32), float(cfg.init_std))


def run_strategy(cfg: TrainConfig, out: Path, resume: bool, evaluator, activations: list[str],
                 on_generation: Callable[[dict], Any] | None) -> tuple[Genome, float, list[dict], int]:
    """Evolve with the evolution strategy ``cfg.strategy`` on the engine's loop (the paper GA's run
    directory: metrics.csv, checkpoints, threshold genomes); ``(best genome, its fitness, history, generations)``."""
    strategy = evolution_strategy(cfg)
    if resume:
        state, _ = loop.load(out, strategy)
        runs.refuse_finished(out, state.generation, cfg.generations, "generations", "--generations")
    else:
        state = loop.start(strategy, int(cfg.seed))
        if cfg.fitness_threshold is not None:
            state = replace(state, threshold=float(cfg.fitness_threshold))

    def save_threshold(path: Path, genes: np.ndarray, fitness: float, info: dict) -> Path:
        return save_genome(path, Genome(cfg.layers, genes, activations), fitness, extra={**info, "output_names": output_names(cfg)})

    state, _ = loop.run(strategy, state, evaluator, int(cfg.generations), metric_fields=loop.METRIC_FIELDS, out_dir=out,
                        save_every=cfg.save_every, delta_fitness=cfg.delta_fitness, save_genome=save_threshold,
                        meta={"seed": cfg.seed, "layers": list(cfg.layers), "activations": list(activations)},
                        on_generation=None if on_generation is None else lambda st: on_generation(dict(st.history[-1])))
    return Genome(cfg.layers, state.best_genes, activations), state.best_fitness, list(state.history), state.generation


def train(cfg: TrainConfig, out: Path, *, resume: bool = False, on_generation: Callable[[dict], Any] | None = None) -> dict:
    """Evolve flies per ``cfg`` into run directory ``out`` (already created, or the one being resumed).

    Writes ``config.json``, ``metrics.csv`` (per generation), ``checkpoints/`` (resumable),
    ``best_genome.npz/.json`` (+ ``best_genome.pkl`` export), ``plots/fitness.png``, and a replay
    of the best fly (see :func:`animat.fly.replay.write_replay`); returns ``summary.json``'s content.
    """
    params = cfg.fly_params()
    ga = cfg.strategy == "paper_ga"
    if not ga:
        pop = None
    elif resume:
        pop = Population.resume(out)
        runs.refuse_finished(out, pop.generation, cfg.generations, "generations", "--generations")
    else:
        pop = Population(cfg.population, cfg.layers, cfg.activations, cfg.init_std, cfg.seed)
    runs.atomic_write_json(out / "config.json", asdict(cfg))  # on --resume too: --generations etc. may have changed
    activations = layer_activations(cfg.layers, cfg.activations)
    fitness = FlyFitness(params, float(cfg.seconds), cfg.fitness, activations, cfg.starts, cfg.seed, cfg.noise)

    evaluator = make_evaluator(fitness, cfg.layers, activations, True, backend=cfg.backend, address=cfg.address)
    t0 = time.perf_counter()
    try:
        if ga:
            result = pop.run(
                fitness, cfg.generations, batched=True, crossover_prob=cfg.crossover_prob, mutation_rate=cfg.mutation_rate,
                mutation=cfg.mutation, mutation_std=cfg.mutation_std, pool_frac=cfg.pool_frac, elite_frac=cfg.elite_frac,
                output_names=output_names(cfg), fitness_threshold=cfg.fitness_threshold, delta_fitness=cfg.delta_fitness,
                save_every=cfg.save_every, out_dir=out, metrics_csv=True, evaluator=evaluator, on_generation=on_generation,
            )
            best, best_fitness, history, generation = result.best_genome, result.best_fitness, result.history, result.generation
        else:
            best, best_fitness, history, generation = run_strategy(cfg, out, resume, evaluator, activations, on_generation)
    finally:
        evaluator.close()
    train_seconds = time.perf_counter() - t0
    check_genome(params, best)
    extra = {"fly": params.to_dict(), "fitness": cfg.fitness, "seconds": cfg.seconds}
    save_genome(out / "best_genome.npz", best, best_fitness, extra)
    export_pickle(best, out / "best_genome.pkl")
    plots.fitness_plot(history, out / "plots" / "fitness.png", title=f"fly, {cfg.fitness} fitness")
    flight = write_replay(params, best, cfg.replay_seconds, out, anim_seconds=cfg.anim_seconds, title=f"best fly ({cfg.fitness})")
    last = history[-1]
    summary = {
        "generations": int(generation),
        "population": cfg.population,
        "strategy": cfg.strategy,
        "fitness": cfg.fitness,
        "best_fitness": float(best_fitness),
        "last_generation_mean_fitness": float(last["mean"]) if last["mean"] is not None else math.nan,
        "total_crashes": int(sum(int(r["crashes"]) for r in history)),
        "train_seconds_this_session": round(train_seconds, 3),
        "mean_seconds_per_generation": float(np.mean([float(r["seconds"]) for r in history])),
        **{f"replay_{k}": v for k, v in flight.items()},
    }
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
