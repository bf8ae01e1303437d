"""The per-frame predictor a game would run (Holden et al. 2019, section 5), in NumPy or jitted JAX.

One call of :meth:`Runtime.frame` does everything needed to draw the next frame:

1. subspace step ``z_t = zbar_t + f(zbar_t, z_{t-1}, w_t)`` (see :mod:`animat.surrogate.model`);
2. decompression ``x_t = mean + U^T z_t`` -> (V, 3) m;
3. vertex normals by linear regression from ``z_t`` (:mod:`animat.surrogate.normals`) -> (V, 3);
4. collision projection of the vertices out of the scene's proxies (:mod:`animat.surrogate.collision`).

The same function body runs with ``xp = numpy`` (no dispatch overhead) or ``xp = jax.numpy``
under ``jax.jit`` (fused kernels); ``benchmarks/surrogate_speed.py`` times both.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from animat.surrogate.collision import project


def frame_step(arrays: dict, layers: int, z0, z1, w, spheres, capsules, xp=np):
    """(z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), proxies -> (z_t (k,), vertices (V, 3) m, normals (V, 3))."""
    a = arrays
    zbar = a["alpha"] * z1 + a["beta"] * (z1 - z0)
    h = (xp.concatenate([zbar, z1, w]) - a["in_mean"]) / a["in_std"]
    for i in range(layers):
        h = h @ a[f"W{i}"] + a[f"b{i}"]
        if i < layers - 1:
            h = xp.maximum(h, 0.0)
    z = zbar + h * a["out_std"] + a["out_mean"]
    X = (z @ a["components"] + a["mean"]).reshape(-1, 3)
    N = (z @ a["normals"][:-1] + a["normals"][-1]).reshape(-1, 3)
    N = N / xp.maximum(xp.sqrt(xp.sum(N * N, axis=-1, keepdims=True)), 1e-12)
    return z, project(X, spheres, capsules, xp), N


class Runtime:
    """A trained surrogate ready for per-frame use; ``backend`` is ``"numpy"`` or ``"jax"``."""

    def __init__(self, arrays: dict, layers: int, scene, backend: str = "numpy"):
        from animat.errors import ConfigError

        if backend not in ("numpy", "jax"):
            raise ConfigError(f"runtime backend must be 'numpy' or 'jax', got {backend!r}")
        self.scene, self.layers, self.backend = scene, int(layers), backend
        self.arrays = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
        if backend == "jax":
            import jax
            import jax.numpy as jnp

            consts = {k: jnp.asarray(v) for k, v in self.arrays.items()}  # baked into the executable: less to pass per call
            self._step = jax.jit(lambda *args: frame_step(consts, self.layers, *args, xp=jnp))
        else:
            self._step = lambda *args: frame_step(self.arrays, self.layers, *args, xp=np)

    @classmethod
    def load(cls, run_dir: str | os.PathLike, backend: str = "numpy") -> "Runtime":
        """From a run directory of ``animat surrogate train`` (best checkpoint, PCA, normals)."""
        from animat.surrogate.model import Surrogate
        from animat.surrogate.scenes import scene_from_dict
        from animat.surrogate.subspace import PCA
        from animat import runs

        run_dir = Path(run_dir)
        model = Surrogate.load(run_dir / "checkpoints")
        pca = PCA.load(run_dir / "pca.npz")
        with np.load(run_dir / "normals.npz") as z:
            normals = z["R"]
        scene = scene_from_dict(runs.read_json(run_dir / "config.json")["scene"])
        arrays = {**model.params, **model.stats, "components": pca.components, "mean": pca.mean, "normals": normals}
        return cls(arrays, model.config["layers"], scene, backend)

    @property
    def megabytes(self) -> float:
        return float(sum(v.nbytes for v in self.arrays.values()) / 1e6)

    def frame(self, z0, z1, w, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One frame from the two previous states, the network input ``w`` and the scene's
        recorded external state ``y`` (which places the collision proxies)."""
        spheres, capsules = self.scene.proxies(np.asarray(y, np.float32))
        return self._step(z0, z1, w, spheres, capsules)
