"""Evolution strategies (evosax's CMA-ES, SNES, OpenAI-ES) against each system's own GA at equal numbers
of evaluations (issue 24, acceptance 3): the fly's hover task (against the paper's GA) and the skier's
task (20 s of skiing, the symmetric one-axis skier of configs/skier_symmetric.toml, the default until issue 49,
against the slides' GA), 3 seeds each. Prints one JSON line and writes
the curves of best-so-far fitness against evaluations to ``bench-out/strategies.png``.

Every strategy of a task gets the same population and generations, so the same number of
evaluations, and the same fitness (the training's own evaluator, ``animat fly train`` /
``animat skier train`` settings otherwise at their defaults). Sized to run in ~15 minutes on 2
shared cores, smaller than the trainings' defaults:

- fly: ``--fitness hover``, 3 s episodes, 40 flies x 40 generations (default 200 x 100);
- skier: 20 s, 20 skiers x 30 generations (default 50 x 250).

Per task, strategy and seed: the best fitness found (best-so-far after the last generation), and
the mean wall time per generation (evaluation and breeding, shared machine); per task, for each
strategy, the seeds on which it beats the GA's best at the same number of evaluations.

    .venv/bin/python benchmarks/strategies.py [--out bench-out] [--seeds 0 1 2] [--fly-generations 40] ...
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from operator import attrgetter
from pathlib import Path

import numpy as np

from animat.evolve import loop
from animat.evolve.evaluate import make_evaluator
from animat.evolve.network import layer_activations
from animat.evolve.strategies import EVOLUTION_STRATEGIES
from animat.evolve.strategies.paper_ga import PaperGA
from animat.fly import train as fly_train
from animat.fly.tasks import FlyFitness
from animat.skier import train as skier_train

# the one-axis symmetric skier, the default when these figures were recorded (the default V-skates since issue 49)
SKIER_SYMMETRIC = Path(__file__).resolve().parents[1] / "configs" / "skier_symmetric.toml"


def fly_task(population: int, generations: int, seconds: float):
    """``(strategies {name: strategy}, evaluator factory, fitness_of)`` of the fly's hover task."""
    base = fly_train.TrainConfig.build(
        None, fitness="hover", population=population, generations=generations, seconds=seconds
    )
    ga = PaperGA(
        base.population,
        tuple(base.layers),
        base.init_std,
        base.pool_frac,
        base.elite_frac,
        base.crossover_prob,
        base.mutation_rate,
        base.mutation,
        base.mutation_std,
    )
    es = {
        name: fly_train.evolution_strategy(fly_train.TrainConfig.build(None, **{**vars(base), "strategy": name}))
        for name in EVOLUTION_STRATEGIES
    }

    def evaluator(seed: int):
        cfg = fly_train.TrainConfig.build(None, **{**vars(base), "seed": seed})
        activations = layer_activations(cfg.layers, cfg.activations)
        fitness = FlyFitness(
            cfg.fly_params(), float(cfg.seconds), cfg.fitness, activations, cfg.starts, cfg.seed, cfg.noise
        )
        return make_evaluator(fitness, cfg.layers, activations, True)

    return {"paper_ga": ga, **es}, evaluator, None


def skier_task(population: int, generations: int, seconds: float):
    """``(strategies, evaluator factory, fitness_of)`` of the skier's default task."""
    base = skier_train.TrainConfig.build(
        SKIER_SYMMETRIC, population=population, generations=generations, seconds=seconds
    )
    strategies = {
        name: skier_train.strategy(skier_train.TrainConfig.build(None, **{**vars(base), "strategy": name}))
        for name in skier_train.STRATEGIES
    }
    return strategies, lambda seed: skier_train.make_evaluator(base, base.skier_params()), attrgetter("fitness")


def run_one(strategy, evaluator, fitness_of, seed: int, generations: int) -> dict:
    """Best-so-far fitness per generation ``(G,)`` and mean seconds per generation of one run."""
    ev = evaluator(seed)
    try:
        state, _ = loop.run(strategy, loop.start(strategy, seed), ev, generations, fitness_of=fitness_of)
    finally:
        ev.close()
    best = np.fmax.accumulate([r["best"] for r in state.history])
    print(
        json.dumps({"strategy": strategy.name, "seed": seed, "best": float(best[-1])}), file=sys.stderr, flush=True
    )  # progress
    return {
        "curve": [float(b) for b in best],
        "seconds_per_generation": float(np.mean([r["seconds"] for r in state.history])),
    }


def plot(results: dict, sizes: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2))
    for ax, (task, per_strategy) in zip(np.atleast_1d(axes), results.items()):
        for i, (name, runs) in enumerate(per_strategy.items()):
            for j, r in enumerate(runs.values()):
                evals = sizes[task] * np.arange(1, len(r["curve"]) + 1)
                ax.plot(evals, r["curve"], color=f"C{i}", alpha=0.8, label=name if j == 0 else None)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("best fitness so far")
        ax.set_title(f"{task} (3 seeds each)")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--fly-population", type=int, default=40)
    ap.add_argument("--fly-generations", type=int, default=40)
    ap.add_argument("--fly-seconds", type=float, default=3.0)
    ap.add_argument("--skier-population", type=int, default=20)
    ap.add_argument("--skier-generations", type=int, default=30)
    ap.add_argument("--skier-seconds", type=float, default=20.0)
    args = ap.parse_args()
    tasks = {
        "fly_hover": (
            fly_task(args.fly_population, args.fly_generations, args.fly_seconds),
            args.fly_generations,
            args.fly_population,
        ),
        "skier": (
            skier_task(args.skier_population, args.skier_generations, args.skier_seconds),
            args.skier_generations,
            args.skier_population,
        ),
    }
    t0 = time.perf_counter()
    results, summary = {}, {}
    for task, ((strategies, evaluator, fitness_of), generations, _) in tasks.items():
        results[task] = {
            name: {seed: run_one(s, evaluator, fitness_of, seed, generations) for seed in args.seeds}
            for name, s in strategies.items()
        }
        ga_name = next(iter(strategies))
        ga_best = {seed: r["curve"][-1] for seed, r in results[task][ga_name].items()}
        summary[task] = {
            name: {
                "final_best": [round(r["curve"][-1], 4) for r in runs.values()],
                "seconds_per_generation": round(
                    float(np.mean([r["seconds_per_generation"] for r in runs.values()])), 4
                ),
                "beats_ga_on_seeds": None
                if name == ga_name
                else [seed for seed, r in runs.items() if r["curve"][-1] > ga_best[seed]],
            }
            for name, runs in results[task].items()
        }
    plot(results, {task: size for task, (_, _, size) in tasks.items()}, args.out / "strategies.png")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "strategies.json").write_text(json.dumps(results))
    print(
        json.dumps(
            {
                "benchmark": "strategies",
                "machine": platform.machine(),
                "seeds": args.seeds,
                "evaluations": {task: g * p for task, (_, g, p) in tasks.items()},
                "sizes": {task: {"population": p, "generations": g} for task, (_, g, p) in tasks.items()},
                "results": summary,
                "plot": str(args.out / "strategies.png"),
                "wall_seconds": round(time.perf_counter() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
