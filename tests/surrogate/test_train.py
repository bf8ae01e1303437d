import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat import runs
from animat.errors import CheckpointError
from animat.evolve.checkpoint import read_checkpoint
from animat.surrogate.evaluate import evaluate
from animat.surrogate.model import Surrogate, alpha_beta_rollout, init_mlp, rollout
from animat.surrogate.runtime import Runtime
from animat.surrogate.subspace import PCA
from animat.surrogate.train import TrainConfig, train


def test_zero_network_is_alpha_beta_and_checkpoint_round_trip(tmp_path):
    k, w = 4, 6
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + w, k, 6, 3)
    params = {n: jnp.zeros_like(v) if n in ("W2", "b2") else v for n, v in params.items()}
    stats = {"alpha": jnp.full(k, 0.9), "beta": jnp.full(k, 0.5), "in_mean": jnp.zeros(2 * k + w), "in_std": jnp.ones(2 * k + w),
             "out_mean": jnp.zeros(k), "out_std": jnp.ones(k)}
    z0, z1, W = jnp.ones(k), 2 * jnp.ones(k), jnp.zeros((10, w))
    assert np.allclose(rollout(params, stats, z0, z1, W), alpha_beta_rollout(stats, z0, z1, 10), atol=1e-6)
    Surrogate(params, stats, {"components": k}).save(tmp_path)
    loaded = Surrogate.load(tmp_path)
    assert all(np.array_equal(loaded.params[n], params[n]) for n in params)


def _cfg(data, **kw):
    base = dict(data=str(data), components=8, epochs=6, batches_per_epoch=6, layers=4, window=12, lr=1e-3,
                test_episodes=1, checkpoint_every=3)
    return TrainConfig.build(None, **{**base, **kw})


def test_training_lowers_loss_keeps_best_checkpoint_resumes_and_evaluates(tiny_dataset, tmp_path):
    data, _ = tiny_dataset
    summary = train(_cfg(data), tmp_path / "full")
    assert summary["final_train_rollout_loss_m"] < summary["initial_train_rollout_loss_m"]
    lines = (tmp_path / "full" / "metrics.csv").read_text().splitlines()
    header, values = lines[0].split(","), [dict(zip(lines[0].split(","), r.split(","))) for r in lines[1:]]
    assert len(values) == 6 and "val_loss_m" in header
    best = min(range(6), key=lambda e: float(values[e]["val_loss_m"]))
    assert runs.read_json(tmp_path / "full" / "checkpoints" / "model.json")["epoch"] == best + 1 == summary["best_epoch"]
    assert 0 < summary["model_megabytes"] < 16

    # interrupted after 3 epochs and resumed to 6: the same parameters as the uninterrupted run
    train(_cfg(data, epochs=3), tmp_path / "part")
    # options that would change the basis, normals and noise level: resuming keeps the run's saved ones
    train(_cfg(data, pca_samples=50, noise_frac=0.5), tmp_path / "part", resume=True)
    a, b = (read_checkpoint(tmp_path / run / "checkpoints" / "last")[0] for run in ("full", "part"))
    assert all(np.array_equal(a[n], b[n]) for n in a if n.startswith("param/"))  # also: same seed, same result
    # the resumable checkpoint is one verified unit: a torn write is refused, not mixed with older state
    npz = next((tmp_path / "part" / "checkpoints" / "last" / "checkpoints").glob("*.npz"))
    npz.write_bytes(npz.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match="corrupt"):
        train(_cfg(data, epochs=7), tmp_path / "part", resume=True)

    ev = evaluate(tmp_path / "full", tmp_path / "eval", horizon=30, stability_frames=10_000, settle_frames=300, video=True)
    assert ev["segments"] == 2
    assert ev["stability_frames"] == 10_000 and ev["stability_finite"] and isinstance(ev["stable"], bool)
    assert (tmp_path / "eval" / "media" / "rollout.gif").stat().st_size > 0
    assert (tmp_path / "eval" / "plots" / "rollout_error.png").stat().st_size > 0
    for key in ("surrogate_error_percent_of_size", "alpha_beta_error_percent_of_size", "pca_floor_error_percent_of_size",
                "runtime_numpy_seconds_per_frame", "runtime_jax_seconds_per_frame", "model_megabytes"):
        assert np.isfinite(ev[key]) and ev[key] >= 0
    assert ev["pca_floor_error_percent_of_size"] <= ev["surrogate_error_percent_of_size"] + 1e-6

    # the runtime (NumPy and JAX) reproduces the model's rollout + decoding, projected out of the sphere
    from animat.surrogate.collision import max_penetration
    from animat.surrogate.data import load_dataset
    from animat.surrogate.model import external_input

    ds = load_dataset(data)
    pca = PCA.load(tmp_path / "full" / "pca.npz")
    model = Surrogate.load(tmp_path / "full" / "checkpoints")
    Z = pca.encode(ds.X[-1][:12])
    W = external_input(ds.Y[-1][:12])
    expected = np.asarray(rollout(model.params, model.stats, jnp.asarray(Z[0]), jnp.asarray(Z[1]), jnp.asarray(W[2:])))
    for backend in ("numpy", "jax"):
        rt = Runtime.load(tmp_path / "full", backend)
        z0, z1 = Z[0], Z[1]
        for t in range(2, 12):
            z, X, N = rt.frame(z0, z1, W[t], ds.Y[-1][t])
            z0, z1 = z1, np.asarray(z)
        assert np.allclose(z1, expected[-1], atol=1e-4)
        assert max_penetration(np.asarray(X), *rt.scene.proxies(ds.Y[-1][11])) < 1e-5
        assert np.allclose(np.linalg.norm(np.asarray(N), axis=-1), 1, atol=1e-4)


def test_stability_check_passes_a_damped_model_and_flags_a_growing_one():
    """alpha/beta-only models (zero last layer): |alpha| < 1 decays to rest within the training
    range; alpha > 1 grows without bound and must be reported unstable."""
    from animat.surrogate.evaluate import stability_check
    from animat.surrogate.scenes import get_scene

    scene = get_scene("sheet", size=4)
    k, V = 3, scene.n_vertices
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(3 * V, k)))[0].T.astype(np.float32)
    pca = PCA(np.zeros(3 * V, np.float32), basis, np.ones(k, np.float32))
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + 6, k, 4, 2)
    params = {n: jnp.zeros_like(v) if n in ("W1", "b1") else v for n, v in params.items()}
    start = np.stack([pca.decode(np.ones(k)), pca.decode(np.ones(k))])
    train_Z = np.array([[-1.0] * k, [1.0] * k])
    results = {}
    for alpha in (0.99, 1.01):
        stats = {"alpha": jnp.full(k, alpha), "beta": jnp.full(k, 0.5), "in_mean": jnp.zeros(2 * k + 6), "in_std": jnp.ones(2 * k + 6),
                 "out_mean": jnp.zeros(k), "out_std": jnp.ones(k)}
        results[alpha] = stability_check(Surrogate(params, stats, {}), pca, scene, start, train_Z, 10_000, 300)
    assert results[0.99]["stable"] and results[0.99]["stability_max_range_ratio"] <= 1.0 + 1e-6
    assert not results[1.01]["stable"] and not results[1.01]["stability_max_range_ratio"] <= 1.5


def test_range_ratios_are_one_at_the_training_extremes_and_scale_linearly():
    from animat.surrogate.evaluate import range_ratios

    train_Z = np.array([[0.0, -2.0], [4.0, 2.0], [1.0, 0.0]])
    r = range_ratios(np.array([[4.0, 0.0], [2.0, 6.0], [-4.0, -2.0]]), train_Z)
    assert np.allclose(r, [[1.0, 0.0], [0.0, 3.0], [3.0, 1.0]])


def test_start_noise_correlation_sets_the_velocity_noise():
    """Each frame's noise has std ``std``; the velocity noise z1 - z0 has std std * sqrt(2 (1 - rho))."""
    from animat.surrogate.train import start_noise

    key = jax.random.PRNGKey(0)
    for rho in (0.0, 0.9, 1.0):
        noise = np.asarray(start_noise(key, 0.5, 400, 16, rho))
        assert noise.shape == (2, 400, 16)
        assert abs(noise[0].std() - 0.5) < 0.02 and abs(noise[1].std() - 0.5) < 0.02
        assert abs((noise[1] - noise[0]).std() - 0.5 * np.sqrt(2 * (1 - rho))) < 0.02
    assert np.array_equal(np.asarray(start_noise(key, 0.5, 4, 3, 1.0))[0], np.asarray(start_noise(key, 0.5, 4, 3, 1.0))[1])
    # correlation 0 is the independent draw of earlier runs, number for number (their --resume is unchanged)
    assert np.array_equal(np.asarray(start_noise(key, 0.5, 4, 3, 0.0)), np.asarray(0.5 * jax.random.normal(key, (2, 4, 3))))
