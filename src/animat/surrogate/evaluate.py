"""Held-out rollouts: surrogate vs alpha/beta-only vs the PCA floor, and per-frame cost.

For every held-out episode and every start ``s = 0, horizon, 2*horizon, ...`` with a full
``horizon``-frame segment, both models start from the reference's two first frames (encoded) and
roll forward on their own predictions for ``horizon`` frames, driven by the reference's sphere.
For the sheet, the surrogate is also scored after its decoded vertices are projected out of the
sphere (``surrogate_projected``, see ``animat.surrogate.collision``).
Error = mean over vertices and frames of the Euclidean distance to the *reference* positions, as
a percentage of the cloth's side length. The PCA floor is the same error for the reference
encoded and decoded (what a perfect subspace model would score).

Stability: the surrogate alone is rolled ``stability_frames`` (10 000) frames from a held-out start,
driven by a fresh random input path of the scene (the sphere's strikes / the wind), with no
reference to compare to; it passes when every frame is finite and no vertex strays further than
the cloth's side length from the mean shape plus the largest offset seen in the data.

Timing: surrogate seconds per frame from a jitted ``horizon``-frame rollout including decoding
to vertex positions (batch of one, CPU/whatever JAX runs on), against the reference's recorded
MuJoCo seconds per frame (all substeps) from the dataset.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.surrogate.collision import project_out_of_sphere
from animat.surrogate.data import dataset_stats, load_dataset
from animat.surrogate.model import Surrogate, alpha_beta_rollout, external_input, rollout
from animat.surrogate.subspace import PCA


def evaluate(model_dir: str | Path, run_dir: str | Path, *, data: Optional[str] = None, horizon: int = 120,
             scene: Optional[str] = None, timing_repeats: int = 5, stability_frames: int = 10_000,
             video: bool = False) -> dict:
    model_dir, run_dir = Path(model_dir), Path(run_dir)
    if int(horizon) < 3:
        raise ConfigError(f"horizon must be >= 3 frames, got {horizon}")
    if not (model_dir / "config.json").is_file():
        raise ConfigError(f"{str(model_dir)!r} holds no config.json; give a run directory of 'animat surrogate train'")
    train_cfg = runs.read_json(model_dir / "config.json")
    surrogate = Surrogate.load(model_dir / "checkpoints")
    pca = PCA.load(model_dir / "pca.npz")
    data = data or train_cfg["data"]
    ds = load_dataset(data, scene)
    test_ids = [i for i in train_cfg["test_episodes"] if i < len(ds.X)]
    params, stats = surrogate.params, surrogate.stats
    components, mean = jnp.asarray(pca.components), jnp.asarray(pca.mean)

    @jax.jit
    def run_both(z0, z1, Wseg):
        Zs = rollout(params, stats, z0, z1, Wseg)
        Za = alpha_beta_rollout(stats, z0, z1, Wseg.shape[0])
        return Zs, Za

    @jax.jit
    def surrogate_positions(z0, z1, Wseg):  # what a game would run per frame: step + decode
        return rollout(params, stats, z0, z1, Wseg) @ components + mean

    side = ds.side_m
    # sheet: vertices left inside the sphere are projected out (radius + the flex's contact radius)
    scene_meta = ds.meta["scene"]
    collide = 0.0
    if scene_meta["name"] == "sheet":
        spacing = float(scene_meta["side_m"]) / (int(scene_meta["size"]) - 1)
        collide = float(scene_meta["ball_radius_m"]) + min(0.005, spacing / 4)
    errs = {"surrogate": [], "alpha_beta": [], "pca_floor": []}
    per_frame = {k: [] for k in errs}
    segments = 0
    per_segment: list[dict] = []
    for i in test_ids:
        X, W = ds.X[i], external_input(ds.Y[i])
        Z = pca.encode(X)
        for s in range(0, len(X) - horizon + 1, horizon):
            Xr = X[s : s + horizon]
            Zs, Za = run_both(jnp.asarray(Z[s]), jnp.asarray(Z[s + 1]), jnp.asarray(W[s + 2 : s + horizon]))
            preds = {
                "surrogate": np.concatenate([Z[s : s + 2], np.asarray(Zs)]),
                "alpha_beta": np.concatenate([Z[s : s + 2], np.asarray(Za)]),
                "pca_floor": Z[s : s + horizon],
            }
            per_segment.append(preds)
            positions = {name: pca.decode(Zp) for name, Zp in preds.items()}
            if collide:
                positions["surrogate_projected"] = project_out_of_sphere(positions["surrogate"], ds.Y[i][s : s + horizon], collide)
            for name, Xp in positions.items():
                e = np.linalg.norm(Xp - Xr, axis=-1).mean(axis=1)  # (horizon,) m
                e = np.where(np.isfinite(e), e, np.inf)
                per_frame.setdefault(name, []).append(e)
                errs.setdefault(name, []).append(float(e.mean()))
            segments += 1
    if segments == 0:
        raise ConfigError(f"no held-out episode has {horizon} frames; lower --horizon or generate longer episodes")

    # timing (after compilation)
    X0, W0 = ds.X[test_ids[0]], external_input(ds.Y[test_ids[0]])
    Z0 = pca.encode(X0[:2])
    Wt = jnp.asarray(np.resize(W0[2:], (horizon - 2, W0.shape[1])))
    args = (jnp.asarray(Z0[0]), jnp.asarray(Z0[1]), Wt)
    surrogate_positions(*args).block_until_ready()
    best = np.inf
    for _ in range(timing_repeats):
        t0 = time.perf_counter()
        surrogate_positions(*args).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    surrogate_spf = best / (horizon - 2)
    reference_spf = dataset_stats(data)["reference_seconds_per_frame"]

    if video:  # the first held-out segment, side by side
        from animat.surrogate.video import side_by_side_gif

        first = test_ids[0]
        panels = {"reference": ds.X[first][:horizon], "surrogate": pca.decode(per_segment[0]["surrogate"]),
                  "alpha/beta": pca.decode(per_segment[0]["alpha_beta"])}
        side_by_side_gif(panels, ds.topology["triangles"], ds.Y[first][:horizon], run_dir / "media" / "rollout.gif",
                         scene=ds.meta["scene"]["name"], ball_radius=float(ds.meta["scene"]["ball_radius_m"]))

    stability = stability_check(surrogate, pca, ds, stability_frames) if stability_frames else {}

    curves = {name: np.mean(np.stack(v), axis=0) * 100 / side for name, v in per_frame.items()}
    rows = [{"frame": t, **{f"{name}_error_percent": float(curves[name][t]) for name in curves}} for t in range(horizon)]
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
    from animat.viz.plots import series_plot

    series_plot(np.arange(horizon) / ds.meta["scene"]["fps"], {k.replace("_", " "): v for k, v in curves.items()},
                run_dir / "plots" / "rollout_error.png", ylabel="mean vertex error (% of cloth size)",
                title=f"held-out {horizon}-frame rollouts ({segments} segments)")
    summary = {
        "segments": segments, "horizon_frames": int(horizon),
        "surrogate_error_percent_of_size": float(np.mean(errs["surrogate"]) * 100 / side),
        **({"surrogate_projected_error_percent_of_size": float(np.mean(errs["surrogate_projected"]) * 100 / side)} if collide else {}),
        "alpha_beta_error_percent_of_size": float(np.mean(errs["alpha_beta"]) * 100 / side),
        "pca_floor_error_percent_of_size": float(np.mean(errs["pca_floor"]) * 100 / side),
        "surrogate_seconds_per_frame": float(surrogate_spf),
        "reference_seconds_per_frame": float(reference_spf),
        "speedup_vs_reference": float(reference_spf / surrogate_spf),
        **stability,
        "components": int(pca.n_components), "model": str(model_dir), "data": str(data), "jax_backend": jax.default_backend(),
    }
    runs.atomic_write_json(run_dir / "config.json", {"model": str(model_dir), "data": str(data), "horizon": int(horizon)})
    runs.atomic_write_json(run_dir / "summary.json", summary)
    return summary


def stability_check(surrogate: Surrogate, pca: PCA, ds, frames: int, seed: int = 12345) -> dict:
    """Long free rollout (see the module docstring); returns flat summary keys."""
    from animat.surrogate.scenes import get_scene

    scene_opts = dict(ds.meta["scene"])
    scene = get_scene(scene_opts.pop("name"), **scene_opts)
    Y = scene.controls(int(frames), np.random.default_rng(seed))[scene.warmup_frames :].astype(np.float32)
    W = external_input(Y)
    Z = pca.encode(ds.X[-1][:2])
    params, stats = surrogate.params, surrogate.stats
    Zr = np.asarray(jax.jit(lambda a, b, w: rollout(params, stats, a, b, w))(jnp.asarray(Z[0]), jnp.asarray(Z[1]), jnp.asarray(W[2:])))
    finite = bool(np.isfinite(Zr).all())
    data_offset = max(float(np.linalg.norm(x - pca.mean.reshape(-1, 3), axis=-1).max()) for x in ds.X)
    if finite:
        # decode in chunks: (frames, V, 3) may be large
        worst = 0.0
        for c in range(0, len(Zr), 1000):
            offset = np.linalg.norm(pca.decode(Zr[c : c + 1000]) - pca.mean.reshape(-1, 3), axis=-1)
            worst = max(worst, float(offset.max()))
    else:
        worst = float("inf")
    side = float(ds.meta["scene"]["side_m"])
    return {
        "stability_frames": int(frames),
        "stability_max_offset_percent_of_size": worst * 100 / side,
        "data_max_offset_percent_of_size": data_offset * 100 / side,
        "stable": bool(finite and worst <= data_offset + side),
    }
