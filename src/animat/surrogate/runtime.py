"""The per-frame predictor a game would run (Holden et al. 2019, section 5), in NumPy or jitted JAX.

One call of :meth:`Runtime.frame` does everything needed to draw the next frame:

1. subspace step ``z_t = zbar_t + f(zbar_t, z_{t-1}, w_t)`` (see :mod:`animat.surrogate.model`);
2. decompression ``x_t = mean + U^T z_t`` -> (V, 3) m;
3. vertex normals by linear regression from ``z_t`` (:mod:`animat.surrogate.normals`) -> (V, 3);
4. collision projection of the vertices out of the scene's proxies (:mod:`animat.surrogate.collision`).

:func:`frame_step` is the plain definition; it runs with ``xp = numpy`` (the reference the tests
compare against) or with ``xp = jax.numpy`` under ``jax.jit`` (the ``"jax"`` backend). The
``"numpy"`` backend is :class:`NumpyFrame`, the same arithmetic rearranged for one CPU core at a
few microseconds of call overhead per operation: all affine maps folded into the weight matrices,
one matrix-vector product per layer, decompression and normals in one product, preallocated
buffers, collision only for vertices near a proxy. ``benchmarks/surrogate_speed.py`` times both.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from animat.surrogate.collision import Projector, project


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


def _fold_input(W: np.ndarray, b: np.ndarray, a: dict, k: int) -> np.ndarray:
    """First-layer weights W (2k + w, n), bias b (n,) acting on the normalised input
    ``(concat(zbar, z1, w) - in_mean) / in_std`` -> (2k + w + 1, n) acting on ``[z0, z1, w, 1]``
    (float64; ``zbar = (alpha + beta) z1 - beta z0``)."""
    Wn = W / a["in_std"][:, None]
    Wa, Wb, Wc = Wn[:k], Wn[k : 2 * k], Wn[2 * k :]
    return np.concatenate([-a["beta"][:, None] * Wa, (a["alpha"] + a["beta"])[:, None] * Wa + Wb, Wc,
                           (b - a["in_mean"] @ Wn)[None]])


class NumpyFrame:
    """:func:`frame_step` in NumPy with everything folded and preallocated (float32).

    Buffers: ``u = [z0, z1, w, 1]`` (the first layer's input), hidden states ``[h, 1]`` (bias as a
    last weight row), the last layer's input ``[h, z0, z1, w, 1]`` (its weights also carry the
    output de-normalisation and the alpha/beta skip ``zbar``), and ``[z, 1] @ [[U | R_z]; [mean | R_1]]``
    -> positions (V, 3) and raw normals (3, V) in one (k + 1, 6V) product. The returned vertices and normals are
    views of internal buffers, overwritten by the next call (copy them to keep them); ``z`` is a copy."""

    def __init__(self, arrays: dict, layers: int, n_vertices: int):
        a = {n: np.asarray(v, np.float64) for n, v in arrays.items()}
        k, L, V = a["alpha"].size, int(layers), int(n_vertices)
        H, nw = a["b0"].size if L > 1 else 0, a["in_mean"].size - 2 * k
        Ws = [a[f"W{i}"] for i in range(L)]
        bs = [a[f"b{i}"] for i in range(L)]
        skip = np.concatenate([-np.diag(a["beta"]), np.diag(a["alpha"] + a["beta"]), np.zeros((nw + 1, k))])
        last_W, last_b = Ws[-1] * a["out_std"], bs[-1] * a["out_std"] + a["out_mean"]
        if L == 1:
            mats = [_fold_input(last_W, last_b, a, k) + skip]
        else:
            mats = [_fold_input(Ws[0], bs[0], a, k)]
            mats += [np.concatenate([Ws[i], bs[i][None]]) for i in range(1, L - 1)]
            mats.append(np.concatenate([last_W, skip[:-1], last_b[None]]))
        self.mats = [np.ascontiguousarray(m, np.float32) for m in mats]
        R = a["normals"].reshape(k + 1, V, 3).transpose(0, 2, 1).reshape(k + 1, 3 * V)  # normals as [x..., y..., z...]
        positions = np.concatenate([a["components"], a["mean"][None]])
        self.decode_matrix = np.ascontiguousarray(np.concatenate([positions, R], axis=1), np.float32)  # (k + 1, 6V)
        self.k = k
        self._big = np.zeros(H + 2 * k + nw + 1, np.float32)  # [h, z0, z1, w, 1]
        self._big[-1] = 1.0
        self._u = self._big[H:]
        self._z0, self._z1, self._w = self._u[:k], self._u[k : 2 * k], self._u[2 * k : 2 * k + nw]
        ping = [np.zeros(H + 1, np.float32) for _ in range(2)]
        for p in ping:
            p[-1] = 1.0
        # (source, destination, weights) of each layer; ReLU after every layer but the last
        self._relu_layers = []
        src = self._u
        for i in range(L - 1):
            dst = self._big[:H] if i == L - 2 else ping[i % 2][:H]
            self._relu_layers.append((src, dst, self.mats[i]))
            src = ping[i % 2]
        self._zz = np.ones(k + 1, np.float32)  # [z, 1]
        self._last_layer = (self._big if L > 1 else self._u, self.mats[-1], self._zz[:k])
        self._out = np.empty(6 * V, np.float32)
        self.X, self._raw = self._out[: 3 * V].reshape(V, 3), self._out[3 * V :].reshape(3, V)
        self.N = np.empty((V, 3), np.float32)
        self._sq = np.empty((3, V), np.float32)
        self._len = np.empty(V, np.float32)
        self._ones = np.ones(3, np.float32)
        self._zero = np.float32(0.0)
        self._eps = np.float32(1e-12)
        self.project = Projector(V)

    def __call__(self, z0, z1, w, spheres, capsules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), proxies -> (z_t (k,), vertices (V, 3) m, normals (V, 3))."""
        self.network(z0, z1, w)
        self.decode()
        self.normalise()
        return self._zz[: self.k].copy(), self.project(self.X, spheres, capsules), self.N

    def network(self, z0, z1, w) -> None:
        """Subspace step into ``[z, 1]``: one ``np.dot`` per layer, ReLU in place."""
        self._z0[...] = z0
        self._z1[...] = z1
        self._w[...] = w
        for src, dst, M in self._relu_layers:
            np.dot(src, M, out=dst)
            np.maximum(dst, self._zero, out=dst)
        np.dot(*self._last_layer)

    def decode(self) -> None:
        """Positions and raw normals: ``[z, 1] @ decode_matrix``, (k + 1) x 6V multiply-adds."""
        np.dot(self._zz, self.decode_matrix, out=self._out)

    def normalise(self) -> None:
        """Raw normals (3, V) (contiguous operations) scaled to unit length into N (V, 3)."""
        raw, length = self._raw, self._len
        np.multiply(raw, raw, out=self._sq)
        np.matmul(self._ones, self._sq, out=length)
        np.sqrt(length, out=length)
        np.maximum(length, self._eps, out=length)
        np.divide(raw, length, out=self.N.T)


BACKENDS = ("numpy", "jax", "reference")


class Runtime:
    """A trained surrogate ready for per-frame use; ``backend`` is ``"numpy"`` (:class:`NumpyFrame`),
    ``"jax"`` (jitted :func:`frame_step`) or ``"reference"`` (:func:`frame_step` in plain NumPy)."""

    def __init__(self, arrays: dict, layers: int, scene, backend: str = "numpy"):
        from animat.errors import ConfigError

        if backend not in BACKENDS:
            raise ConfigError(f"runtime backend must be one of {list(BACKENDS)}, got {backend!r}")
        self.scene, self.layers, self.backend = scene, int(layers), backend
        self.arrays = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
        if backend == "jax":
            import jax
            import jax.numpy as jnp

            consts = {k: jnp.asarray(v) for k, v in self.arrays.items()}  # baked into the executable: less to pass per call
            self._step = jax.jit(lambda *args: frame_step(consts, self.layers, *args, xp=jnp))
        elif backend == "numpy":
            self._step = NumpyFrame(self.arrays, self.layers, scene.n_vertices)
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
        recorded external state ``y`` (which places the collision proxies). With the NumPy backend
        the vertices and normals returned are overwritten by the next call."""
        spheres, capsules = self.scene.proxies(np.asarray(y, np.float32))
        return self._step(z0, z1, w, spheres, capsules)
