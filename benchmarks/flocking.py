"""Flocking throughput (agent-steps/s), Algorithm 2 in 2D, float32: cell-list grid vs all-pairs (JAX)
vs a SciPy cKDTree + NumPy implementation, same start, same machine, same run. Prints one JSON line.

Start: agents uniform in a square of half-width 0.53 d sqrt(N) (the CLI's default density, about one
agent per 45 square units at d = 7), velocities uniform in [-2, 2]^2. The grid's capacity is set by
its own overflow retry (simulate_flock's rule) before timing. All-pairs at N = 1e5 (1e10 pairs per
step) is not run.
"""

from __future__ import annotations

import json
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import cKDTree

from animat.swarm.flocking import FlockParams, FlockState, Obstacles
from animat.swarm.grid import capacity_bucket
from animat.swarm.simulate import default_max_cells, make_chunk

PRM = FlockParams.build(algorithm=2)


def start(n, seed=0):
    rng = np.random.default_rng(seed)
    half = 0.53 * PRM.d * np.sqrt(n)
    return rng.uniform(-half, half, (n, 2)).astype(np.float32), rng.uniform(-2, 2, (n, 2)).astype(np.float32)


def jax_rate(n, method, steps):
    q, p = start(n)
    st = FlockState(jnp.asarray(q), jnp.asarray(p), jnp.zeros(2), jnp.zeros(2))
    cap = 8
    obs = Obstacles.empty(2)
    while True:  # find the capacity the overflow retry would settle on
        chunk = make_chunk(PRM, obs, method, cap, default_max_cells(n), steps, 1)
        out = chunk(st)
        jax.block_until_ready(out)
        if method != "grid" or not bool(out[2]):
            break
        cap = capacity_bucket(max(int(out[3]), cap + 1))
    t0 = time.perf_counter()
    jax.block_until_ready(chunk(st))
    return n * steps / (time.perf_counter() - t0), cap


def kdtree_accel(q, p):
    """Same alpha + gamma control with cKDTree pairs and NumPy (float32)."""
    pairs = cKDTree(q).query_pairs(PRM.r, output_type="ndarray")
    i, j = pairs[:, 0], pairs[:, 1]
    dq, dp = q[j] - q[i], p[j] - p[i]
    s = np.sqrt(1.0 + PRM.eps * np.sum(dq * dq, axis=1, dtype=np.float32))
    z = (s - 1.0) / PRM.eps
    x = z / PRM.r_alpha
    rho = np.where(x < PRM.h_alpha, 1.0, np.where(x <= 1.0, 0.5 * (1 + np.cos(np.pi * (x - PRM.h_alpha) / (1 - PRM.h_alpha))), 0.0)).astype(np.float32)
    w = z - PRM.d_alpha + PRM.c_phi
    phi = 0.5 * ((PRM.a + PRM.b) * w / np.sqrt(1 + w * w) + (PRM.a - PRM.b))
    f = (rho * phi / s)[:, None] * dq + rho[:, None] * dp
    u = np.zeros_like(q)
    for k in range(2):
        u[:, k] = np.bincount(i, f[:, k], len(q)) - np.bincount(j, f[:, k], len(q))
    return u - PRM.c1 * q - PRM.c2 * p


def kdtree_rate(n, steps):
    q, p = start(n)
    t0 = time.perf_counter()
    for _ in range(steps):
        p = p + PRM.dt * kdtree_accel(q, p)
        q = q + PRM.dt * p
    return n * steps / (time.perf_counter() - t0)


def main():
    res = {"benchmark": "flocking", "algorithm": 2, "dim": 2, "dtype": "float32", "cores": os.cpu_count(),
           "machine": platform.processor() or platform.machine(), "jax": jax.__version__}
    for n, tag, gs, ks, ap in ((1000, "1e3", 200, 50, 50), (10000, "1e4", 50, 10, 2), (100000, "1e5", 10, 3, 0)):
        res[f"agent_steps_per_s_grid_{tag}"], res[f"grid_capacity_{tag}"] = jax_rate(n, "grid", gs)
        res[f"agent_steps_per_s_ckdtree_{tag}"] = kdtree_rate(n, ks)
        res[f"agent_steps_per_s_allpairs_{tag}"] = jax_rate(n, "allpairs", ap)[0] if ap else None
        res[f"speedup_vs_ckdtree_{tag}"] = res[f"agent_steps_per_s_grid_{tag}"] / res[f"agent_steps_per_s_ckdtree_{tag}"]
    res["target_grid_1e4"] = 1e7
    res["target_speedup_1e5"] = 10.0
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}))


if __name__ == "__main__":
    main()
