import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.alpha_beta import fit_alpha_beta
from animat.surrogate.model import alpha_beta_rollout
from animat.surrogate.subspace import PCA, fit_pca, reconstruction_table


def test_pca_round_trip_exact_with_all_components(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6, 3)).astype(np.float32)  # D = 18 < N
    pca = fit_pca(X)
    assert pca.n_components == 18
    assert np.allclose(pca.round_trip(X), X, atol=1e-5)
    assert np.allclose(pca.components @ pca.components.T, np.eye(18), atol=1e-5)
    loaded = PCA.load(pca.save(tmp_path / "pca.npz"))
    assert np.array_equal(loaded.components, pca.components)


def test_reconstruction_error_falls_with_components():
    rng = np.random.default_rng(1)
    X = (rng.normal(size=(40, 4)) @ rng.normal(size=(4, 30))).reshape(40, 10, 3)
    pca = fit_pca(X)
    table = reconstruction_table(pca, X, [1, 2, 4, 8], side_m=1.0)
    errs = [r["mean_error_m"] for r in table]
    assert errs[0] > errs[1] > errs[2]
    assert max(errs[2:]) < 1e-4  # rank-4 data: 4 components are exact


def test_pca_rejects_bad_component_count():
    with pytest.raises(ConfigError):
        fit_pca(np.zeros((5, 2, 3)), 7)


def test_alpha_beta_recovers_known_coefficients():
    rng = np.random.default_rng(2)
    alpha = np.array([0.99, 1.0, 0.95], np.float32)
    beta = np.array([0.9, 0.5, 0.2], np.float32)
    episodes = []
    for e in range(5):  # episodes far apart: a fit across boundaries would be biased
        z0, z1 = (rng.normal(size=3).astype(np.float32) + 100 * e for _ in range(2))
        Z = np.concatenate([[z0, z1], alpha_beta_rollout({"alpha": alpha, "beta": beta}, z0, z1, 48)]).astype(
            np.float64
        )
        episodes.append(Z + rng.normal(scale=1e-6, size=Z.shape))
    a, b = fit_alpha_beta(episodes)
    assert np.allclose(a, alpha, atol=1e-3) and np.allclose(b, beta, atol=1e-3)
    # alpha held at 1 for component 1 (whose true alpha is 1): the same beta; for component 0 (true
    # alpha 0.99) beta alone must absorb the pull toward 0, so it differs
    a1, b1 = fit_alpha_beta(episodes, unit_alpha=[0, 1])
    assert a1[0] == a1[1] == 1.0 and np.isclose(b1[1], beta[1], atol=1e-3) and not np.isclose(b1[0], beta[0], atol=1e-2)
    assert np.array_equal(a1[2:], a[2:]) and np.array_equal(b1[2:], b[2:])


def test_collision_projection_pushes_vertices_out_of_sphere():
    from animat.surrogate.collision import project

    X = np.array([[0.05, 0, 0], [0.5, 0, 0], [0, 0, 0]], np.float32)
    P = project(X, np.array([[0, 0, 0, 0.1]], np.float32), np.zeros((0, 7), np.float32))
    assert np.allclose(np.linalg.norm(P, axis=-1), [0.1, 0.5, 0.1], atol=1e-6)
    assert np.allclose(P[0], [0.1, 0, 0]) and np.allclose(P[1], X[1])  # radially out; outside: unchanged


def test_collision_projection_leaves_no_vertex_inside_any_proxy_numpy_and_jax():
    import jax.numpy as jnp

    from animat.surrogate.collision import max_penetration, project

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(2000, 3)).astype(np.float32)
    spheres = np.array([[0.2, 0.1, 0.0, 0.3], [-0.5, -0.4, 0.3, 0.2]], np.float32)
    capsules = np.array([[0.75, -0.6, -0.5, 0.75, 0.6, 0.5, 0.15]], np.float32)  # disjoint proxies
    assert max_penetration(X, spheres, capsules) > 0.1  # the random points start inside
    P = project(X, spheres, capsules)
    assert max_penetration(P, spheres, capsules) < 1e-6
    outside = np.linalg.norm(P - X, axis=1) == 0
    assert outside.mean() > 0.5  # vertices already outside are not moved
    Pj = np.asarray(project(jnp.asarray(X), jnp.asarray(spheres), jnp.asarray(capsules), xp=jnp))
    assert np.allclose(P, Pj, atol=1e-5)


def test_normals_regression_matches_reference_normals_on_held_out_frames():
    """The cape (its torso moves, so the cloth bends): normals regressed linearly from a
    16-component subspace state stay within 8 degrees on average of the exact normals of a
    held-out episode, whose normals themselves turn by more than 10 degrees on average."""
    from animat.surrogate.normals import angle_degrees, fit_normal_regression, predict_normals, vertex_normals
    from animat.surrogate.scenes import get_scene

    scene = get_scene("cape", size=7)
    tri = scene.topology()["triangles"]
    train = np.concatenate([scene.simulate(120, s)["X"] for s in (0, 1, 3)])
    held = scene.simulate(120, 2)["X"]
    pca = fit_pca(train, 16)
    R = fit_normal_regression(pca.encode(train), vertex_normals(train, tri))
    ref = vertex_normals(held, tri)
    angle = angle_degrees(predict_normals(R, pca.encode(held)), ref)
    assert angle.mean() < 8.0
    assert angle_degrees(ref, ref[:1]).mean() > 10.0
    # exact normals of a flat square grid: all along the plane's normal
    flat = np.stack(np.meshgrid(np.arange(3.0), np.arange(3.0)), -1).reshape(-1, 2)
    Xf = np.concatenate([flat, np.zeros((9, 1))], axis=1)
    tri_f = np.array([[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4], [3, 4, 7], [3, 7, 6], [4, 5, 8], [4, 8, 7]])
    assert np.allclose(np.abs(vertex_normals(Xf, tri_f)[:, 2]), 1.0)
