"""Flocking throughput (agent-steps/s), 2D, float32: Verlet lists on the cell list (JAX) vs all-pairs
(JAX) vs a SciPy cKDTree + NumPy implementation of the same forces, same start, same run. Prints one
JSON line.

Start: a settled flock, not a compressed blob -- agents on a hexagonal alpha-lattice of spacing d
(the density a converged flock has), positions jittered by N(0, (0.05 d)^2), all moving with
velocity (1, 0.5) plus N(0, 0.1^2) per component, then left to settle for 5 s (500 steps, untimed).
Model: Olfati-Saber Algorithm 1 (alpha gradient + velocity consensus), for which that lattice is an
equilibrium; Algorithm 2's gamma term is O(N) per step and would pull a 1e5-agent lattice into a
collapsing blob. The grid figures count every Verlet-list build in the timed steps (``builds``). The cKDTree baseline
finds the pairs within r every step (``query_pairs``) and evaluates the same pair force with NumPy.
Each rate is the best of five timed runs after a warm-up; ``cpu_per_wall`` (CPU seconds of the
process per wall second in that run) shows how much of the 2 cores it got from other processes.
All-pairs at N = 1e5 (1e10 pairs per step) is not run.
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
from animat.swarm.simulate import DEFAULT_SKIN, fitted_spec, default_max_cells, make_chunk
from animat.swarm.verlet import ListSpec

PRM = FlockParams.build(algorithm=1)
VELOCITY = (1.0, 0.5)


def lattice(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(q, p) (n, 2) float32: a jittered hexagonal lattice of spacing d in a square patch, moving together."""
    rng = np.random.default_rng(seed)
    cols = int(np.ceil(np.sqrt(n * 2 / np.sqrt(3))))
    k = np.arange(n)
    row, col = k // cols, k % cols
    q = PRM.d * np.stack([col + 0.5 * (row % 2), row * np.sqrt(3) / 2], axis=1)
    q = q - q.mean(0) + rng.normal(0.0, 0.05 * PRM.d, q.shape)
    p = np.asarray(VELOCITY) + rng.normal(0.0, 0.1, q.shape)
    return q.astype(np.float32), p.astype(np.float32)


def best_of(fn, repeats: int = 5) -> tuple[float, float]:
    """(best wall seconds, CPU seconds / wall seconds of that run) of ``repeats`` calls."""
    best, share = float("inf"), 0.0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, share = wall, (time.process_time() - c0) / wall
    return best, share


def settled_chunk(st: FlockState, spec: ListSpec | None, steps: int):
    """(chunk, its output from ``st``, list sizes) for ``steps`` steps at the sizes simulate_flock's
    overflow retry settles on."""
    while True:
        chunk = make_chunk(PRM, Obstacles.empty(2), spec, steps, 1)
        out = jax.block_until_ready(chunk(st))
        bigger = None if spec is None else fitted_spec(spec, out[2])
        if bigger is None:
            return chunk, out, spec
        spec = bigger


def start(n: int, settle: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """The lattice after ``settle`` steps of the model (grid neighbours)."""
    q, p = lattice(n)
    st = FlockState(jnp.asarray(q), jnp.asarray(p), jnp.zeros(2), jnp.zeros(2))
    _, (st, _, _), _ = settled_chunk(st, ListSpec(DEFAULT_SKIN * PRM.r, 8, 8, default_max_cells(n)), settle)
    return np.asarray(st.q), np.asarray(st.p)


def jax_rate(q: np.ndarray, p: np.ndarray, grid: bool, steps: int) -> tuple[float, dict]:
    n = len(q)
    st = FlockState(jnp.asarray(q), jnp.asarray(p), jnp.zeros(2), jnp.zeros(2))
    spec = ListSpec(DEFAULT_SKIN * PRM.r, 8, 8, default_max_cells(n)) if grid else None
    chunk, out, spec = settled_chunk(st, spec, steps)
    sec, share = best_of(lambda: jax.block_until_ready(chunk(st)))
    info = {"cpu_per_wall": round(share, 2)}
    if grid:
        info.update(width=spec.width, capacity=spec.capacity, builds=int(out[2][3]), steps=steps)
    return n * steps / sec, info


def kdtree_accel(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The same alpha control with cKDTree pairs within r and NumPy (float32)."""
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
    return u


def kdtree_rate(q0: np.ndarray, p0: np.ndarray, steps: int) -> float:
    n = len(q0)

    def run():
        q, p = q0, p0
        for _ in range(steps):
            p = p + PRM.dt * kdtree_accel(q, p)
            q = q + PRM.dt * p

    run()
    return n * steps / best_of(run)[0]


def main() -> None:
    res = {"benchmark": "flocking", "algorithm": 1, "dim": 2, "dtype": "float32",
           "start": "hex alpha-lattice spacing d, jitter 0.05 d, velocity (1, 0.5) + N(0, 0.1^2), settled 500 steps",
           "skin": round(DEFAULT_SKIN * PRM.r, 3), "cores": os.cpu_count(), "loadavg_1min": os.getloadavg()[0],
           "machine": platform.processor() or platform.machine(), "jax": jax.__version__}
    for n, tag, gs, ks, ap in ((1000, "1e3", 2000, 100, 100), (10000, "1e4", 500, 20, 4), (100000, "1e5", 200, 4, 0)):
        q, p = start(n)
        res[f"agent_steps_per_s_grid_{tag}"], res[f"grid_list_{tag}"] = jax_rate(q, p, True, gs)
        res[f"agent_steps_per_s_ckdtree_{tag}"] = kdtree_rate(q, p, ks)
        res[f"agent_steps_per_s_allpairs_{tag}"] = jax_rate(q, p, False, ap)[0] if ap else None
        res[f"speedup_vs_ckdtree_{tag}"] = res[f"agent_steps_per_s_grid_{tag}"] / res[f"agent_steps_per_s_ckdtree_{tag}"]
    res["target_grid_1e4"] = 1e7
    res["target_speedup_1e5"] = 10.0
    print(json.dumps({k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in res.items()}))


if __name__ == "__main__":
    main()
