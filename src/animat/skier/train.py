"""Training run of the skier GA: configuration, the loop, checkpoints (resumable), the run directory."""

from __future__ import annotations

import math
from operator import attrgetter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from animat import runs
from animat.config import merge_options
from animat.errors import CheckpointError, ConfigError
from animat.evolve import loop
from animat.evolve.strategies import EVOLUTION_STRATEGIES
from animat.evolve.strategies.keyframe_ga import PARENT_PROBS, KeyframeGA, KeyframeParams
from animat.skier import ga
from animat.skier.gene import TAU, mirror, random_genes, save_gene_json, standing_genes, validate_gene
from animat.skier.model import FRICTION_MODES, SkierParams, hip_joints
from animat.skier.replay import write_replay
from animat.skier.rollout import Evaluator
from animat.viz import plots

BACKENDS = ("local", "ray")  # as animat.evolve.evaluate's (not imported here: it loads JAX)
STRATEGIES = ("keyframe_ga", *EVOLUTION_STRATEGIES)  # --strategy: the slides' GA, or an evolution strategy (loads JAX)
METRIC_FIELDS = ["generation", "best", "mean", "median", "fell", "best_net_forward_m", "best_ever", "seconds"]


REPLAY_SETTINGS = ("seconds", "frame_dt", "fall_deg", "bonus")  # what a gene file carries so that its replay scores as training did


@dataclass
class TrainConfig:
    """Everything that defines a run (defaults < config file < command line)."""

    generations: int = 250
    population: int = 50
    seconds: float = 20.0  # per evaluation, s
    seed: int = 0
    strategy: str = "keyframe_ga"  # or an evolution strategy (STRATEGIES): those ignore elites/parent_probs/mutation_rate/init_standing
    friction: str = "anisotropic"
    hip: str = "one-axis"  # or "two-axis": two more gene columns (animat.skier.model)
    backend: str = "local"  # "local": mujoco.rollout thread pool; "ray": Ray tasks (animat.skier.distributed)
    ray_address: str | None = None  # None: start a local Ray instance
    n_states: int = 10
    tau: float = TAU
    elites: int = 5
    parent_probs: list[float] = field(default_factory=lambda: list(PARENT_PROBS))
    mutation_rate: float = 0.02
    frame_dt: float = 0.02  # s between scored frames
    fall_deg: float = 80.0
    bonus: float = 5.0
    nthread: int = 0  # 0: one per CPU (local backend); Ray workers (ray backend)
    chunk_seconds: float = 2.0  # simulate in chunks this long and stop simulating skiers that fell (same fitness)
    # generation 0: this fraction is the standing pose plus bilaterally symmetric noise (sigma degrees), the rest
    # uniform random genes; random genes almost all fall within 2 s, so without standing seeds the GA starts from
    # nothing that skis (animat.skier.gene.standing_genes)
    init_standing: float = 0.5
    init_sigma_deg: float = 20.0  # also an evolution strategy's starting spread around the standing pose
    anim_seconds: float = 10.0
    skier: dict = field(default_factory=dict)  # SkierParams overrides (friction coefficients, timestep, ...)

    def skier_params(self) -> SkierParams:
        clash = {k: self.skier[k] for k in ("friction", "hip") if k in self.skier and self.skier[k] != getattr(self, k)}
        if clash:
            raise ConfigError(f"set {', '.join(clash)} at the top level of the config (or with --{'/--'.join(clash)}), not in [skier]: got {clash}")
        return SkierParams.from_dict({**self.skier, "friction": self.friction, "hip": self.hip})

    @property
    def n_joints(self) -> int:
        return hip_joints(self.hip)

    def ga_params(self) -> KeyframeParams:
        return KeyframeParams(int(self.elites), tuple(float(p) for p in self.parent_probs), float(self.mutation_rate))

    def validate(self) -> "TrainConfig":
        if self.friction not in FRICTION_MODES:
            raise ConfigError(f"unknown friction {self.friction!r}; expected 'anisotropic' or 'isotropic'")
        for name in ("generations", "population", "n_states", "elites"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("seconds", "tau", "frame_dt", "anim_seconds", "chunk_seconds"):
            if not float(getattr(self, name)) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}; expected one of {list(STRATEGIES)}")
        if self.strategy != "keyframe_ga" and not self.init_sigma_deg > 0:
            raise ConfigError(f"init_sigma_deg is the evolution strategy's starting spread: it must be > 0, got {self.init_sigma_deg}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"unknown backend {self.backend!r}; expected one of {list(BACKENDS)}")
        if self.nthread < 0:
            raise ConfigError(f"--threads must be >= 0 (0: one per CPU), got {self.nthread}")
        if self.n_states % 2:
            raise ConfigError(f"n_states must be even (the second half mirrors the first), got {self.n_states}")
        if self.population <= self.elites:
            raise ConfigError(f"population ({self.population}) must exceed elites ({self.elites})")
        if self.elites < 2 or len(self.parent_probs) != self.elites or any(p < 0 for p in self.parent_probs) or sum(p > 0 for p in self.parent_probs) < 2:
            raise ConfigError(f"parent_probs must be {self.elites} non-negative numbers (one per elite, elites >= 2), at least two "
                              f"of them > 0 (two different parents), got {self.parent_probs}")
        if not 0 <= self.mutation_rate <= 1:
            raise ConfigError(f"mutation_rate must be in [0, 1], got {self.mutation_rate}")
        if not 0 <= self.init_standing <= 1 or not self.init_sigma_deg >= 0:
            raise ConfigError(f"init_standing must be in [0, 1] and init_sigma_deg >= 0, got {self.init_standing} and {self.init_sigma_deg}")
        dt = self.skier_params().timestep
        if not dt <= self.frame_dt <= self.seconds:
            raise ConfigError(f"need timestep ({dt} s) <= frame_dt ({self.frame_dt} s) <= seconds ({self.seconds} s)")
        return self

    @classmethod
    def build(cls, file: str | Path | None = None, **overrides: Any) -> "TrainConfig":
        values = merge_options(cls, file, overrides)
        try:
            return cls(**values).validate()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad training option in {file or 'options'}: {exc}") from None


def make_evaluator(cfg: TrainConfig, params: SkierParams):
    """The configured backend's evaluator: genes (P, n, m) -> Scores; a context manager."""
    kwargs = dict(fall_deg=cfg.fall_deg, bonus=cfg.bonus, tau=cfg.tau, chunk_seconds=cfg.chunk_seconds)
    if cfg.backend == "ray":
        from animat.skier.distributed import RaySkierEvaluator

        return RaySkierEvaluator(params, cfg.seconds, cfg.frame_dt, address=cfg.ray_address, num_workers=cfg.nthread or None, **kwargs)
    return Evaluator(params, cfg.seconds, cfg.frame_dt, nthread=cfg.nthread or None, **kwargs)


def first_generation(rng: np.random.Generator, cfg: TrainConfig) -> np.ndarray:
    """Generation 0 (P, n, 12): ``round(init_standing * P)`` standing-pose genes (the first one exact), then random ones."""
    k = int(round(cfg.init_standing * cfg.population))
    return np.concatenate([standing_genes(rng, k, cfg.init_sigma_deg, cfg.n_states, cfg.n_joints),
                           random_genes(rng, cfg.population - k, cfg.n_states, cfg.n_joints)])


def strategy(cfg: TrainConfig):
    """The engine's strategy ``cfg.strategy``: the keyframe GA over the skier's genes, generation 0 from
    :func:`first_generation`; or an evolution strategy over the first half of the keyframes
    (:func:`animat.skier.ga.decode`), from the standing pose with spread ``init_sigma_deg``."""
    if cfg.strategy == "keyframe_ga":
        return KeyframeGA(ga.layout(cfg.n_joints), lambda rng: first_generation(rng, cfg), cfg.ga_params())
    from animat.evolve.strategies.evosax_es import EvosaxES

    dims = cfg.n_states // 2 * cfg.n_joints
    return EvosaxES(cfg.strategy, int(cfg.population), np.zeros(dims, dtype=np.float32), float(cfg.init_sigma_deg) / ga.ES_UNIT_DEG,
                    lambda x: ga.decode(x, cfg.n_states, cfg.n_joints))


def _row(gen: int, scores, fitness: np.ndarray, best_ever: float, seconds: float) -> dict:
    """The metrics row of a generation (:data:`METRIC_FIELDS`; the signature is :func:`animat.evolve.loop.run`'s ``metrics``)."""
    f = scores.fitness
    b = int(np.argmax(f))
    return {
        "generation": gen, "best": float(f[b]), "mean": float(np.mean(f)), "median": float(np.median(f)),
        "fell": int(scores.fell.sum()), "best_net_forward_m": float(scores.net_forward_m[b]),
        "best_ever": float(best_ever), "seconds": round(seconds, 4),
    }


def train(cfg: TrainConfig, out: Path, *, resume: bool = False, on_generation: Callable[[dict], Any] | None = None) -> dict:
    """Run the GA into ``out``; returns summary.json's content. Each generation writes
    ``metrics.csv`` and a checkpoint (population about to be evaluated, RNG state, best so far,
    history), so an interrupted run continues with ``resume=True`` exactly as if never stopped
    (also from a checkpoint written before the engine's loop existed)."""
    out = Path(out)
    params = cfg.skier_params()
    ga_strategy = strategy(cfg)
    if resume:
        state, _ = loop.load(out, ga_strategy)
        genes, _ = ga_strategy.ask(state.strategy)
        if genes.shape[1:] != (cfg.n_states, cfg.n_joints):
            raise CheckpointError(f"checkpoint in {str(out)!r} holds genes of shape {genes.shape}, config says {cfg.n_states} x {cfg.n_joints}")
        runs.refuse_finished(out, state.generation, cfg.generations, "generations", "--generations")
    else:
        state = loop.start(ga_strategy, cfg.seed)
    runs.atomic_write_json(out / "config.json", asdict(cfg))  # on --resume too: --generations etc. may have changed
    with make_evaluator(cfg, params) as ev:
        state, _ = loop.run(ga_strategy, state, ev, cfg.generations, fitness_of=attrgetter("fitness"), metrics=_row,
                            metric_fields=METRIC_FIELDS, out_dir=out, meta={"seed": cfg.seed},
                            on_generation=None if on_generation is None else lambda st: on_generation(dict(st.history[-1])))
    history, best_fit = list(state.history), state.best_fitness
    best_gene = mirror(validate_gene(state.best_genes, cfg.n_states, cfg.n_joints))
    save_gene_json(out / "best_gene.json", best_gene, best_fit, {"friction": cfg.friction, "skier": params.to_dict(), **{
        k: getattr(cfg, k) for k in REPLAY_SETTINGS}}, tau=cfg.tau)
    plots.fitness_plot(history, out / "plots" / "fitness.png", title=f"skier ({cfg.friction} friction)")
    flight = write_replay(params, best_gene, cfg.seconds, out, anim_seconds=cfg.anim_seconds, frame_dt=cfg.frame_dt,
                          title=f"best skier ({cfg.friction})", fall_deg=cfg.fall_deg, bonus=cfg.bonus, tau=cfg.tau)
    first, last = history[0], history[-1]
    summary = {
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
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
