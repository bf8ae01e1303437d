"""The per-frame predictor a game would run (Holden et al. 2019, section 5): compiled (numba), NumPy or jitted JAX.

One call of :meth:`Runtime.frame` does everything needed to draw the next frame:

1. subspace step ``z_t = zbar_t + f(zbar_t, z_{t-1}, w_t)`` (see :mod:`animat.surrogate.model`);
2. decompression ``x_t = mean + U^T z_t`` -> (V, 3) m;
3. vertex normals by the rank-r linear regression ``normalise([z_t A, 1] B)`` from ``z_t``
   (:func:`animat.surrogate.normals.reduced_rank_factors`; r = the runtime's ``normals_rank``) -> (V, 3);
4. collision projection of the vertices out of the scene's proxies (:mod:`animat.surrogate.collision`).

:func:`frame_step` is the plain definition; it runs with ``xp = numpy`` (the reference the tests
compare against) or with ``xp = jax.numpy`` under ``jax.jit`` (the ``"jax"`` backend). :func:`fold`
rearranges the arithmetic for one CPU core: all affine maps folded into the weight matrices, one
matrix-vector product per layer (the last one also yields ``z A``), one product each for the
positions and the raw normals. Two backends use it: ``"numpy"`` (:class:`NumpyFrame`: preallocated
buffers, ~30 NumPy calls, each with its call overhead, collision only for vertices near a
proxy) and the default ``"numba"`` (:class:`animat.surrogate.kernel.NumbaFrame`: the whole frame
in one compiled call, the basis and normals rows stored as int16 with a step per row -- half the
bytes to stream, vertices within 2.4e-5 m of the float32 ones on held-out sheet frames; the
fastest, ``benchmarks/surrogate_speed.py`` times them side by side).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from animat.config import require
from animat.errors import ConfigError
from animat.surrogate.collision import Projector, project
from animat.surrogate.frame import turn_vectors, wind_in_frame
from animat.surrogate.inputs import network_input
from animat.surrogate.normals import load_regression, reduced_rank_factors
from animat.surrogate.options import load_run_config
from animat.surrogate.scenes import scene_from_dict
from animat.surrogate.subspace import PCA

DEFAULT_NORMALS_RANK = (
    28  # sheet 51 x 51, k = 64: held-out mean normal error 2.92 -> 3.40 deg (see resolve_normals_rank)
)


def frame_step(arrays: dict, layers: int, z0, z1, w, spheres, capsules, xp=np):
    """(z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), proxies -> (z_t (k,), vertices (V, 3) m, normals (V, 3)).

    ``arrays`` as :attr:`Runtime.arrays`: network and statistics, ``components`` (k, 3V), ``mean``
    (3V,) and the normals regression as factors ``normals_A`` (k, r), ``normals_B`` (r + 1, 3V).
    With a frame (``frame_scale``, ``frame_pole`` (2,): the flag's azimuth as the state's last entry,
    :mod:`animat.surrogate.frame`) ``components`` and ``normals_A`` have a zero row for it, the wind
    is turned into the cloth's frame (:func:`animat.surrogate.inputs.network_input`) and the decoded
    cloth and normals turned back by the new azimuth."""
    a = arrays
    zbar, h = network_input(a, z0, z1, w, xp)
    h = (h - a["in_mean"]) / a["in_std"]
    for i in range(layers):
        h = h @ a[f"W{i}"] + a[f"b{i}"]
        if i < layers - 1:
            h = xp.maximum(h, 0.0)
    z = zbar + h * a["out_std"] + a["out_mean"]
    X = (z @ a["components"] + a["mean"]).reshape(-1, 3)
    N = ((z @ a["normals_A"]) @ a["normals_B"][:-1] + a["normals_B"][-1]).reshape(-1, 3)
    N = N / xp.maximum(xp.sqrt(xp.sum(N * N, axis=-1, keepdims=True)), 1e-12)
    if "frame_scale" in a:  # decoded in the cloth's frame: turn by the azimuth about the pole
        phi, axis = z[-1] / a["frame_scale"], xp.concatenate([a["frame_pole"], xp.zeros(1, a["frame_pole"].dtype)])
        X, N = turn_vectors(X - axis, phi, xp) + axis, turn_vectors(N, phi, xp)
    return z, project(X, spheres, capsules, xp), N


def _fold_input(W: np.ndarray, b: np.ndarray, a: dict, k: int) -> np.ndarray:
    """First-layer weights W (2k + w, n), bias b (n,) acting on the normalised input
    ``(concat(zbar, z1, w) - in_mean) / in_std`` -> (2k + w + 1, n) acting on ``[z0, z1, w, 1]``
    (float64; ``zbar = (alpha + beta) z1 - beta z0``; with a frame the azimuth's entries are
    ``zbar - z1`` and ``z1 - z0``, :func:`animat.surrogate.inputs.network_input`, and ``w`` is the
    wind already turned into the cloth's frame)."""
    Wn = W / a["in_std"][:, None]
    Wa, Wb, Wc = Wn[:k], Wn[k : 2 * k], Wn[2 * k :]
    on_z0, on_z1 = -a["beta"][:, None] * Wa, (a["alpha"] + a["beta"])[:, None] * Wa + Wb
    if "frame_scale" in a:
        on_z0[-1] -= Wb[-1]
        on_z1[-1] -= Wa[-1]
    return np.concatenate([on_z0, on_z1, Wc, (b - a["in_mean"] @ Wn)[None]])


def frame_turn(arrays: dict) -> tuple[float, float, float] | None:
    """``(frame_scale, pole x, pole y)`` of a surrogate in the flag's frame (:mod:`animat.surrogate.frame`), else
    None."""
    return (float(arrays["frame_scale"]), *map(float, arrays["frame_pole"])) if "frame_scale" in arrays else None


class Folded(NamedTuple):
    """The runtime's arrays rearranged for one CPU core (float32, C-contiguous).

    ``mats``: one matrix per layer, bias as the last row. With L > 1 layers: the first acts on
    ``[z0, z1, w, 1]`` (input normalisation and the alpha/beta ``zbar`` folded in), the middle ones on
    ``[h, 1]``, the last one on ``[h, z0, z1, w, 1]`` and carries the output de-normalisation, the
    skip ``zbar`` and the normals' first factor A, yielding ``[z, 1, z A]`` (k + 1 + r,); with L = 1
    the single matrix acts on ``[z0, z1, w, 1]``. ``positions`` (k + 1, 3V): ``[U; mean]``, so that
    ``[z, 1] @ positions`` = vertices (V, 3) flattened. ``normals`` (r + 1, 3V): ``[B_r; intercept]``
    with columns as x..., y..., z... (V each), so that ``[z A, 1] @ normals`` = raw normals (3, V)."""

    mats: list
    positions: np.ndarray
    normals: np.ndarray


def fold(arrays: dict, layers: int, n_vertices: int) -> Folded:
    """:attr:`Runtime.arrays` (with ``normals_A`` (k, r), ``normals_B`` (r + 1, 3V)) -> :class:`Folded`
    (folded in float64, stored as float32)."""
    a = {n: np.asarray(v, np.float64) for n, v in arrays.items()}
    k, L, V = a["alpha"].size, int(layers), int(n_vertices)
    r = a["normals_A"].shape[1]
    nw = a["in_mean"].size - 2 * k
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
    one = np.zeros((mats[-1].shape[0], 1))
    one[-1] = 1.0  # the input's constant 1 passed through: the 1 after z
    mats[-1] = np.concatenate([mats[-1], one, mats[-1] @ a["normals_A"]], axis=1)  # -> [z, 1, z A]
    positions = np.concatenate([a["components"], a["mean"][None]])
    normals = a["normals_B"].reshape(r + 1, V, 3).transpose(0, 2, 1).reshape(r + 1, 3 * V)  # rows as [x..., y..., z...]
    return Folded(
        [np.ascontiguousarray(m, np.float32) for m in mats],
        np.ascontiguousarray(positions, np.float32),
        np.ascontiguousarray(normals, np.float32),
    )


class NumpyFrame:
    """:func:`frame_step` in NumPy with everything folded and preallocated (float32).

    Buffers: ``u = [z0, z1, w, 1]`` (the first layer's input), hidden states ``[h, 1]`` (bias as a
    last weight row), the last layer's input ``[h, z0, z1, w, 1]``; the last layer's weights also
    carry the output de-normalisation, the alpha/beta skip ``zbar`` and the normals' first factor,
    so it yields ``[z, 1, z A]`` into the buffer ``[z, 1, c, 1]``. Then ``[z, 1] @ [U; mean]`` ->
    positions (V, 3) and ``[c, 1] @ B`` -> raw normals (3, V) (rows x, y, z: contiguous for the
    lengths), normalised into a (3, V) buffer returned as its (V, 3) transpose (component arrays,
    as vertex attributes of a renderer can be). The returned vertices and normals are views of
    internal buffers, overwritten by the next call (copy them to keep them); ``z`` is a copy."""

    def __init__(self, arrays: dict, layers: int, n_vertices: int):
        self.mats, self.positions_matrix, self.normals_matrix = fold(arrays, layers, n_vertices)
        k, L, V = arrays["alpha"].size, int(layers), int(n_vertices)
        r = arrays["normals_A"].shape[1]
        H, nw = arrays["b0"].size if L > 1 else 0, arrays["in_mean"].size - 2 * k
        self.k = k
        self._big = np.zeros(H + 2 * k + nw + 1, np.float32)  # [h, z0, z1, w, 1]
        self._big[-1] = 1.0
        self._u = self._big[H:]
        self._inputs = self._u[:-1]  # [z0, z1, w]
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
        self._zc = np.ones(k + r + 2, np.float32)  # [z, 1, c, 1]
        self._z, self._z_one, self._c_one = self._zc[:k], self._zc[: k + 1], self._zc[k + 1 :]
        self._last_layer = (self._big if L > 1 else self._u, self.mats[-1], self._zc[: k + r + 1])
        self._X = np.empty(3 * V, np.float32)
        self.X = self._X.reshape(V, 3)
        self._raw_flat = np.empty(3 * V, np.float32)
        self._raw = self._raw_flat.reshape(3, V)
        self._N3 = np.empty((3, V), np.float32)
        self.N = self._N3.T
        self._sq = np.full((4, V), 1e-24, np.float32)  # [x^2; y^2; z^2; eps^2]
        self._len = np.empty(V, np.float32)
        self._ones = np.ones(4, np.float32)
        self._zero = np.zeros(max(H, 1), np.float32)  # an array: cheaper in np.maximum than a scalar
        self.project = Projector(V)
        self.turn = frame_turn(arrays)

    def __call__(self, z0, z1, w, spheres, capsules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z_{t-2}, z_{t-1}) (k,), w_t (w_dim,), proxies -> (z_t (k,), vertices (V, 3) m, normals (V, 3))."""
        if self.turn is not None:  # the flag's frame: the wind into it (fold expects it so)
            w = wind_in_frame(np.asarray(w, np.float32), float(z1[-1]) / self.turn[0]).astype(np.float32)
        self.network(z0, z1, w)
        self.decode_positions()
        self.decode_normals()
        self.normalise()
        if self.turn is not None:
            self.turn_to_world()
        return self._z.copy(), self.project(self.X, spheres, capsules), self.N

    def turn_to_world(self) -> None:
        """The cloth decoded in the flag's frame turned by the new azimuth about the pole, in place."""
        scale, px, py = self.turn
        phi, axis = float(self._z[-1]) / scale, np.array([px, py, 0.0], np.float32)
        self.X[:] = turn_vectors(self.X - axis, phi) + axis
        self.N[:] = turn_vectors(self.N, phi)

    def network(self, z0, z1, w) -> None:
        """Subspace step into ``[z, 1, c]``: one ``np.dot`` per layer, ReLU in place."""
        np.concatenate((z0, z1, w), out=self._inputs)
        for src, dst, M in self._relu_layers:
            np.dot(src, M, dst)  # out given positionally: a little less call overhead
            np.maximum(dst, self._zero, out=dst)
        np.dot(*self._last_layer)

    def decode_positions(self) -> None:
        """Positions ``[z, 1] @ [U; mean]``: (k + 1) x 3V multiply-adds."""
        np.dot(self._z_one, self.positions_matrix, out=self._X)

    def decode_normals(self) -> None:
        """Raw normals ``[c, 1] @ B``: (r + 1) x 3V multiply-adds."""
        np.dot(self._c_one, self.normals_matrix, out=self._raw_flat)

    def normalise(self) -> None:
        """Raw normals (3, V) scaled to unit length into N (3, V): ``n / sqrt(|n|^2 + 1e-24)``
        (the same as ``n / max(|n|, 1e-12)`` to float32 rounding unless ``|n| < 1e-6``)."""
        raw, length = self._raw, self._len
        np.multiply(raw, raw, out=self._sq[:3])
        np.dot(self._ones, self._sq, out=length)
        np.sqrt(length, out=length)
        np.divide(raw, length, out=self._N3)


def resolve_normals_rank(rank: int | None, k: int) -> int:
    """The rank of the runtime's normals regression: ``rank`` checked to lie in 1..k, or the default
    ``min(DEFAULT_NORMALS_RANK, k)`` for None. The default is the smallest even rank whose held-out
    mean normal error on the sheet (51 x 51, k = 64; runs/sheet51, its 4 test episodes) is within
    0.5 degree of the full regression's: mean / p95 2.92 / 11.35 deg at rank 64, 3.28 / 12.32 at 32,
    3.40 / 12.62 at 28, 3.51 / 12.95 at 26, 3.63 / 13.26 at 24."""
    if rank is None:
        return min(DEFAULT_NORMALS_RANK, k)
    return int(require(f"normals rank (at most the subspace size {k})", rank, ge=1, le=k, integer=True))


BACKENDS = ("numba", "numpy", "jax", "reference")
BLAS_THREADS = 1  # BLAS threads for a frame loop: a frame is ~30 small products, which more threads only slow down


class Runtime:
    """A trained surrogate ready for per-frame use; ``backend`` is ``"numba"`` (the default, fastest:
    :class:`animat.surrogate.kernel.NumbaFrame`, compiled when first used in a process and cached
    on disk, warmed up here), ``"numpy"`` (:class:`NumpyFrame`), ``"jax"`` (jitted :func:`frame_step`)
    or ``"reference"`` (:func:`frame_step` in plain NumPy).

    ``arrays``: network parameters and statistics, ``components`` (k, 3V), ``mean`` (3V,), the full
    normals regression ``normals`` (k + 1, 3V) and the PCA ``singular_values`` (k,) it was fitted
    with; the regression is cut to rank ``normals_rank`` (:func:`resolve_normals_rank`) here."""

    def __init__(self, arrays: dict, layers: int, scene, backend: str = "numba", normals_rank: int | None = None):
        require("runtime backend", backend, choices=BACKENDS)
        if "singular_values" not in arrays:
            raise ConfigError("runtime arrays need the PCA 'singular_values' to cut the normals regression to low rank")
        self.scene, self.layers, self.backend = scene, int(layers), backend
        self.arrays = {
            n: np.asarray(v, np.float32) for n, v in arrays.items() if n not in ("normals", "singular_values")
        }
        self.normals_rank = resolve_normals_rank(normals_rank, self.arrays["components"].shape[0])
        self.arrays["normals_A"], self.arrays["normals_B"] = reduced_rank_factors(
            arrays["normals"], arrays["singular_values"], self.normals_rank
        )
        if (
            "frame_scale" in self.arrays
        ):  # the state's last entry is the flag's azimuth: no part of the basis or the normals
            for name in ("components", "normals_A"):
                self.arrays[name] = np.concatenate(
                    [self.arrays[name], np.zeros((1, self.arrays[name].shape[1]), np.float32)]
                )
        if backend == "jax":
            import jax
            import jax.numpy as jnp

            consts = {
                k: jnp.asarray(v) for k, v in self.arrays.items()
            }  # baked into the executable: less to pass per call
            self._step = jax.jit(lambda *args: frame_step(consts, self.layers, *args, xp=jnp))
        elif backend == "numpy":
            self._step = NumpyFrame(self.arrays, self.layers, scene.n_vertices)
        elif backend == "numba":
            from animat.surrogate.kernel import NumbaFrame  # compiles (or loads the cached kernel) on first import

            k, n_in = self.arrays["alpha"].size, self.arrays["in_mean"].size
            self._step = NumbaFrame(*fold(self.arrays, self.layers, scene.n_vertices), n_in, frame_turn(self.arrays))
            zero, no_proxies = np.zeros(k, np.float32), (np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32))
            self._step(
                zero, zero, np.zeros(n_in - 2 * k, np.float32), *no_proxies
            )  # warm-up: the first call's one-off costs
        else:
            self._step = lambda *args: frame_step(self.arrays, self.layers, *args, xp=np)

    @classmethod
    def load(cls, run_dir: str | os.PathLike, backend: str = "numba", normals_rank: int | None = None) -> Runtime:
        """From a run directory of ``animat surrogate train`` (best checkpoint, PCA, normals)."""
        from animat.surrogate.model import Surrogate

        run_dir = Path(run_dir)
        model = Surrogate.load(run_dir / "checkpoints")
        pca = PCA.load(run_dir / "pca.npz")
        normals = load_regression(run_dir)
        scene = scene_from_dict(load_run_config(run_dir)["scene"])
        arrays = {
            **model.params,
            **model.stats,
            "components": pca.components,
            "mean": pca.mean,
            "normals": normals,
            "singular_values": pca.singular_values,
            **({"frame_pole": pca.frame.pole} if pca.frame is not None else {}),
        }
        return cls(arrays, model.config["layers"], scene, backend, normals_rank)

    @property
    def megabytes(self) -> float:
        """Bytes of the arrays a frame uses (network, basis, rank-r normals factors), MB."""
        return float(sum(v.nbytes for v in self.arrays.values()) / 1e6)

    def frame(self, z0, z1, w, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One frame from the two previous states, the network input ``w`` and the scene's
        recorded external state ``y`` (which places the collision proxies). With the numba and NumPy
        backends the vertices and normals returned are views of internal buffers, overwritten by the
        next call (copy them to keep them), the normals (V, 3) the transpose of a C-contiguous (3, V)
        buffer; ``z`` is always a new array."""
        spheres, capsules = self.scene.proxies(np.asarray(y, np.float32))
        return self._step(z0, z1, w, spheres, capsules)
