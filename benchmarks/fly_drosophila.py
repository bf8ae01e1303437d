"""Fly-steps per second of the real-scale fruit fly (preset ``drosophila``) beside the paper preset, in
one process: random networks, the batched jitted rollout at 100 and 1 000 flies, and simulated seconds
per wall-clock second for a population of 100 (a drosophila step is 0.1 ms, a paper step 1 ms).
Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import UTC, datetime

import jax
import numpy as np

from animat.evolve import network
from animat.fly import rollout as paper_rollout
from animat.fly.drosophila import rollout as drosophila_rollout
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.model import FlyParams

PRESETS = {
    # name: (params, simulate_population, network layers, episode seconds timed)
    "paper": (FlyParams(), paper_rollout.simulate_population, [15, 20, 20, 3], 3.0),
    "drosophila": (
        DrosophilaParams(),
        drosophila_rollout.simulate_population,
        [drosophila_rollout.N_INPUTS, 20, 20, drosophila_rollout.N_OUTPUTS],
        0.3,
    ),
}


def steps_per_second(preset: str, population: int, repeats: int = 3) -> float:
    """Fly-steps per second of one preset's rollout (median of ``repeats`` after compiling)."""
    params, simulate, layers, seconds = PRESETS[preset]
    nets = network.unflatten(network.init_genes(jax.random.PRNGKey(0), population, layers, 0.5), layers)
    acts = ("tanh",) * (len(layers) - 1)
    simulate(params, nets, acts, seconds)  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulate(params, nets, acts, seconds)
        times.append(time.perf_counter() - t0)
    return population * round(seconds / params.dt) / float(np.median(times))


def main() -> None:
    rates = {(name, n): steps_per_second(name, n) for name in PRESETS for n in (100, 1000)}
    dt = {name: PRESETS[name][0].dt for name in PRESETS}
    out = {
        "benchmark": "fly_drosophila",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.processor() or platform.platform()}",
        "jax_backend": jax.default_backend(),
    }
    for (name, n), rate in rates.items():
        out[f"fly_steps_per_second_{name}_pop{n}"] = rate
    for name in PRESETS:
        out[f"simulated_seconds_per_wall_second_{name}_pop100"] = rates[(name, 100)] * dt[name] / 100
    out["drosophila_vs_paper_steps_ratio_pop1000"] = rates[("drosophila", 1000)] / rates[("paper", 1000)]
    out["note"] = "drosophila: dt 0.1 ms, 2 x 8 blade elements, layers 12-20-20-11; paper: dt 1 ms, layers 15-20-20-3"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
