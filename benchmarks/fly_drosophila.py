"""Fly-steps per second of the real-scale fruit fly (preset ``drosophila``) beside the paper preset, in
one process: random networks, the batched jitted rollout at 100 and 1 000 flies, and simulated seconds
per wall-clock second for a population of 100 (a drosophila step is 0.1 ms, a paper step 1 ms).

The drosophila rollout runs three ways, interleaved (old, new on one thread, new, old, ...) on a machine shared with
other jobs, each figure the best of its repeats: the one before issue 50 (its step and its rollout frozen in
``fly_drosophila_baseline.py``: one jitted call, which XLA runs on one core), today's ``simulate_population`` with
``threads=1`` (one call), and the same as every caller runs it (the population split into one part per core, each
part's call on its own thread). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import UTC, datetime

import jax

from animat.evolve import network
from animat.fly import rollout as paper_rollout
from animat.fly.drosophila import rollout as drosophila_rollout
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.model import FlyParams
from fly_drosophila_baseline import baseline_rollout

PRESETS = {
    # name: (params, simulate_population, network layers, episode seconds timed)
    "paper": (FlyParams(), paper_rollout.simulate_population, [15, 20, 20, 3], 3.0),
    "drosophila": (
        DrosophilaParams(),
        drosophila_rollout.simulate_population,
        [drosophila_rollout.N_INPUTS, 20, 20, drosophila_rollout.N_OUTPUTS],
        0.1,
    ),
}


def random_nets(population: int, layers: list[int]):
    return network.unflatten(network.init_genes(jax.random.PRNGKey(0), population, layers, 0.5), layers)


def steps_per_second(preset: str, population: int, repeats: int = 3) -> float:
    """Fly-steps per second of one preset's rollout (the best of ``repeats`` after compiling)."""
    params, simulate, layers, seconds = PRESETS[preset]
    nets = random_nets(population, layers)
    acts = ("tanh",) * (len(layers) - 1)
    simulate(params, nets, acts, seconds)  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulate(params, nets, acts, seconds)
        times.append(time.perf_counter() - t0)
    return population * round(seconds / params.dt) / min(times)


def drosophila_rollouts(population: int):
    """The drosophila rollouts timed, each a call of random networks from start 0 without noise: the jitted rollout
    frozen before issue 50 (one call), today's public :func:`simulate_population` in one call (``threads=1``), and the
    same split over the cores (its default); all compiled before the timing."""
    params, _, layers, seconds = PRESETS["drosophila"]
    nets = random_nets(population, layers)
    acts = ("tanh",) * (len(layers) - 1)
    n_ticks = drosophila_rollout.n_ticks_for(params, seconds)
    args = (
        nets,
        jax.tree_util.tree_map(jax.numpy.asarray, drosophila_rollout.start_states(params, 1)),
        jax.numpy.zeros((1, drosophila_rollout.n_updates_for(seconds), drosophila_rollout.N_INPUTS)),
    )
    frozen = baseline_rollout(params, acts, n_ticks)
    today = lambda threads: lambda: drosophila_rollout.simulate_population(params, nets, acts, seconds, threads=threads)
    fns = {"old": lambda: jax.block_until_ready(frozen(*args)), "new_one_thread": today(1), "new": today(None)}
    for fn in fns.values():
        fn()
    return fns


def old_and_new(population: int, rounds: int = 3) -> dict[str, float]:
    """Drosophila fly-steps per second of each of :func:`drosophila_rollouts`, timed alternately ``rounds`` times
    each; the best of each."""
    params, _, _, seconds = PRESETS["drosophila"]
    fns = drosophila_rollouts(population)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    steps = population * round(seconds / params.dt)
    return {name: steps / t for name, t in best.items()}


def main() -> None:
    rates = {("paper", n): steps_per_second("paper", n) for n in (100, 1000)}
    before, one_thread = {}, {}
    for n in (100, 1000):
        timed = old_and_new(n)
        before[n], one_thread[n], rates[("drosophila", n)] = timed["old"], timed["new_one_thread"], timed["new"]
    dt = {name: PRESETS[name][0].dt for name in PRESETS}
    out = {
        "benchmark": "fly_drosophila",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.processor() or platform.platform()}",
        "jax_backend": jax.default_backend(),
        "cores": drosophila_rollout.cores(),
    }
    for (name, n), rate in rates.items():
        out[f"fly_steps_per_second_{name}_pop{n}"] = rate
    for name in PRESETS:
        out[f"simulated_seconds_per_wall_second_{name}_pop100"] = rates[(name, 100)] * dt[name] / 100
    for n in (100, 1000):
        out[f"fly_steps_per_second_drosophila_before_issue50_pop{n}"] = before[n]
        out[f"fly_steps_per_second_drosophila_one_thread_pop{n}"] = one_thread[n]
        out[f"drosophila_speedup_one_thread_pop{n}"] = one_thread[n] / before[n]
        out[f"drosophila_speedup_pop{n}"] = rates[("drosophila", n)] / before[n]
    out["drosophila_vs_paper_steps_ratio_pop1000"] = rates[("drosophila", 1000)] / rates[("paper", 1000)]
    out["note"] = "drosophila: dt 0.1 ms, 2 x 8 blade elements, layers 12-20-20-11; paper: dt 1 ms, layers 15-20-20-3"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
