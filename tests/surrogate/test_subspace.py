import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.alpha_beta import fit_alpha_beta, rollout
from animat.surrogate.subspace import PCA, fit_pca, reconstruction_table


def test_pca_round_trip_exact_with_all_components(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6, 3)).astype(np.float32)  # D = 18 < N
    pca = fit_pca(X)
    assert pca.n_components == 18
    assert np.allclose(pca.decode(pca.encode(X)), X, atol=1e-5)
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
        z0, z1 = rng.normal(size=3) + 100 * e, rng.normal(size=3) + 100 * e
        Z = rollout(alpha, beta, z0, z1, 50).astype(np.float64)
        episodes.append(Z + rng.normal(scale=1e-6, size=Z.shape))
    a, b = fit_alpha_beta(episodes)
    assert np.allclose(a, alpha, atol=1e-3) and np.allclose(b, beta, atol=1e-3)


def test_collision_projection_pushes_vertices_out_of_sphere():
    from animat.surrogate.collision import project_out_of_sphere

    X = np.array([[[0.05, 0, 0], [0.5, 0, 0], [0, 0, 0]]], np.float32)
    P = project_out_of_sphere(X, np.zeros((1, 3)), 0.1)
    assert np.allclose(np.linalg.norm(P[0], axis=-1), [0.1, 0.5, 0.1], atol=1e-6)
    assert np.allclose(P[0, 1], X[0, 1])
