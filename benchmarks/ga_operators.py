"""Time one GA generation (selection, elitism, crossover, mutation) against PyGAD, same settings.

100 genomes of a [15, 20, 20, 3] network (803 genes); top-10 mating pool, 5 elites, uniform crossover,
each gene mutated with probability 0.05, initial genes N(0, 1). Ours: ``operators.next_generation``
after jit warm-up, median of many calls with ``block_until_ready``. PyGAD: ``pygad.GA`` with
steady-state selection of 10 parents, keep_elitism=5, uniform crossover, random mutation by
replacement in [-1, 1] (PyGAD has no Gaussian redraw), a trivially cheap batched fitness; the time of
N generations divided by N, minus the measured time of its fitness calls.

Prints one JSON line. Usage: ``python benchmarks/ga_operators.py [--repeats 300] [--pygad-generations 100]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime

import jax
import numpy as np

from animat.evolve import network, operators

LAYERS = [15, 20, 20, 3]
POP = 100
POOL_FRAC, ELITE_FRAC, CROSSOVER_PROB, MUTATION_RATE = 0.1, 0.05, 0.5, 0.05


def time_ours(repeats: int) -> dict:
    key = jax.random.PRNGKey(0)
    genes = network.init_genes(key, POP, LAYERS, 1.0)
    fitness = jax.random.normal(jax.random.PRNGKey(1), (POP,))
    kw = dict(
        pool_frac=POOL_FRAC,
        elite_frac=ELITE_FRAC,
        crossover_prob=CROSSOVER_PROB,
        mutation_rate=MUTATION_RATE,
        mutation="normal",
        mutation_std=1.0,
    )
    t0 = time.perf_counter()
    operators.next_generation(key, genes, fitness, **kw).block_until_ready()
    compile_s = time.perf_counter() - t0
    for i in range(10):
        operators.next_generation(jax.random.fold_in(key, i), genes, fitness, **kw).block_until_ready()
    times = []
    for i in range(repeats):
        k = jax.random.fold_in(key, 1000 + i)
        t0 = time.perf_counter()
        genes = operators.next_generation(k, genes, fitness, **kw)
        genes.block_until_ready()
        times.append(time.perf_counter() - t0)
    return {
        "ms": 1e3 * statistics.median(times),
        "p90_ms": 1e3 * float(np.percentile(times, 90)),
        "compile_s": compile_s,
    }


def time_pygad(generations: int) -> dict:
    import pygad

    n_genes = network.param_count(LAYERS)
    init = np.random.default_rng(0).normal(size=(POP, n_genes))
    fit_calls = []

    def fitness_func(ga, solutions, idx):  # batched: one call per generation
        t0 = time.perf_counter()
        out = -np.abs(solutions[:, 0])
        fit_calls.append(time.perf_counter() - t0)
        return out

    def make(n):
        return pygad.GA(
            num_generations=n,
            num_parents_mating=int(round(POOL_FRAC * POP)),
            fitness_func=fitness_func,
            fitness_batch_size=POP,
            initial_population=init.copy(),
            gene_type=float,
            parent_selection_type="sss",
            keep_elitism=int(round(ELITE_FRAC * POP)),
            crossover_type="uniform",
            mutation_type="random",
            mutation_probability=MUTATION_RATE,
            mutation_by_replacement=True,
            random_mutation_min_val=-1.0,
            random_mutation_max_val=1.0,
            random_seed=0,
            suppress_warnings=True,
            save_best_solutions=False,
            save_solutions=False,
        )

    make(3).run()  # warm-up (imports, caches)
    best = None
    for _ in range(2):
        fit_calls.clear()
        ga = make(generations)
        t0 = time.perf_counter()
        ga.run()
        total = time.perf_counter() - t0
        per_gen = (total - sum(fit_calls)) / generations
        if best is None or per_gen < best[0]:
            best = (per_gen, total / generations, sum(fit_calls) / generations)
    return {
        "ms": 1e3 * best[0],
        "ms_including_fitness": 1e3 * best[1],
        "fitness_ms": 1e3 * best[2],
        "version": pygad.__version__,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--pygad-generations", type=int, default=100)
    args = ap.parse_args()
    ours = time_ours(args.repeats)
    try:
        theirs = time_pygad(args.pygad_generations)
    except ImportError:
        theirs = None
    result = {
        "benchmark": "ga_operators",
        "ms_per_generation": round(ours["ms"], 4),
        "p90_ms_per_generation": round(ours["p90_ms"], 4),
        "jit_compile_s": round(ours["compile_s"], 3),
        "pygad_ms_per_generation": None if theirs is None else round(theirs["ms"], 4),
        "pygad_ms_per_generation_including_fitness": None
        if theirs is None
        else round(theirs["ms_including_fitness"], 4),
        "pygad_version": None if theirs is None else theirs["version"],
        "speedup_vs_pygad": None if theirs is None else round(theirs["ms"] / ours["ms"], 2),
        "target_ms": 5.0,
        "meets_target": ours["ms"] < 5.0,
        "population": POP,
        "genes": network.param_count(LAYERS),
        "layers": LAYERS,
        "settings": {
            "pool_frac": POOL_FRAC,
            "elite_frac": ELITE_FRAC,
            "crossover_prob": CROSSOVER_PROB,
            "mutation_rate": MUTATION_RATE,
        },
        "repeats": args.repeats,
        "pygad_generations": args.pygad_generations,
        "jax_version": jax.__version__,
        "jax_backend": jax.default_backend(),
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
        },
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
