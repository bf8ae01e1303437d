"""Fly-steps per second of the real-scale fruit fly (preset ``drosophila``) beside the paper preset, in
one process: random networks, the batched jitted rollout at 100 and 1 000 flies, and simulated seconds
per wall-clock second for a population of 100 (a drosophila step is 0.1 ms, a paper step 1 ms).

The drosophila rollout runs three ways, interleaved (old, new on one device, new, old, ...) on a machine shared with
other jobs, each figure the best of its repeats: the one before issue 50 (its step and its rollout frozen in
``fly_drosophila_baseline.py``: one jitted call, which XLA runs on one core), today's ``simulate_population`` on one
JAX device, and the same on every host device the process has (one per core, :mod:`animat.host_devices`, as the
command line starts JAX; the population split into one part per device). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import UTC, datetime

from animat import host_devices

DEVICES = host_devices.configure()  # before JAX starts: one host device per core, as the command line asks

import jax  # noqa: E402  (after XLA_FLAGS)

from animat.evolve import network  # noqa: E402
from animat.fly import rollout as paper_rollout  # noqa: E402
from animat.fly.drosophila import rollout as drosophila_rollout  # noqa: E402
from animat.fly.drosophila.model import DrosophilaParams  # noqa: E402
from animat.fly.model import FlyParams  # noqa: E402
from fly_drosophila_baseline import baseline_rollout  # noqa: E402

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
    frozen before issue 50 (one device), today's public :func:`simulate_population` on one device, and the same on
    every host device (the population split, one part per core); all compiled before the timing."""
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
    today = lambda devices: lambda: drosophila_rollout.simulate_population(params, nets, acts, seconds, devices=devices)
    fns = {"old": lambda: jax.block_until_ready(frozen(*args)), "new_one_device": today(jax.devices()[:1])}
    if jax.device_count() > 1:
        fns["new"] = today(jax.devices())
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
    rates = {name: steps / t for name, t in best.items()}
    rates.setdefault("new", rates["new_one_device"])
    return rates


def main() -> None:
    rates = {("paper", n): steps_per_second("paper", n) for n in (100, 1000)}
    before, one_device = {}, {}
    for n in (100, 1000):
        timed = old_and_new(n)
        before[n], one_device[n], rates[("drosophila", n)] = timed["old"], timed["new_one_device"], timed["new"]
    dt = {name: PRESETS[name][0].dt for name in PRESETS}
    out = {
        "benchmark": "fly_drosophila",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.processor() or platform.platform()}",
        "jax_backend": jax.default_backend(),
        "jax_devices": jax.device_count(),
    }
    for (name, n), rate in rates.items():
        out[f"fly_steps_per_second_{name}_pop{n}"] = rate
    for name in PRESETS:
        out[f"simulated_seconds_per_wall_second_{name}_pop100"] = rates[(name, 100)] * dt[name] / 100
    for n in (100, 1000):
        out[f"fly_steps_per_second_drosophila_before_issue50_pop{n}"] = before[n]
        out[f"fly_steps_per_second_drosophila_one_device_pop{n}"] = one_device[n]
        out[f"drosophila_speedup_one_device_pop{n}"] = one_device[n] / before[n]
        out[f"drosophila_speedup_pop{n}"] = rates[("drosophila", n)] / before[n]
    out["drosophila_vs_paper_steps_ratio_pop1000"] = rates[("drosophila", 1000)] / rates[("paper", 1000)]
    out["note"] = "drosophila: dt 0.1 ms, 2 x 8 blade elements, layers 12-20-20-11; paper: dt 1 ms, layers 15-20-20-3"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
