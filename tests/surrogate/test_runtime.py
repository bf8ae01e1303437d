"""The per-frame runtime: the folded, preallocated NumPy path equals the plain definition."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.collision import Projector, max_penetration, project
from animat.surrogate.model import init_mlp
from animat.surrogate.runtime import Runtime, frame_step
from animat.surrogate.scenes import get_scene


def _arrays(scene, k: int, w: int, layers: int, seed: int = 0) -> dict:
    """Random weights and non-trivial statistics (every folded term matters), float32."""
    rng = np.random.default_rng(seed)
    V = scene.n_vertices
    arrays = {n: np.asarray(v) for n, v in init_mlp(jax.random.PRNGKey(seed), 2 * k + w, k, 12, layers).items()}
    arrays.update(alpha=rng.uniform(0.8, 1.0, k), beta=rng.uniform(0.0, 0.5, k), in_mean=rng.normal(size=2 * k + w),
                  in_std=rng.uniform(0.5, 2.0, 2 * k + w), out_mean=0.01 * rng.normal(size=k), out_std=rng.uniform(0.5, 2.0, k),
                  components=rng.normal(size=(k, 3 * V)) / np.sqrt(3 * V), mean=scene.topology()["rest"].reshape(-1),
                  normals=rng.normal(size=(k + 1, 3 * V)), singular_values=np.sort(rng.uniform(0.5, 5.0, k))[::-1])
    return {n: np.asarray(v, np.float32) for n, v in arrays.items()}


@pytest.mark.parametrize("layers, rank", [(1, 5), (2, 3), (4, 1)])
def test_numpy_path_equals_plain_definition_within_float32_rounding(layers, rank):
    """Five frames rolled on their own predictions, the sphere placed on the cloth so that the
    collision projection moves vertices: z, vertices and normals agree with :func:`frame_step`
    evaluated in float64 to 1e-5 (relative for z, metres for vertices, unit vectors for normals),
    at full and reduced normals rank."""
    scene = get_scene("sheet", size=7)
    k, w = 5, 6
    arrays = _arrays(scene, k, w, layers)
    rt = Runtime(arrays, layers, scene, "numpy", normals_rank=rank)
    assert rt.arrays["normals_A"].shape == (k, rank) and rt.arrays["normals_B"].shape == (rank + 1, 3 * scene.n_vertices)
    a64 = {n: v.astype(np.float64) for n, v in rt.arrays.items()}
    rng = np.random.default_rng(1)
    z0, z1 = 0.1 * rng.normal(size=k).astype(np.float32), 0.1 * rng.normal(size=k).astype(np.float32)
    y = scene.topology()["rest"][24] + np.float32([0.0, 0.0, 0.01])  # the sphere sits on the middle vertex
    W = rng.normal(size=(5, w)).astype(np.float32)
    moved = 0
    for t in range(5):
        spheres, capsules = scene.proxies(y)
        z, X, N = rt.frame(z0, z1, W[t], y)
        ref_z, ref_X, ref_N = frame_step(a64, layers, z0.astype(np.float64), z1.astype(np.float64), W[t].astype(np.float64),
                                         spheres.astype(np.float64), capsules.astype(np.float64))
        unprojected = (ref_z @ a64["components"] + a64["mean"]).reshape(-1, 3)
        moved += int(np.sum(np.linalg.norm(ref_X - unprojected, axis=1) > 1e-4))
        assert z.dtype == X.dtype == N.dtype == np.float32 and X.shape == N.shape == (scene.n_vertices, 3)
        assert np.max(np.abs(z - ref_z)) <= 1e-5 * np.max(np.abs(ref_z))
        assert np.max(np.abs(X - ref_X)) < 1e-5 and np.max(np.abs(N - ref_N)) < 1e-5
        assert max_penetration(X, spheres, capsules) < 1e-5
        z0, z1 = z1, z
    assert moved > 0  # the projection was exercised


def test_numpy_path_returns_a_fresh_state_and_reuses_its_vertex_buffers():
    scene = get_scene("cape", size=5)
    arrays = _arrays(scene, 4, 15, 3)
    rt = Runtime(arrays, 3, scene, "numpy")
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
    capsules = np.array([[0.75, -0.6, -0.5, 0.75, 0.6, 0.5, 0.15],
                         [-0.6, 0.6, 0.6, -0.6, 0.6, 0.6, 0.1]], np.float32)  # the 2nd has zero length: a ball
    expected = project(X, spheres, capsules)
    P = Projector(len(X))(X.copy(), spheres, capsules)
    assert np.array_equal(P, expected)
    assert max_penetration(P, spheres, capsules) < 1e-6 < max_penetration(X, spheres, capsules)
    untouched = np.all(P == X, axis=1)
    assert 0.5 < untouched.mean() < 1.0
    # far from every proxy nothing is a candidate and nothing moves, whatever the offset of the scene
    far = X + np.float32(100.0)
    assert np.array_equal(Projector(len(X))(far.copy(), spheres, capsules), far)


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
