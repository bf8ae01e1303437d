import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat import runs
from animat.checkpoint import read_checkpoint
from animat.errors import CheckpointError, ConfigError, RunDirError
from animat.surrogate.evaluate import evaluate
from animat.surrogate.model import Surrogate, alpha_beta_rollout, init_mlp, rollout
from animat.surrogate.runtime import Runtime
from animat.surrogate.subspace import PCA
from animat.surrogate.train import TrainConfig, train


def test_zero_network_is_alpha_beta_and_checkpoint_round_trip(tmp_path):
    k, w = 4, 6
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + w, k, 6, 3)
    params = {n: jnp.zeros_like(v) if n in ("W2", "b2") else v for n, v in params.items()}
    stats = {
        "alpha": jnp.full(k, 0.9),
        "beta": jnp.full(k, 0.5),
        "in_mean": jnp.zeros(2 * k + w),
        "in_std": jnp.ones(2 * k + w),
        "out_mean": jnp.zeros(k),
        "out_std": jnp.ones(k),
    }
    z0, z1, W = jnp.ones(k), 2 * jnp.ones(k), jnp.zeros((10, w))
    assert np.allclose(rollout(params, stats, z0, z1, W), alpha_beta_rollout(stats, z0, z1, 10), atol=1e-6)
    Surrogate(params, stats, {"components": k}).save(tmp_path)
    loaded = Surrogate.load(tmp_path)
    assert all(np.array_equal(loaded.params[n], params[n]) for n in params)
    # arrays that are not the ones the manifest was written with (a torn save, a corrupt file) are refused
    Surrogate({n: v + 1 for n, v in params.items()}, stats, {"components": k}).save(tmp_path / "other")
    manifest = runs.read_json(tmp_path / "model.json")
    (tmp_path / "model.npz").write_bytes((tmp_path / "other" / "model.npz").read_bytes())
    with pytest.raises(CheckpointError, match="sha256"):
        Surrogate.load(tmp_path)
    Surrogate(params, stats, {"components": k}).save(tmp_path)
    # a manifest of another format version, or without its architecture, is refused in one line
    for broken in ({**manifest, "version": 2}, {k: v for k, v in manifest.items() if k != "config"}):
        runs.atomic_write_json(tmp_path / "model.json", broken)
        with pytest.raises(CheckpointError, match="version 2|cannot read"):
            Surrogate.load(tmp_path)


def _cfg(data, **kw):
    base = dict(
        data=str(data),
        components=8,
        epochs=6,
        batches_per_epoch=6,
        layers=4,
        window=12,
        lr=1e-3,
        test_episodes=1,
        checkpoint_every=3,
    )
    return TrainConfig.build(None, **{**base, **kw})


def test_training_lowers_loss_keeps_best_checkpoint_resumes_and_evaluates(tiny_dataset, tmp_path):
    data, _ = tiny_dataset
    summary = train(_cfg(data), tmp_path / "full")
    record = runs.read_json(tmp_path / "full" / "config.json")
    assert (record["system"], record["verb"]) == ("surrogate", "train")
    assert summary["final_train_rollout_loss_m"] < summary["initial_train_rollout_loss_m"]
    lines = (tmp_path / "full" / "metrics.csv").read_text().splitlines()
    header, values = lines[0].split(","), [dict(zip(lines[0].split(","), r.split(","))) for r in lines[1:]]
    assert len(values) == 6 and "val_loss_m" in header
    best = min(range(6), key=lambda e: float(values[e]["val_loss_m"]))
    assert (
        runs.read_json(tmp_path / "full" / "checkpoints" / "model.json")["epoch"] == best + 1 == summary["best_epoch"]
    )
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

    ev = evaluate(
        tmp_path / "full", tmp_path / "eval", horizon=30, stability_frames=10_000, settle_frames=300, video=True
    )
    assert ev["segments"] == 2
    assert ev["stability_frames"] == 10_000 and ev["stability_finite"]
    assert ev["stable"] is (ev["stability_max_range_ratio"] <= 1.5 and ev["settle_speed_ratio"] <= 0.1)
    assert (tmp_path / "eval" / "media" / "rollout.gif").stat().st_size > 0
    assert (tmp_path / "eval" / "plots" / "rollout_error.png").stat().st_size > 0
    for key in (
        "surrogate_error_percent_of_size",
        "alpha_beta_error_percent_of_size",
        "pca_floor_error_percent_of_size",
        "runtime_numpy_seconds_per_frame",
        "runtime_jax_seconds_per_frame",
        "model_megabytes",
    ):
        assert np.isfinite(ev[key]) and ev[key] >= 0
    assert ev["pca_floor_error_percent_of_size"] <= ev["surrogate_error_percent_of_size"] + 1e-6
    # a dataset without the model's held-out episodes: a one-line error, not an IndexError
    import shutil

    shutil.copytree(tmp_path / "full", tmp_path / "moved", ignore=shutil.ignore_patterns("checkpoints"))
    shutil.copytree(tmp_path / "full" / "checkpoints", tmp_path / "moved" / "checkpoints")
    runs.atomic_write_json(
        tmp_path / "moved" / "config.json",
        {**runs.read_json(tmp_path / "full" / "config.json"), "test_episode_ids": [999]},
    )
    with pytest.raises(ConfigError, match="lacks the model's held-out"):
        evaluate(tmp_path / "moved", tmp_path / "eval2", horizon=30, stability_frames=0, video=False)
    # the speed-up divides the reference timed in this run (the recorded time is reported beside it)
    fastest = min(ev[f"runtime_{b}_seconds_per_frame"] for b in ("numba", "numpy", "jax"))
    assert ev["reference_seconds_per_frame"] > 0 and ev["reference_seconds_per_frame_recorded"] > 0
    assert ev["speedup_vs_reference"] == pytest.approx(ev["reference_seconds_per_frame"] / fastest)

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


def test_resume_after_a_crash_between_checkpoints_reports_the_kept_best_epoch(tiny_dataset, tmp_path):
    """The best checkpoint is saved whenever an epoch improves, checkpoints/last/ only every
    checkpoint_every epochs: a run that dies after its best epoch but before the next last/ replays
    that epoch on --resume and must still report it as the best (the replay only ties it)."""
    data, _ = tiny_dataset
    full = train(_cfg(data, epochs=3, checkpoint_every=2), tmp_path / "full")
    assert full["best_epoch"] == 3  # the case under test: the last epoch is the best, last/ is at epoch 2

    def crash(row):
        if row["epoch"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(_cfg(data, epochs=6, checkpoint_every=2), tmp_path / "part", on_epoch=crash)
    assert runs.read_json(tmp_path / "part" / "checkpoints" / "model.json")["epoch"] == 3
    part = train(_cfg(data, epochs=3, checkpoint_every=2), tmp_path / "part", resume=True)
    assert part["best_epoch"] == 3 and part["best_select_loss_m"] == full["best_select_loss_m"]
    # finished, with its summary: a further --resume at the same epochs is refused and changes nothing
    before = (tmp_path / "part" / "summary.json").read_text()
    with pytest.raises(RunDirError, match="already finished its 3 epochs"):
        train(_cfg(data, epochs=3, checkpoint_every=2), tmp_path / "part", resume=True)
    assert (tmp_path / "part" / "summary.json").read_text() == before


def test_stability_check_passes_a_damped_model_and_flags_a_growing_one():
    """alpha/beta-only models (zero last layer): |alpha| < 1 decays to rest within the training
    range; alpha > 1 grows without bound and must be reported unstable. alpha = 0.9 with beta = 1: the
    roots of z^2 - 1.9 z + 1 lie on the unit circle, an undamped oscillation of amplitude
    1 / cos(theta / 2) ~ 1.006 from z0 = z1 = 1 (cos theta = 0.95): finite and inside the training range,
    but as fast after the stop as before, so not stable either (settle ratio > 0.1)."""
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
    for alpha, beta in ((0.99, 0.5), (1.01, 0.5), (0.9, 1.0)):
        stats = {
            "alpha": jnp.full(k, alpha),
            "beta": jnp.full(k, beta),
            "in_mean": jnp.zeros(2 * k + 6),
            "in_std": jnp.ones(2 * k + 6),
            "out_mean": jnp.zeros(k),
            "out_std": jnp.ones(k),
        }
        results[alpha] = stability_check(Surrogate(params, stats, {}), pca, scene, start, train_Z, 10_000, 300)
    assert results[0.99]["stable"] and results[0.99]["stability_max_range_ratio"] <= 1.0 + 1e-6
    for alpha in (0.99, 1.01):  # no network: alpha/beta continued from the stop is the surrogate's own settling
        assert (
            np.isclose(results[alpha]["alpha_beta_settle_speed_ratio"], results[alpha]["settle_speed_ratio"], rtol=1e-3)
            or alpha > 1
        )
        assert np.isclose(
            results[alpha]["alpha_beta_max_spectral_radius"], np.abs(np.roots([1, -(alpha + 0.5), 0.5])).max()
        )
    assert not results[1.01]["stable"] and not results[1.01]["stability_max_range_ratio"] <= 1.5
    bounded = results[0.9]
    assert (
        bounded["stability_finite"]
        and bounded["stability_max_range_ratio"] <= 1.5
        and bounded["settle_speed_ratio"] > 0.1
    )
    assert bounded["stable"] is False and bounded["alpha_beta_max_spectral_radius"] == pytest.approx(1.0, abs=1e-6)


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
    assert np.array_equal(
        np.asarray(start_noise(key, 0.5, 4, 3, 1.0))[0], np.asarray(start_noise(key, 0.5, 4, 3, 1.0))[1]
    )
    # correlation 0 is the independent draw of earlier runs, number for number (their --resume is unchanged)
    assert np.array_equal(
        np.asarray(start_noise(key, 0.5, 4, 3, 0.0)), np.asarray(0.5 * jax.random.normal(key, (2, 4, 3)))
    )


def test_input_noise_has_each_entrys_std_and_a_run_with_it_is_its_own_and_repeatable(tiny_dataset, tmp_path):
    """``input_noise``: zero-mean noise of std ``std[j]`` on entry j of every frame; a run with
    ``input_noise_frac`` differs from the run without it from its first epoch, and repeats itself exactly."""
    from animat.surrogate.train import input_noise

    Ww = np.full((300, 20, 3), 2.0, np.float32)
    noisy = np.asarray(input_noise(jax.random.PRNGKey(1), Ww, jnp.array([0.0, 0.1, 1.0])))
    assert np.array_equal(noisy[..., 0], Ww[..., 0])
    assert abs((noisy[..., 1] - 2).std() - 0.1) < 0.005 and abs((noisy[..., 2] - 2).std() - 1.0) < 0.05
    assert abs((noisy[..., 2] - 2).mean()) < 0.05
    data, _ = tiny_dataset
    losses = {}
    for name, frac in (("plain", 0.0), ("noisy", 0.2), ("again", 0.2)):
        train(_cfg(data, epochs=2, input_noise_frac=frac), tmp_path / name)
        losses[name] = [r.split(",")[1] for r in (tmp_path / name / "metrics.csv").read_text().splitlines()[1:]]
    assert losses["noisy"] == losses["again"] and losses["noisy"][0] != losses["plain"][0]
    assert all(np.isfinite(float(v)) for v in losses["noisy"])


def test_window_motion_and_motion_weighted_draws_follow_the_formula():
    """Half the windows static, half moving at a constant speed: each moving window's motion is that
    speed exactly, and the moving share of the draws is (1 + lambda) / 2 (p_i of
    animat.surrogate.windows with m = 2 mean(m) on the moving half, 0 on the static half)."""
    from animat.surrogate.windows import WindowSampler, all_windows, window_motion

    k, T, window = 5, 50, 8
    step = np.array([3.0, 4.0, 0, 0, 0]) * 1e-3  # |dz| = 5e-3 per frame
    Z = [np.zeros((T, k)), np.arange(T)[:, None] * step[None]]
    rows = all_windows([T, T], window)
    motion = window_motion(Z, rows, window)
    moving = rows[:, 0] == 1
    assert moving.mean() == 0.5 and np.allclose(motion[moving], 5e-3) and np.all(motion[~moving] == 0)
    for lam in (0.5, 0.9):
        drawn = WindowSampler(rows, motion, lam).draw(np.random.default_rng(1), 40_000)
        assert abs((drawn[:, 0] == 1).mean() - (1 + lam) / 2) < 0.01
    # weighting off: the uniform draw of earlier runs, number for number
    a = WindowSampler(rows).draw(np.random.default_rng(7), 16)
    assert np.array_equal(a, rows[np.random.default_rng(7).integers(0, len(rows), 16)])


def test_spaced_selection_windows_cover_the_episodes_evenly():
    from animat.surrogate.windows import all_windows, spaced_windows

    rows = all_windows([40, 40], 10)  # 31 windows per episode
    assert np.array_equal(spaced_windows([40, 40], 10, 0), rows) and np.array_equal(
        spaced_windows([40, 40], 10, 500), rows
    )
    picked = spaced_windows([40, 40], 10, 7)
    assert len(picked) == 7 and np.array_equal(picked[0], [0, 0]) and np.array_equal(picked[-1], [1, 30])
    assert set(np.diff(picked[:, 0] * 31 + picked[:, 1])) <= {10, 11}  # 61 / 6 = 10.2 apart


def test_alpha_beta_on_still_frames_recovers_the_free_dynamics_under_forcing():
    """The cloth moves freely (known alpha, beta) while the external state is still and is pushed
    while it moves: the 'still' fit recovers alpha and beta, the fit on all frames does not."""
    from animat.surrogate.alpha_beta import fit_alpha_beta
    from animat.surrogate.windows import still_segments

    rng = np.random.default_rng(0)
    alpha, beta = np.array([0.99, 0.95]), np.array([0.9, 0.8])
    Z, Y = [], []
    for _ in range(4):
        y = np.repeat(rng.normal(size=(10, 3)), 30, axis=0)  # holds of 30 frames ...
        y[::30] += 1.0  # ... entered by a one-frame move whose frames push the cloth
        z = [rng.normal(size=2), rng.normal(size=2)]
        for t in range(2, len(y)):
            push = 0.5 * rng.normal(size=2) if np.any(y[t] != y[t - 1]) or np.any(y[t - 1] != y[t - 2]) else 0.0
            z.append(alpha * z[-1] + beta * (z[-1] - z[-2]) + push)
        Z.append(np.array(z))
        Y.append(y)
    pieces = still_segments(Z, Y)
    assert len(pieces) == 4 * 10 and all(len(p) == 29 for p in pieces[1:])
    a, b = fit_alpha_beta(pieces)
    assert np.allclose(a, alpha, atol=1e-5) and np.allclose(b, beta, atol=1e-5)
    a_all, b_all = fit_alpha_beta(Z)
    assert not np.allclose(b_all, beta, atol=1e-2)


def test_split_seed_shuffles_a_partition_and_zero_keeps_the_last_episodes_held_out():
    from animat.surrogate.options import split_episodes

    assert split_episodes(20, 2, 3) == (list(range(15)), [15, 16, 17], [18, 19])
    a = split_episodes(20, 2, 3, seed=1)
    assert a == split_episodes(20, 2, 3, seed=1) != split_episodes(20, 2, 3, seed=2)
    assert sorted(a[0] + a[1] + a[2]) == list(range(20)) and [len(p) for p in a] == [15, 3, 2]


def test_weight_decay_shrinks_parameters_by_lr_times_decay_per_step():
    import jax.numpy as jnp
    import optax

    from animat.surrogate.train import optimizer

    params, zero = {"W": jnp.ones((3, 2))}, {"W": jnp.zeros((3, 2))}
    for decay, factor in ((0.0, 1.0), (2.0, 1 - 1e-2 * 2.0)):
        opt = optimizer(1e-2, decay)
        state, p = opt.init(params), params
        for _ in range(3):  # zero gradients: only the decay moves the weights
            updates, state = opt.update(zero, state, p)
            p = optax.apply_updates(p, updates)
        assert np.allclose(p["W"], factor**3, rtol=1e-6)


@pytest.mark.parametrize(
    "option",
    [
        {"motion_weighting": 1.5},
        {"alpha_beta_frames": "moving"},
        {"val_window": 2},
        {"val_windows": -1},
        {"split_seed": -1},
        {"seed": -1},
        {"weight_decay": -0.1},
        {"input_noise_frac": -0.1},
    ],
)
def test_recipe_options_are_checked(option):
    with pytest.raises(ConfigError, match=next(iter(option))):
        TrainConfig.build(None, **option)


def test_long_window_curriculum_changes_only_the_last_epochs(tiny_dataset, tmp_path):
    """The same run with and without ``long_window`` for the last of 3 epochs (motion-weighted
    draws): identical until the switch, different after; selection on evenly spaced windows."""
    data, _ = tiny_dataset
    rows = {}
    for name, extra in {"short": {}, "long": {"long_window": 30, "long_epochs": 1}}.items():
        summary = train(
            _cfg(
                data, epochs=3, motion_weighting=0.5, val_windows=5, val_window=40, alpha_beta_frames="still", **extra
            ),
            tmp_path / name,
        )
        rows[name] = [line.split(",")[1] for line in (tmp_path / name / "metrics.csv").read_text().splitlines()[1:]]
    assert rows["short"][:2] == rows["long"][:2] and rows["short"][2] != rows["long"][2]
    assert summary["select_windows"] == 5 and summary["select_window_frames"] == 40
    # alpha/beta fitted on still frames: evaluate also scores the paper's all-frames alpha/beta
    ev = evaluate(tmp_path / "long", tmp_path / "eval", horizon=30, stride=15, stability_frames=0, reference_frames=0)
    assert ev["segments"] == 3 * len(
        runs.read_json(tmp_path / "long" / "config.json")["test_episode_ids"]
    )  # starts 0, 15, 30 of 60 frames
    assert (
        ev["reference_seconds_per_frame"] == ev["reference_seconds_per_frame_recorded"]
    )  # reference_frames=0: the recorded time
    assert np.isfinite(ev["alpha_beta_all_frames_error_percent_of_size"])
    assert ev["alpha_beta_all_frames_error_percent_of_size"] != ev["alpha_beta_error_percent_of_size"]


def test_settle_probe_matches_the_stability_check_and_selection_prefers_settled_epochs(tiny_dataset, tmp_path):
    """A network-free model: the probe's ratio is stability_check's on the same path (damped: small;
    alpha > 1: large). Training keeps the best validation loss among settled epochs (or all, when none is)."""
    from animat.surrogate.evaluate import stability_check
    from animat.surrogate.scenes import get_scene
    from animat.surrogate.settle import DRIVE_FRAMES, SETTLE_FRAMES, SETTLE_LIMIT, make_probe, probe_inputs

    scene = get_scene("sheet", size=4)
    k = 3
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(3 * scene.n_vertices, k)))[0].T.astype(np.float32)
    pca = PCA(np.zeros(3 * scene.n_vertices, np.float32), basis, np.ones(k, np.float32))
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + 6, k, 4, 2)
    params = {n: jnp.zeros_like(v) if n in ("W1", "b1") else v for n, v in params.items()}
    inputs = probe_inputs(scene, 2)
    for alpha in (0.99, 1.01):
        stats = {
            "alpha": jnp.full(k, alpha),
            "beta": jnp.full(k, 0.5),
            "in_mean": jnp.zeros(2 * k + 6),
            "in_std": jnp.ones(2 * k + 6),
            "out_mean": jnp.zeros(k),
            "out_std": jnp.ones(k),
        }
        z = np.ones(k, np.float32)
        ratios = make_probe(stats, inputs, z, z, scene.fps)(params)
        with np.errstate(over="ignore"):  # alpha > 1 grows without bound
            check = stability_check(
                Surrogate(params, stats, {}),
                pca,
                scene,
                np.stack([pca.decode(z)] * 2),
                np.array([[-1.0] * k, [1.0] * k]),
                DRIVE_FRAMES,
                SETTLE_FRAMES,
                seed=1,
            )
        assert np.isclose(ratios[0], check["settle_speed_ratio"], rtol=1e-3) or not np.isfinite(
            check["settle_speed_ratio"]
        )
        assert (ratios.max() <= SETTLE_LIMIT) == (alpha < 1)

    data, _ = tiny_dataset
    summary = train(_cfg(data, epochs=3, settle_probes=2), tmp_path / "probe")
    lines = (tmp_path / "probe" / "metrics.csv").read_text().splitlines()
    rows = [dict(zip(lines[0].split(","), line.split(","))) for line in lines[1:]]
    key = lambda r: (float(r["settle_probe_ratio"]) > SETTLE_LIMIT, float(r["val_loss_m"]))  # noqa: E731
    assert summary["best_epoch"] == 1 + min(range(3), key=lambda e: key(rows[e]))
