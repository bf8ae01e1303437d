"""evaluate's headline figures against a hand computation on a tiny dataset whose cloth is not 1 m wide."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from animat import runs
from animat.surrogate.data import generate, load_dataset
from animat.surrogate.evaluate import evaluate
from animat.surrogate.model import Surrogate, alpha_beta_rollout, external_input, rollout
from animat.surrogate.subspace import PCA
from animat.surrogate.train import TrainConfig, train

SIDE_M = 0.4  # a cloth side other than 1 m: a figure not divided by the side (or divided twice) shows


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("small-sheet")
    generate("sheet", 4, 50, 0, root / "data", scene_options={"size": 5, "side_m": SIDE_M, "ball_radius_m": 0.05})
    cfg = TrainConfig.build(
        None,
        data=str(root / "data"),
        components=6,
        epochs=2,
        batches_per_epoch=3,
        layers=3,
        window=10,
        test_episodes=1,
        checkpoint_every=1,
    )
    train(cfg, root / "model")
    summary = evaluate(
        root / "model",
        root / "eval",
        horizon=20,
        stride=10,
        stability_frames=200,
        settle_frames=120,
        reference_frames=0,
        rest_seconds=0,
        timing_repeats=1,
    )
    return root, summary


def test_headline_errors_are_the_mean_vertex_distance_in_percent_of_the_side(evaluated):
    """For every held-out 20-frame segment (starts 0, 10, 20, 30 of 50 frames) both models start from the
    encoded reference frames s, s+1 and roll on their own; error = mean over frames and vertices of
    |x - x_ref|, averaged over segments, x 100 / side. The PCA floor decodes the encoded reference itself."""
    root, ev = evaluated
    ds = load_dataset(root / "data")
    assert ds.side_m == SIDE_M
    pca = PCA.load(root / "model" / "pca.npz")
    model = Surrogate.load(root / "model" / "checkpoints")
    held_out = runs.read_json(root / "model" / "config.json")["test_episode_ids"]
    errors = {"surrogate": [], "alpha_beta": [], "pca_floor": []}
    for i in held_out:
        X, Z, W = ds.X[i].astype(np.float64), pca.encode(ds.X[i]), external_input(ds.Y[i], "sheet")
        for s in (0, 10, 20, 30):
            z0, z1 = jnp.asarray(Z[s]), jnp.asarray(Z[s + 1])
            runs_ = {
                "surrogate": np.asarray(rollout(model.params, model.stats, z0, z1, jnp.asarray(W[s + 2 : s + 20]))),
                "alpha_beta": np.asarray(alpha_beta_rollout(model.stats, z0, z1, 18)),
            }
            for name, Zp in runs_.items():
                decoded = pca.decode(np.concatenate([Z[s : s + 2], Zp]))
                errors[name].append(np.linalg.norm(decoded - X[s : s + 20], axis=-1).mean())
            errors["pca_floor"].append(np.linalg.norm(pca.decode(Z[s : s + 20]) - X[s : s + 20], axis=-1).mean())
    assert ev["segments"] == 4 * len(held_out) and ev["horizon_frames"] == 20 and ev["stride_frames"] == 10
    for name, values in errors.items():
        assert ev[f"{name}_error_percent_of_size"] == pytest.approx(100 * np.mean(values) / SIDE_M, rel=1e-4), name
    assert ev["surrogate_below_alpha_beta_percent"] == pytest.approx(
        100 * (1 - ev["surrogate_error_percent_of_size"] / ev["alpha_beta_error_percent_of_size"])
    )
    # metrics.csv: the per-frame curves average to the headline figures; frames 0 and 1 are the given starts
    rows = runs.read_csv(root / "eval" / "metrics.csv")
    assert len(rows) == 20
    for name in errors:
        curve = np.array([float(r[f"{name}_error_percent"]) for r in rows])
        assert curve.mean() == pytest.approx(ev[f"{name}_error_percent_of_size"], rel=1e-4), name
    for t in (0, 1):  # the given starts are the encoded reference frames: the PCA floor's error there
        floor = float(rows[t]["pca_floor_error_percent"])
        assert (
            float(rows[t]["surrogate_error_percent"])
            == pytest.approx(floor)
            == float(rows[t]["alpha_beta_error_percent"])
        )


def test_stability_verdict_is_its_three_conditions(evaluated):
    """``stable``: every frame finite, the range ratio <= 1.5 and the settle ratio <= 0.1, as reported."""
    _, ev = evaluated
    assert ev["stability_frames"] == 200 and ev["settle_frames"] == 120
    expected = ev["stability_finite"] and ev["stability_max_range_ratio"] <= 1.5 and ev["settle_speed_ratio"] <= 0.1
    assert ev["stable"] is bool(expected)
    assert ev["speedup_vs_reference"] == pytest.approx(
        ev["reference_seconds_per_frame"] / min(ev[f"runtime_{b}_seconds_per_frame"] for b in ("numba", "numpy", "jax"))
    )


def test_the_report_rebuilt_later_from_the_evaluate_run_alone_has_its_replay(evaluated):
    """``animat report EVAL_DIR`` has no scene object in memory: the cloth scene comes from the model that
    the evaluate run's config.json names (once broken by a stale import, which the page only warned about)."""
    import warnings

    from animat import systems
    from animat.viz.report import build_scene

    root, _ = evaluated
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene, system = build_scene(root / "eval", systems.scene_builders())
    assert system == "surrogate" and scene is not None
