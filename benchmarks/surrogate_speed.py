"""Per-frame cost of the sheet surrogate vs the MuJoCo reference, side by side in one process.

Reference: MuJoCo flex cloth (51 x 51 vertices, 4 substeps per 60 fps frame), the sphere moving
along the scene's random path, timed over ``--frames`` frames after the warm-up. Surrogate: the
standard architecture (k = 64 components, 10 layers, hidden 96) with random weights -- the cost
does not depend on the weights -- as a jitted ``--frames``-frame rollout that decodes every frame
to vertex positions (batch of one). Prints one JSON line; the headline is
``speedup_vs_reference_sheet``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone

import jax
import jax.numpy as jnp
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=51)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--components", type=int, default=64)
    args = ap.parse_args()

    from animat.surrogate.model import init_mlp, rollout
    from animat.surrogate.scenes import get_scene

    scene = get_scene("sheet", size=args.size, warmup_frames=5)
    ref = scene.simulate(args.frames, 0)
    reference_spf = ref["seconds_per_frame"]

    k, w, V = args.components, 6, scene.n_vertices
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + w, k, int(1.5 * k), 10)
    stats = {"alpha": jnp.full(k, 0.99), "beta": jnp.full(k, 0.5), "in_mean": jnp.zeros(2 * k + w), "in_std": jnp.ones(2 * k + w),
             "out_mean": jnp.zeros(k), "out_std": jnp.ones(k)}
    U = jax.random.normal(jax.random.PRNGKey(1), (k, 3 * V)) / np.sqrt(3 * V)
    mean = jnp.zeros(3 * V)
    run = jax.jit(lambda z0, z1, W: rollout(params, stats, z0, z1, W) @ U + mean)
    z0, z1, W = jnp.zeros(k), jnp.zeros(k), jnp.zeros((args.frames, w))
    run(z0, z1, W).block_until_ready()
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        run(z0, z1, W).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    surrogate_spf = best / args.frames
    print(json.dumps({
        "benchmark": "surrogate_speed", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.machine(), "cpus": os.cpu_count(), "jax_backend": jax.default_backend(),
        "vertices": V, "components": k, "frames": args.frames,
        "reference_ms_per_frame": reference_spf * 1e3, "surrogate_ms_per_frame": surrogate_spf * 1e3,
        "speedup_vs_reference_sheet": reference_spf / surrogate_spf,
    }))


if __name__ == "__main__":
    main()
