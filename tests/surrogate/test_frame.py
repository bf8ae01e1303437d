"""The flag in its own frame (animat.surrogate.frame): azimuth states, turn invariance, training and the runtime."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat import runs
from animat.errors import CheckpointError, ConfigError
from animat.surrogate.data import generate, load_dataset
from animat.surrogate.evaluate import evaluate
from animat.surrogate.frame import AzimuthFrame, turn_vectors, wind_in_frame
from animat.surrogate.inputs import network_input
from animat.surrogate.model import Surrogate, external_input, init_mlp, rollout, step
from animat.surrogate.runtime import Runtime, frame_step
from animat.surrogate.scenes import get_scene
from animat.surrogate.subspace import PCA, fit_pca
from animat.surrogate.train import TrainConfig, train


@pytest.fixture(scope="module")
def flag_episode():
    scene = get_scene("flag", size=7, elastic2d="both")
    run = scene.simulate(60, np.random.SeedSequence([0, 1]))
    return scene, run["X"], run["Y"]


def _turned(frame: AzimuthFrame, X: np.ndarray, theta: float) -> np.ndarray:
    return frame.rotate(X, np.full(X.shape[:-2], theta))


def test_full_basis_round_trip_and_a_turned_flag_changes_only_the_azimuth(flag_episode):
    scene, X, _ = flag_episode
    frame = AzimuthFrame.fit(X, scene.pinned)
    assert np.allclose(frame.pole, X[0, scene.pinned, :2].mean(0)) and len(frame.free) == scene.n_vertices - len(
        scene.pinned
    )
    pca = fit_pca(X, None, frame=frame)
    assert pca.state_dim == pca.n_components + 1
    Z = pca.encode(X)
    np.testing.assert_allclose(pca.decode(Z), X, atol=2e-5)
    turned = pca.encode(_turned(frame, X, 0.7))
    np.testing.assert_allclose(turned[:, :-1], Z[:, :-1], atol=2e-5)  # the same shape in the flag's frame
    np.testing.assert_allclose(turned[:, -1] - Z[:, -1], 0.7 * frame.scale, atol=1e-4)  # turned by 0.7 rad
    # a turn of the whole flag moves the free vertices by ~ c * dphi in the flattened norm (module docstring)
    moved = np.linalg.norm((_turned(frame, X[:1], 0.01) - X[:1]).reshape(-1))
    assert 0.9 < moved / (0.01 * frame.scale) < 1.1


def test_azimuth_unwraps_along_frames_and_saves_with_the_basis(tmp_path, flag_episode):
    scene, X, _ = flag_episode
    frame = AzimuthFrame.fit(X, scene.pinned)
    spin = np.linspace(0.0, 4 * np.pi, len(X))  # two full turns about the pole
    phi = frame.angles(frame.rotate(X, spin))
    np.testing.assert_allclose(np.diff(phi), np.diff(spin + frame.angles(X)), atol=1e-4)  # no 2 pi jumps
    pca = fit_pca(X, 6, frame=frame)
    pca.save(tmp_path / "pca.npz")
    loaded = PCA.load(tmp_path / "pca.npz")
    assert loaded.frame.scale == frame.scale and np.array_equal(loaded.frame.free, frame.free)
    np.testing.assert_array_equal(loaded.encode(X), pca.encode(X))
    arrays = runs.read_npz(tmp_path / "pca.npz")
    runs.atomic_save_npz(tmp_path / "torn.npz", **{k: v for k, v in arrays.items() if k != "frame_pole"})
    with pytest.raises(CheckpointError, match="cannot read PCA file .*frame_pole"):  # one line, not a KeyError
        PCA.load(tmp_path / "torn.npz")
    with pytest.raises(ConfigError, match="vertical axis"):
        AzimuthFrame.fit(X, np.array([0, scene.n_vertices - 1]))  # two corners: no pole


def test_wind_turns_into_the_flag_frame():
    w = np.array([1.0, 0.0, 0.5, 0.0, 2.0, 0.0])
    np.testing.assert_allclose(wind_in_frame(w, np.pi / 2), [0.0, -1.0, 0.5, 2.0, 0.0, 0.0], atol=1e-12)
    v = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(turn_vectors(turn_vectors(v, 0.3), -0.3), v, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(turn_vectors(v, 1.1), axis=-1), np.linalg.norm(v, axis=-1))


def test_the_network_sees_the_same_input_for_a_turned_flag_in_a_turned_wind():
    """With alpha = 1 for the azimuth (no preferred direction), turning the state's azimuth and the
    wind by the same angle leaves the network's input unchanged and turns its prediction."""
    k, c, theta = 5, 0.8, 0.9
    rng = np.random.default_rng(2)
    stats = {
        "alpha": np.r_[rng.uniform(0.8, 1.0, k - 1), 1.0],
        "beta": rng.uniform(0.0, 0.5, k),
        "frame_scale": np.float64(c),
        "in_mean": rng.normal(size=2 * k + 6),
        "in_std": rng.uniform(0.5, 2, 2 * k + 6),
        "out_mean": np.zeros(k),
        "out_std": np.ones(k),
    }
    z0, z1, w = rng.normal(size=k), rng.normal(size=k), rng.normal(size=6)
    shift = np.r_[np.zeros(k - 1), c * theta]
    w_turned = np.concatenate([turn_vectors(w[:3], theta), turn_vectors(w[3:], theta)])
    zbar, x = network_input(stats, z0, z1, w)
    zbar2, x2 = network_input(stats, z0 + shift, z1 + shift, w_turned)
    np.testing.assert_allclose(x2, x, atol=1e-12)
    np.testing.assert_allclose(zbar2 - zbar, shift, atol=1e-12)
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + 6, k, 8, 3)
    jstats = {n: jnp.asarray(v, jnp.float32) for n, v in stats.items()}
    a, _ = step(params, jstats, jnp.asarray(z0), jnp.asarray(z1), jnp.asarray(w))
    b, _ = step(params, jstats, jnp.asarray(z0 + shift), jnp.asarray(z1 + shift), jnp.asarray(w_turned))
    np.testing.assert_allclose(np.asarray(b) - np.asarray(a), shift, atol=1e-5)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_runtime_in_the_flag_frame_equals_the_plain_definition(backend, flag_episode):
    """Random network and statistics with a frame: the runtime's vertices and normals (world frame)
    equal :func:`frame_step` in float64, which turns the wind and the decoded cloth itself."""
    scene, X, Y = flag_episode
    frame = AzimuthFrame.fit(X, scene.pinned)
    pca = fit_pca(X, 6, frame=frame)
    k, w, layers = pca.state_dim, 6, 3
    rng = np.random.default_rng(4)
    arrays = {n: np.asarray(v) for n, v in init_mlp(jax.random.PRNGKey(1), 2 * k + w, k, 10, layers).items()}
    arrays.update(
        alpha=rng.uniform(0.8, 1.0, k),
        beta=rng.uniform(0.0, 0.5, k),
        in_mean=rng.normal(size=2 * k + w),
        in_std=rng.uniform(0.5, 2.0, 2 * k + w),
        out_mean=0.01 * rng.normal(size=k),
        out_std=0.05 * rng.uniform(0.5, 2.0, k),
        components=pca.components,
        mean=pca.mean,
        normals=rng.normal(size=(pca.n_components + 1, 3 * scene.n_vertices)),
        singular_values=pca.singular_values,
        frame_scale=np.float32(frame.scale),
        frame_pole=frame.pole,
    )
    rt = Runtime(arrays, layers, scene, backend, normals_rank=pca.n_components)
    a64 = {n: v.astype(np.float64) for n, v in rt.arrays.items()}
    if backend == "numba":  # its stored int16 rows
        from animat.surrogate.kernel import quantise

        for name, rows in (("components", slice(None)), ("normals_B", slice(0, -1))):
            q, s = quantise(a64[name][rows])
            a64[name][rows] = q * s[:, None].astype(np.float64)
    Z = pca.encode(X[:2])
    z0, z1 = Z[0], Z[1]
    W = external_input(Y, "flag")
    no_proxies = scene.proxies(Y[0])
    for t in range(2, 8):
        z, Xt, Nt = rt.frame(z0, z1, W[t], Y[t])
        ref_z, ref_X, ref_N = frame_step(
            a64,
            layers,
            z0.astype(np.float64),
            z1.astype(np.float64),
            W[t].astype(np.float64),
            *(p.astype(np.float64) for p in no_proxies),
        )
        np.testing.assert_allclose(np.asarray(z), ref_z, atol=1e-5 * np.abs(ref_z).max())
        np.testing.assert_allclose(np.asarray(Xt), ref_X, atol=2e-5)
        np.testing.assert_allclose(np.asarray(Nt), ref_N, atol=2e-5)
        z0, z1 = z1, np.asarray(z)
    # frame_step's world vertices are the framed decoding of its state
    np.testing.assert_allclose(ref_X, pca.decode(ref_z[None].astype(np.float32))[0], atol=2e-5)


def test_training_in_the_flag_frame_and_evaluating_it(tmp_path):
    data = tmp_path / "flag7"
    generate("flag", 4, 60, 0, data, scene_options={"size": 7, "elastic2d": "both"})
    cfg = TrainConfig.build(
        None,
        data=str(data),
        components=8,
        epochs=3,
        batches_per_epoch=6,
        layers=4,
        window=12,
        lr=1e-3,
        test_episodes=1,
        checkpoint_every=3,
        cloth_frame="azimuth",
    )
    summary = train(cfg, tmp_path / "run")
    assert summary["final_train_rollout_loss_m"] < summary["initial_train_rollout_loss_m"]
    pca = PCA.load(tmp_path / "run" / "pca.npz")
    model = Surrogate.load(tmp_path / "run" / "checkpoints")
    assert (
        pca.frame is not None
        and pca.state_dim == 9
        and model.stats["alpha"].shape == (9,)
        and "frame_scale" in model.stats
    )
    ds = load_dataset(data)
    Z = pca.encode(ds.X[-1][:12])
    W = external_input(ds.Y[-1][:12], "flag")
    expected = np.asarray(rollout(model.params, model.stats, jnp.asarray(Z[0]), jnp.asarray(Z[1]), jnp.asarray(W[2:])))
    rt = Runtime.load(tmp_path / "run", "numba")
    z0, z1 = Z[0], Z[1]
    for t in range(2, 12):
        z, X, _ = rt.frame(z0, z1, W[t], ds.Y[-1][t])
        z0, z1 = z1, z
    np.testing.assert_allclose(z1, expected[-1], atol=1e-3 * np.abs(expected[-1]).max())
    np.testing.assert_allclose(X, pca.decode(expected[-1][None])[0], atol=1e-4)
    ev = evaluate(
        tmp_path / "run",
        tmp_path / "eval",
        horizon=30,
        stability_frames=500,
        settle_frames=120,
        timing_repeats=1,
        reference_frames=5,
    )
    assert ev["segments"] == 2 and ev["stability_finite"] and np.isfinite(ev["surrogate_error_percent_of_size"])
    assert ev["pca_floor_error_percent_of_size"] <= ev["surrogate_error_percent_of_size"]
    with pytest.raises(ConfigError, match="cloth_frame must be"):
        TrainConfig.build(None, data=str(data), cloth_frame="body")


def test_azimuth_frame_is_the_flag_s_only(tiny_dataset, tmp_path):
    data, _ = tiny_dataset  # the sheet
    cfg = TrainConfig.build(None, data=str(data), components=4, epochs=1, test_episodes=1, cloth_frame="azimuth")
    with pytest.raises(ConfigError, match="flag"):
        train(cfg, tmp_path / "run")
