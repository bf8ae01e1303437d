"""The per-frame runtime: the folded, preallocated NumPy path and the compiled numba kernel equal the plain
definition."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.collision import Projector, max_penetration, penetration_depth, project
from animat.surrogate.kernel import quantise
from animat.surrogate.model import init_mlp
from animat.surrogate.runtime import Runtime, frame_step
from animat.surrogate.scenes import get_scene


def _arrays(scene, k: int, w: int, layers: int, seed: int = 0) -> dict:
    """Random weights and non-trivial statistics (every folded term matters), float32."""
    rng = np.random.default_rng(seed)
    V = scene.n_vertices
    arrays = {n: np.asarray(v) for n, v in init_mlp(jax.random.PRNGKey(seed), 2 * k + w, k, 12, layers).items()}
    arrays.update(
        alpha=rng.uniform(0.8, 1.0, k),
        beta=rng.uniform(0.0, 0.5, k),
        in_mean=rng.normal(size=2 * k + w),
        in_std=rng.uniform(0.5, 2.0, 2 * k + w),
        out_mean=0.01 * rng.normal(size=k),
        out_std=rng.uniform(0.5, 2.0, k),
        components=rng.normal(size=(k, 3 * V)) / np.sqrt(3 * V),
        mean=scene.topology()["rest"].reshape(-1),
        normals=rng.normal(size=(k + 1, 3 * V)),
        singular_values=np.sort(rng.uniform(0.5, 5.0, k))[::-1],
    )
    return {n: np.asarray(v, np.float32) for n, v in arrays.items()}


def _definition_arrays(rt: Runtime) -> dict:
    """The arrays whose float64 :func:`frame_step` backend ``rt`` computes to float32 rounding: its
    own, with the numba kernel's stored (int16, one step per row) basis and normals rows."""
    a64 = {n: v.astype(np.float64) for n, v in rt.arrays.items()}
    if rt.backend == "numba":
        for name, rows in (("components", slice(None)), ("normals_B", slice(0, -1))):
            q, step = quantise(a64[name][rows])
            a64[name][rows] = q * step[:, None].astype(np.float64)
    return a64


def test_quantise_rounds_each_row_on_its_own_step():
    rng = np.random.default_rng(6)
    rows = np.concatenate([rng.normal(size=(3, 50)) * [[1e-3], [1.0], [40.0]], np.zeros((1, 50))])
    q, step = quantise(rows)
    assert q.dtype == np.int16 and step.dtype == np.float32
    assert np.array_equal(np.abs(q).max(axis=1)[:3], [32767] * 3) and not q[3].any()  # each row spans the int16 range
    assert np.all(np.abs(q * step[:, None].astype(np.float64) - rows) <= 0.5001 * step[:, None])
    with pytest.raises(ConfigError, match="NaN"):
        quantise(np.array([[np.nan, 1.0]]))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("layers, rank", [(1, 5), (2, 3), (4, 1)])
def test_fast_paths_equal_plain_definition_within_float32_rounding(backend, layers, rank):
    """Five frames rolled on their own predictions, the sphere placed on the cloth so that the
    collision projection moves vertices: z, vertices and normals agree with :func:`frame_step`
    evaluated in float64 to 1e-5 (relative for z, metres for vertices, unit vectors for normals),
    at full and reduced normals rank (numba: with its stored int16 basis, :func:`_definition_arrays`)."""
    scene = get_scene("sheet", size=7)
    k, w = 5, 6
    arrays = _arrays(scene, k, w, layers)
    rt = Runtime(arrays, layers, scene, backend, normals_rank=rank)
    assert rt.arrays["normals_A"].shape == (k, rank) and rt.arrays["normals_B"].shape == (
        rank + 1,
        3 * scene.n_vertices,
    )
    a64 = _definition_arrays(rt)
    rng = np.random.default_rng(1)
    z0, z1 = 0.1 * rng.normal(size=k).astype(np.float32), 0.1 * rng.normal(size=k).astype(np.float32)
    y = scene.topology()["rest"][24] + np.float32([0.0, 0.0, 0.01])  # the sphere sits on the middle vertex
    W = rng.normal(size=(5, w)).astype(np.float32)
    moved = 0
    for t in range(5):
        spheres, capsules = scene.proxies(y)
        z, X, N = rt.frame(z0, z1, W[t], y)
        ref_z, ref_X, ref_N = frame_step(
            a64,
            layers,
            z0.astype(np.float64),
            z1.astype(np.float64),
            W[t].astype(np.float64),
            spheres.astype(np.float64),
            capsules.astype(np.float64),
        )
        unprojected = (ref_z @ a64["components"] + a64["mean"]).reshape(-1, 3)
        moved += int(np.sum(np.linalg.norm(ref_X - unprojected, axis=1) > 1e-4))
        assert z.dtype == X.dtype == N.dtype == np.float32 and X.shape == N.shape == (scene.n_vertices, 3)
        assert np.max(np.abs(z - ref_z)) <= 1e-5 * np.max(np.abs(ref_z))
        assert np.max(np.abs(X - ref_X)) < 1e-5 and np.max(np.abs(N - ref_N)) < 1e-5
        assert max_penetration(X, spheres, capsules) < 1e-5
        z0, z1 = z1, z
    assert moved > 0  # the projection was exercised


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_fast_paths_return_a_fresh_state_and_reuse_their_vertex_buffers(backend):
    scene = get_scene("cape", size=5)
    arrays = _arrays(scene, 4, 15, 3)
    rt = Runtime(arrays, 3, scene, backend)
    z0, z1, w, y = np.zeros(4), np.ones(4), np.zeros(15), np.float32([0, 0, 0, 1, 0, 0, 0])
    za, Xa, _ = rt.frame(z0, z1, w, y)
    keep = za.copy()
    zb, Xb, Nb = rt.frame(z1, za, w, y)
    assert np.array_equal(za, keep) and zb is not za  # the state handed out is not overwritten
    assert np.shares_memory(Xa, Xb)  # vertices: one buffer, valid until the next frame
    assert np.allclose(np.linalg.norm(Nb, axis=1), 1.0, atol=1e-5)


def test_projector_equals_plain_projection_and_leaves_far_vertices_alone():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(3000, 3)).astype(np.float32)
    spheres = np.array([[0.2, 0.1, 0.0, 0.3], [-0.5, -0.4, 0.3, 0.2]], np.float32)
    capsules = np.array(
        [[0.75, -0.6, -0.5, 0.75, 0.6, 0.5, 0.15], [-0.6, 0.6, 0.6, -0.6, 0.6, 0.6, 0.1]], np.float32
    )  # the 2nd has zero length: a ball
    expected = project(X, spheres, capsules)
    P = Projector(len(X))(X.copy(), spheres, capsules)
    assert np.array_equal(P, expected)
    assert max_penetration(P, spheres, capsules) < 1e-6 < max_penetration(X, spheres, capsules)
    untouched = np.all(P == X, axis=1)
    assert 0.5 < untouched.mean() < 1.0
    # far from every proxy nothing is a candidate and nothing moves, whatever the offset of the scene
    far = X + np.float32(100.0)
    assert np.array_equal(Projector(len(X))(far.copy(), spheres, capsules), far)
    # overlapping proxies: a vertex pushed by one is checked by the next where it now is
    overlap = np.array([[1.0, 0.0, 0.0, 0.3], [0.65, 0.0, 0.0, 0.1]], np.float32)
    near = np.array([[0.85, 0.0, 0.0], [0.9, 0.05, 0.0]], np.float32)
    pushed = Projector(2)(near.copy(), overlap, capsules[:0])
    assert np.array_equal(pushed, project(near, overlap, capsules[:0])) and pushed[0, 0] == np.float32(0.75)


def test_unknown_backend_bad_rank_and_missing_singular_values_are_config_errors():
    scene = get_scene("sheet", size=4)
    arrays = _arrays(scene, 3, 6, 2)
    with pytest.raises(ConfigError, match="backend"):
        Runtime(arrays, 2, scene, "cuda")
    for rank in (0, 4, 2.0, True):
        with pytest.raises(ConfigError, match="normals rank"):
            Runtime(arrays, 2, scene, normals_rank=rank)
    with pytest.raises(ConfigError, match="singular_values"):
        Runtime({n: v for n, v in arrays.items() if n != "singular_values"}, 2, scene)
    assert Runtime(arrays, 2, scene).normals_rank == 3  # the default, capped at k


class _GivenProxies:
    """A scene whose collision proxies are set directly (``spheres`` (S, 4), ``capsules`` (C, 7))."""

    def __init__(self, scene, spheres, capsules):
        self.n_vertices, self.spheres, self.capsules = scene.n_vertices, spheres, capsules

    def proxies(self, y):
        return self.spheres, self.capsules


def test_numba_kernel_projects_like_collision_project_spheres_capsules_and_the_fallback():
    """Over a 6-frame rollout of a 9 x 9 sheet, a sphere and a capsule placed on the decoded cloth
    push many vertices; the kernel's vertices equal :func:`project` applied to its own unprojected
    vertices (same frame without proxies), none stays inside, and z, vertices and normals equal the
    float64 definition (with the stored basis). A sphere centred exactly on a vertex sends it along
    the fallback +y."""
    sheet = get_scene("sheet", size=9)
    k, w, layers = 6, 6, 3
    arrays = _arrays(sheet, k, w, layers, seed=2)
    scene = _GivenProxies(sheet, np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32))
    rt = Runtime(arrays, layers, scene, "numba", normals_rank=4)
    a64 = _definition_arrays(rt)
    rng = np.random.default_rng(4)
    z0, z1 = 0.05 * rng.normal(size=k).astype(np.float32), 0.05 * rng.normal(size=k).astype(np.float32)
    W = rng.normal(size=(6, w)).astype(np.float32)
    inside = [0, 0]  # vertices (over the frames) inside the big sphere, inside the capsule
    for t in range(6):
        scene.spheres, scene.capsules = np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32)
        _, free, _ = rt.frame(z0, z1, W[t], None)
        free = free.copy()
        centre = free.mean(axis=0)
        scene.spheres = np.array([[*centre, 0.2], [*free[3], 0.02]], np.float32)  # the 2nd: on vertex 3 exactly
        # across the sheet (which lies in the x-z plane), clear of the big sphere
        scene.capsules = np.array([[*(centre + [-0.45, 0.0, 0.35]), *(centre + [0.45, 0.02, 0.42]), 0.08]], np.float32)
        for i, depth in enumerate(
            (
                penetration_depth(free, scene.spheres[:1], scene.capsules[:0]),
                penetration_depth(free, scene.spheres[:0], scene.capsules),
            )
        ):
            inside[i] += int(np.sum(depth > 1e-4))
        z, X, N = rt.frame(z0, z1, W[t], None)
        expected = project(free, scene.spheres, scene.capsules)
        assert np.max(np.abs(X - expected)) < 2e-6
        assert np.allclose(X[3], free[3] + [0.0, 0.02, 0.0], atol=1e-6)  # the fallback direction (0, 1, 0)
        assert max_penetration(X, scene.spheres, scene.capsules) < 1e-6
        ref_z, ref_X, ref_N = frame_step(
            a64,
            layers,
            z0.astype(np.float64),
            z1.astype(np.float64),
            W[t].astype(np.float64),
            scene.spheres.astype(np.float64),
            scene.capsules.astype(np.float64),
        )
        assert np.max(np.abs(z - ref_z)) <= 1e-5 * np.max(np.abs(ref_z))
        others = np.arange(len(X)) != 3  # in float64 vertex 3 is ~1e-8 off the centre: pushed another way
        assert np.max(np.abs(X - ref_X)[others]) < 1e-5 and np.max(np.abs(N - ref_N)) < 1e-5
        z0, z1 = z1, z
    assert min(inside) > 6 * 5  # both kinds of proxy pushed many vertices


def test_numba_kernel_is_deterministic_converts_other_dtypes_and_propagates_nan_like_numpy():
    scene = get_scene("sheet", size=7)
    k, w = 5, 6
    arrays = _arrays(scene, k, w, 4)
    a, b, ref = (Runtime(arrays, 4, scene, backend) for backend in ("numba", "numba", "numpy"))
    rng = np.random.default_rng(5)
    z0, z1, w_t = (rng.normal(size=n).astype(np.float32) for n in (k, k, w))
    y = scene.topology()["rest"][24]
    first = [v.copy() for v in a.frame(z0, z1, w_t, y)]
    strided = np.repeat(w_t, 2)[::2]
    assert not strided.flags.c_contiguous
    for out in (a.frame(z0, z1, w_t, y), b.frame(z0, z1, w_t, y), b.frame(z0.astype(np.float64), list(z1), strided, y)):
        assert all(
            np.array_equal(x, f) for x, f in zip(out, first)
        )  # bitwise, also after float64 / list / strided inputs
    for bad in ((np.nan, 0), (0, np.nan)):  # NaN in a state, then in the external input
        z_nan, w_nan = z0.copy(), w_t.copy()
        z_nan[1] += bad[0]
        w_nan[2] += bad[1]
        got, want = a.frame(z_nan, z1, w_nan, y), ref.frame(z_nan, z1, w_nan, y)
        for g, e in zip(got, want):
            assert np.isnan(g).any() and np.array_equal(np.isnan(g), np.isnan(e))
    with pytest.raises(ValueError):
        a.frame(z0[:-1], z1, w_t, y)
