"""Held-out rollouts: surrogate vs alpha/beta-only vs the PCA floor; normals, size, speed, stability.
(The garment scenes' ``evaluate --clip``, the character on one motion clip against the reference simulated on it:
:mod:`animat.surrogate.character_clip`.)

For every held-out episode and every start ``s = 0, stride, 2*stride, ...`` with a full
``horizon``-frame segment (default every 30 frames: overlapping segments, so that the starts cover
the episodes' phases; starting only at 0, horizon, ... would start half of the 300-frame episodes'
segments from the same cloth at rest after the warm-up), both models start from the reference's two first frames
(encoded) and roll forward on their own predictions for ``horizon`` frames, driven by the reference's external state.
Where the scene has collision proxies, the surrogate is also scored after its decoded vertices are projected out of them
(``surrogate_projected``, see ``animat.surrogate.collision``). Error = mean over vertices and frames of the Euclidean
distance to the *reference* positions, as a percentage of the cloth's side length. The PCA floor is the same error for
the reference encoded and decoded (what a perfect subspace model would score).

Normals: angle between the regressed normals (from the encoded held-out frames) and the exact
area-weighted normals of the reference mesh. Model size: network + statistics + basis + normals
regression, float32.

Stability: the surrogate alone is rolled ``stability_frames`` (10 000) frames from a held-out start,
driven by a fresh random input path of the scene, then ``settle_frames`` more with the external
state stopped (``scene.stopped``: the sphere or torso held where it is, the wind zero).
Reported: whether every frame is finite; the largest |z_j - c_j| / h_j over frames and components,
where c_j and h_j are the centre and half-width of component j's range over the training frames (the
subspace coefficients: a flag's azimuth, ``cloth_frame = "azimuth"``, is an angle that may turn on) (acceptance: <= 1.5;
the component and, for scale, the same ratio of the reference's own held-out episodes are reported too); and the mean
vertex speed over the last second of the settling phase divided by the mean speed while driven (the cloth settles toward
rest when this is small; acceptance used here: <= 0.1). Beside it, the same ratio for alpha/beta alone continued from
the surrogate's last two driven states, and the largest spectral radius of the alpha/beta recurrence
(:func:`max_spectral_radius`): they tell whether the baseline itself is under-damped or the network adds energy (a
flag's azimuth has alpha = 1, a root of 1: no direction pulls it back, only its turning rate decays).

Coming to rest, in absolute terms (:func:`rest_check`): from the middle frame of up to 30 held-out
episodes the external objects stop and the surrogate runs ``rest_seconds`` (20 s) alone; reported
are the median and largest mean vertex speed over the last second (mm/s). The settle ratio above is
relative to the driven speed and misses a slow creep along a continuum of rest states (a flag in its
own frame turning about its pole at 1-2 deg/s has a ratio of 0.004). The references, restarted from
held-out states: the flag 0.000 mm/s after 20 s, the cape 0.04 (median of 10 states).

Models whose alpha/beta were fitted on still frames only (``alpha_beta_frames = "still"``) are also
compared with alpha/beta fitted on every training frame, the paper's baseline
(``alpha_beta_all_frames_error_percent_of_size``).

Timing: the per-frame runtime (:mod:`animat.surrogate.runtime`: step + decompression + normals +
collision projection), numba, NumPy and jitted JAX, best of ``timing_repeats`` passes over ``horizon``
frames, against the reference simulation's seconds per frame (all substeps) timed in the same run
(``reference_frames`` frames, :func:`time_reference`; 0: the time recorded in the dataset, which
depends on the machine's load while it was generated, is used instead; it is reported either way).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from threadpoolctl import threadpool_limits

from animat import runs
from animat.errors import ConfigError
from animat.surrogate.alpha_beta import fit_alpha_beta
from animat.surrogate.collision import project
from animat.surrogate.data import check_dataset, dataset_stats, load_dataset
from animat.surrogate.divergence import STRIDE, segment_starts
from animat.surrogate.model import Surrogate, alpha_beta_rollout, external_input, rollout
from animat.surrogate.normals import load_regression, reduced_rank
from animat.surrogate.options import load_run_config
from animat.surrogate.rest import rest_speeds, stopped_input
from animat.surrogate.runtime import BLAS_THREADS, Runtime, resolve_normals_rank
from animat.surrogate.scenes import scene_from_dict
from animat.surrogate.settle import drive_then_stop, settle_ratio
from animat.surrogate.subspace import PCA, range_ratios
from animat.surrogate.train import model_megabytes, normals_error_degrees


def check_options(
    horizon: int, stride: int, stability_frames: int, settle_frames: int, reference_frames: int, rest_seconds: float
) -> None:
    """ConfigError for :func:`evaluate`'s numeric options out of range (the CLI calls it before it makes the run
    directory)."""
    if int(horizon) < 3 or int(stride) < 1:
        raise ConfigError(f"horizon must be >= 3 frames and stride >= 1, got {horizon} and {stride}")
    if int(stability_frames) < 0 or 0 < int(stability_frames) < 4:
        raise ConfigError(f"stability_frames must be 0 (skip) or >= 4, got {stability_frames}")
    if int(settle_frames) < 0 or int(reference_frames) < 0 or not 0 <= float(rest_seconds) < math.inf:
        raise ConfigError(
            f"settle_frames, reference_frames and rest_seconds must be >= 0 (and finite), got {settle_frames}, "
            f"{reference_frames} and {rest_seconds}"
        )


def check_inputs(model_dir: str | Path, data: str | None, scene: str | None) -> None:
    """One-line errors for a model directory that is missing or not of ``animat surrogate train`` on ``scene``,
    and for a dataset (``data``, else the one the model was trained on) that is missing or of another scene:
    cheap (config files only), for a command to call before it makes its run directory."""
    train_cfg = load_run_config(model_dir, scene)
    check_dataset(data or train_cfg["data"], scene)


def evaluate(
    model_dir: str | Path,
    run_dir: str | Path,
    *,
    data: str | None = None,
    horizon: int = 120,
    stride: int = STRIDE,
    scene: str | None = None,
    timing_repeats: int = 5,
    stability_frames: int = 10_000,
    settle_frames: int = 600,
    video: bool = False,
    reference_frames: int = 60,
    rest_seconds: float = 20.0,
) -> dict:
    """The trained surrogate in ``model_dir`` on the held-out episodes of ``data`` (else its training dataset), into
    ``run_dir`` (see the module docstring; ``video``: the rollout GIF); returns the summary."""
    model_dir, run_dir = Path(model_dir), Path(run_dir)
    check_options(horizon, stride, stability_frames, settle_frames, reference_frames, rest_seconds)
    train_cfg, surrogate, pca, normals = _load_model(model_dir)
    data = data or train_cfg["data"]
    ds = load_dataset(data, scene)
    sc = scene_from_dict(ds.meta["scene"])
    test_ids = _held_out_ids(train_cfg, ds, data)
    errs, per_frame, per_segment, has_proxies = _held_out_rollouts(surrogate, pca, ds, sc, test_ids, horizon, stride)
    side, segments = ds.side_m, len(per_segment)
    if segments == 0:
        raise ConfigError(f"no held-out episode has {horizon} frames; lower --horizon or generate longer episodes")
    speed = _speed_figures(model_dir, pca, ds, sc, test_ids[0], horizon, timing_repeats, data, reference_frames)
    Xref, Yseg, shown = _first_segment(ds, per_segment[0], horizon)  # the video and the report's replay show it
    if video:  # side by side, with the error colour map
        _rollout_gif(run_dir / "media" / "rollout.gif", Xref, shown, Yseg, ds.topology["triangles"], sc)
    train_eps = [pca.encode(ds.X[i]) for i in train_cfg["train_episode_ids"] if i < len(ds.X)]
    all_frames = _all_frames_error(train_cfg, train_eps, pca, ds, test_ids, horizon, stride)
    long_runs = _long_run_checks(
        surrogate, pca, sc, ds, test_ids, np.concatenate(train_eps), stability_frames, settle_frames, rest_seconds
    )
    _write_error_curves(run_dir, per_frame, side, ds.meta["scene"]["fps"], segments)
    summary = {
        "scene": sc.name,
        "segments": segments,
        "horizon_frames": int(horizon),
        "stride_frames": int(stride),
        **_error_figures(errs, side, has_proxies, all_frames),
        **_normals_figures(normals, pca, np.concatenate([ds.X[i] for i in test_ids]), ds.topology["triangles"]),
        "model_megabytes": model_megabytes(surrogate, pca, normals),
        **speed,
        **long_runs,
        "components": int(pca.n_components),
        "model": str(model_dir),
        "data": str(data),
        "jax_backend": jax.default_backend(),
    }
    record = {"model": str(model_dir), "data": str(data), "horizon": int(horizon), "stride": int(stride)}
    record.update(stability_frames=int(stability_frames), settle_frames=int(settle_frames))
    runs.atomic_write_json(run_dir / "config.json", {**record, "rest_seconds": float(rest_seconds)})
    runs.atomic_write_json(run_dir / "summary.json", summary)
    _write_replay(run_dir, Xref, shown, Yseg, ds.topology["triangles"], sc)
    return summary


def _load_model(model_dir: Path):
    """``(config, surrogate, pca, normals)`` of the trained run in ``model_dir``: its config.json, network
    (checkpoints/), subspace (pca.npz) and normal regression."""
    train_cfg = load_run_config(model_dir)
    surrogate = Surrogate.load(model_dir / "checkpoints")
    pca = PCA.load(model_dir / "pca.npz")
    return train_cfg, surrogate, pca, load_regression(model_dir)


def _speed_figures(model_dir, pca, ds, sc, episode: int, horizon: int, repeats: int, data, reference_frames: int):
    """The runtime's timings (:func:`time_runtime` on held-out ``episode``) and the reference's seconds a frame:
    timed over ``reference_frames`` (0: the dataset's recorded time), and recorded; the speed-up over the fastest
    runtime."""
    timing = time_runtime(model_dir, pca, ds, episode, horizon, repeats)
    recorded_spf = dataset_stats(data)["reference_seconds_per_frame"]
    reference_spf = time_reference(sc, reference_frames) if reference_frames else recorded_spf
    return {
        **timing,
        "reference_seconds_per_frame": float(reference_spf),
        "reference_seconds_per_frame_recorded": float(recorded_spf),
        "speedup_vs_reference": float(reference_spf / min(timing.values())),
    }


def _all_frames_error(train_cfg: dict, train_eps: list, pca, ds, test_ids, horizon: int, stride: int):
    """For a model whose alpha/beta was fitted on the still frames only: the held-out error of alpha/beta fitted on
    every frame (:func:`all_frames_alpha_beta`), for comparison; else None."""
    if train_cfg.get("alpha_beta_frames", "all") == "all":
        return None
    return all_frames_alpha_beta(train_eps, pca, ds, test_ids, horizon, stride)


def _normals_figures(normals: np.ndarray, pca, held: np.ndarray, triangles: np.ndarray) -> dict:
    """The normal regression's angle errors on the ``held`` out frames (frames, V, 3): the training's measure
    (:func:`~animat.surrogate.train.normals_error_degrees`) and the runtime's (:func:`runtime_normals_error`)."""
    return {
        **normals_error_degrees(normals, pca, held, triangles),
        **runtime_normals_error(normals, pca, held, triangles),
    }


def _first_segment(ds, first: dict, horizon: int):
    """``(reference, external states, surrogate)`` of held-out segment ``first``: vertices (horizon, V, 3) (the
    surrogate's projected out of the proxies where it was), Y (horizon, y_dim)."""
    frames = slice(first["start"], first["start"] + horizon)
    Xref, Yseg = ds.X[first["episode"]][frames], ds.Y[first["episode"]][frames]
    return Xref, Yseg, first.get("surrogate_projected", first["surrogate"])


def _rollout_gif(gif: Path, Xref: np.ndarray, shown: np.ndarray, Y: np.ndarray, triangles: np.ndarray, sc) -> None:
    """``gif``: the reference ``Xref`` and the surrogate's ``shown`` (frames, V, 3) side by side under external
    states ``Y``, coloured by their distance (m)."""
    from animat.surrogate.video import side_by_side_gif

    error = np.linalg.norm(shown - Xref, axis=-1)
    side_by_side_gif({"reference": Xref, "surrogate": shown}, triangles, Y, gif, scene=sc, error=error)


def _write_replay(run_dir: Path, Xref: np.ndarray, shown: np.ndarray, Y: np.ndarray, triangles: np.ndarray, sc):
    """``trajectory.npz`` (the first held-out segment: reference and surrogate (frames, V, 3) as float16, Y and
    the triangles) and the report that replays it."""
    from animat.surrogate.report import write_surrogate_report

    runs.atomic_save_npz(
        run_dir / "trajectory.npz",
        reference=Xref.astype(np.float16),
        learned=shown.astype(np.float16),
        Y=Y,
        triangles=triangles,
    )
    write_surrogate_report(run_dir, cloth_scene=sc)


def _long_run_checks(surrogate, pca, sc, ds, test_ids, train_Z, stability_frames, settle_frames, rest_seconds) -> dict:
    """The summary's long-run figures: the stability run (``stability_frames``, 0: none), the settling in still air
    (``rest_seconds``, 0: none), and how far the reference's own held-out episodes leave the training range
    (``reference_held_out_range_ratio``, against the training frames' subspace coefficients ``train_Z``)."""
    stability = (
        stability_check(surrogate, pca, sc, ds.X[test_ids[-1]][:2], train_Z, stability_frames, settle_frames)
        if stability_frames
        else {}
    )
    at_rest = rest_check(surrogate, pca, sc, ds, test_ids, rest_seconds) if rest_seconds else {}
    # the same ratio for the reference's own held-out episodes: how far the scene itself leaves the training range
    reference_ratio = max(
        float(range_ratios(pca.coefficients(pca.encode(ds.X[i])), pca.coefficients(train_Z)).max()) for i in test_ids
    )
    return {**stability, **at_rest, "reference_held_out_range_ratio": reference_ratio}


def _write_error_curves(run_dir: Path, per_frame: dict[str, list], side: float, fps: float, segments: int) -> None:
    """``metrics.csv`` (per frame of the horizon: each name's mean error over the segments, % of the cloth's size
    ``side`` m) and ``plots/rollout_error.png``."""
    from animat.viz.plots import series_plot

    curves = {name: np.mean(np.stack(v), axis=0) * 100 / side for name, v in per_frame.items()}
    horizon = len(next(iter(curves.values())))
    rows = [
        {"frame": t, **{f"{name}_error_percent": float(curves[name][t]) for name in curves}} for t in range(horizon)
    ]
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
    series_plot(
        np.arange(horizon) / fps,
        {k.replace("_", " "): v for k, v in curves.items()},
        run_dir / "plots" / "rollout_error.png",
        ylabel="mean vertex error (% of cloth size)",
        title=f"held-out {horizon}-frame rollouts ({segments} segments)",
    )


def _error_figures(errs: dict[str, list], side: float, has_proxies: bool, all_frames: float | None) -> dict:
    """The summary's rollout errors (% of the cloth's size ``side`` m): the surrogate's (projected too, with proxies),
    α/β's (and its all-frames variant when given), the PCA floor's, and how far the surrogate is below α/β."""
    pct = {name: float(np.mean(v) * 100 / side) for name, v in errs.items()}
    surrogate_err, alpha_beta_err = pct["surrogate"], pct["alpha_beta"]
    figures = {"surrogate_error_percent_of_size": surrogate_err}
    if has_proxies:
        figures["surrogate_projected_error_percent_of_size"] = pct["surrogate_projected"]
    figures.update(
        alpha_beta_error_percent_of_size=alpha_beta_err,
        surrogate_below_alpha_beta_percent=100 * (1 - surrogate_err / alpha_beta_err),
        pca_floor_error_percent_of_size=pct["pca_floor"],
    )
    if all_frames is not None:
        figures.update(
            alpha_beta_all_frames_error_percent_of_size=all_frames,
            surrogate_below_alpha_beta_all_frames_percent=100 * (1 - surrogate_err / all_frames),
        )
    return figures


def _held_out_ids(train_cfg: dict, ds, data) -> list[int]:
    """The model's held-out episodes present in dataset ``ds``; ConfigError when a rollout cannot start in one,
    or the dataset lacks the model's held-out or training episodes."""
    test_ids = [i for i in train_cfg["test_episode_ids"] if i < len(ds.X)]
    short = [i for i in test_ids if len(ds.X[i]) < 3]
    if short:
        raise ConfigError(
            f"held-out episode(s) {short} of {str(data)!r} kept fewer than 3 frames (the reference misbehaved early); "
            f"they cannot start a rollout"
        )
    if not test_ids or not any(i < len(ds.X) for i in train_cfg.get("train_episode_ids", [])):
        raise ConfigError(
            f"{str(data)!r} ({len(ds.X)} episodes) lacks the model's held-out or training episodes "
            f"(held out: {train_cfg['test_episode_ids'][0]}-{train_cfg['test_episode_ids'][-1]})"
        )
    return test_ids


def _held_out_rollouts(surrogate: Surrogate, pca: PCA, ds, sc, test_ids: list[int], horizon: int, stride: int):
    """Every ``horizon``-frame segment of the held-out episodes (starts ``stride`` apart) rolled out by the surrogate
    and by α/β from the reference's first two frames, beside the PCA floor (and the surrogate projected out of the
    scene's proxies, where it has any). Returns ``(errs, per_frame, per_segment, has_proxies)``: per name, each
    segment's mean vertex error (m) and its per-frame curve (horizon,) m; each segment's positions (T, V, 3) m."""
    params, stats = surrogate.params, surrogate.stats

    @jax.jit
    def run_both(z0, z1, Wseg):
        Zs = rollout(params, stats, z0, z1, Wseg)
        Za = alpha_beta_rollout(stats, z0, z1, Wseg.shape[0])
        return Zs, Za

    errs: dict[str, list] = {}
    per_frame: dict[str, list] = {}
    per_segment: list[dict] = []
    has_proxies = sum(len(p) for p in sc.proxies(ds.Y[test_ids[0]][0])) > 0
    for i in test_ids:
        X, W = ds.X[i], external_input(ds.Y[i], sc.name)
        Z = pca.encode(X)
        for s in segment_starts(len(X), horizon, stride):
            Xr = X[s : s + horizon]
            Zs, Za = run_both(jnp.asarray(Z[s]), jnp.asarray(Z[s + 1]), jnp.asarray(W[s + 2 : s + horizon]))
            preds = {
                "surrogate": np.concatenate([Z[s : s + 2], np.asarray(Zs)]),
                "alpha_beta": np.concatenate([Z[s : s + 2], np.asarray(Za)]),
                "pca_floor": Z[s : s + horizon],
            }
            positions = {name: pca.decode(Zp) for name, Zp in preds.items()}
            if has_proxies:
                positions["surrogate_projected"] = np.stack(
                    [project(x, *sc.proxies(y)) for x, y in zip(positions["surrogate"], ds.Y[i][s : s + horizon])]
                )
            per_segment.append({"episode": i, "start": s, **positions})
            for name, Xp in positions.items():
                e = np.linalg.norm(Xp - Xr, axis=-1).mean(axis=1)  # (horizon,) m
                e = np.where(np.isfinite(e), e, np.inf)
                per_frame.setdefault(name, []).append(e)
                errs.setdefault(name, []).append(float(e.mean()))
    return errs, per_frame, per_segment, has_proxies


def all_frames_alpha_beta(
    train_eps: list[np.ndarray], pca: PCA, ds, test_ids: list[int], horizon: int, stride: int
) -> float:
    """Held-out error (% of size, the segments of :func:`evaluate`) of alpha/beta fitted on every
    training frame (the paper's baseline), for a model whose alpha/beta were fitted on still frames."""
    alpha, beta = fit_alpha_beta(train_eps)
    stats = {"alpha": jnp.asarray(alpha), "beta": jnp.asarray(beta)}
    errs = []
    for i in test_ids:
        Z = pca.encode(ds.X[i])
        for s in segment_starts(len(Z), horizon, stride):
            Za = np.concatenate(
                [
                    Z[s : s + 2],
                    np.asarray(alpha_beta_rollout(stats, jnp.asarray(Z[s]), jnp.asarray(Z[s + 1]), horizon - 2)),
                ]
            )
            errs.append(float(np.linalg.norm(pca.decode(Za) - ds.X[i][s : s + horizon], axis=-1).mean()))
    return float(np.mean(errs) * 100 / ds.side_m)


def runtime_normals_error(normals: np.ndarray, pca: PCA, X: np.ndarray, triangles: np.ndarray) -> dict:
    """The normals error of the regression the runtime uses (its default reduced rank, see
    :func:`animat.surrogate.runtime.resolve_normals_rank`) on frames X (T, V, 3)."""
    rank = resolve_normals_rank(None, pca.n_components)
    low = normals_error_degrees(reduced_rank(normals, pca.singular_values, rank), pca, X, triangles)
    return {"normals_runtime_rank": rank, **{k.replace("normals_", "normals_runtime_"): v for k, v in low.items()}}


def time_runtime(model_dir: Path, pca: PCA, ds, episode: int, frames: int, repeats: int) -> dict:
    """Best-of-``repeats`` seconds per frame of :class:`Runtime` (numba, NumPy and JAX) over ``frames``
    frames of held-out episode ``episode`` (the inputs are precomputed, as a game's would be), with
    one BLAS thread as in ``animat surrogate play``."""
    out = {}
    Y = ds.Y[episode][:frames]
    pca_z = pca.encode(ds.X[episode][:2])
    for backend in ("numba", "numpy", "jax"):
        rt = Runtime.load(model_dir, backend)
        W = external_input(Y, rt.scene.name)
        best = np.inf
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            for _ in range(max(1, int(repeats)) + 1):  # the first pass compiles (JAX)
                z0, z1 = pca_z[0], pca_z[1]
                t0 = time.perf_counter()
                for t in range(2, len(Y)):
                    z, X, N = rt.frame(z0, z1, W[t], Y[t])
                    z0, z1 = z1, z
                np.asarray(X)  # wait for the last frame
                best = min(best, (time.perf_counter() - t0) / max(1, len(Y) - 2))
        out[f"runtime_{backend}_seconds_per_frame"] = float(best)
    return out


def time_reference(scene, frames: int, seed: int = 0) -> float:
    """Seconds per frame of the reference simulation (the scene at its dataset's settings) over
    ``frames`` frames after a 5-frame warm-up, timed now, beside the surrogate's timing: the time
    recorded while the data was generated depends on the load of the machine then."""
    return float(replace(scene, warmup_frames=5).simulate(int(frames), seed)["seconds_per_frame"])


def max_spectral_radius(alpha: np.ndarray, beta: np.ndarray) -> float:
    """Largest |root| over components of z^2 - (alpha + beta) z + beta = 0, the characteristic
    equation of the alpha/beta recurrence: free motion decays by this factor per frame (> 1 grows)."""
    a, b = np.asarray(alpha, np.complex128), np.asarray(beta, np.complex128)
    disc = np.sqrt((a + b) ** 2 - 4 * b)
    return float(np.max(np.abs(np.stack([(a + b + disc) / 2, (a + b - disc) / 2]))))


def rest_check(
    surrogate: Surrogate, pca: PCA, scene, ds, test_ids: list[int], seconds: float, states: int = 30
) -> dict:
    """Still air for long: from the middle frame of up to ``states`` held-out episodes the external
    objects stop (``scene.stopped``) and the surrogate runs ``seconds`` on alone; the mean vertex
    speed over the last second, median and largest over the starts (mm/s). The reference comes to
    rest (see the module docstring); a model whose rest states are a
    continuum (a flag's azimuth) can creep along it although the ratio of :func:`stability_check` is small."""
    starts = []
    for i in test_ids[: int(states)]:
        s = len(ds.X[i]) // 2
        starts.append((*pca.encode(ds.X[i][s - 1 : s + 1]), stopped_input(scene, ds.Y[i][s])))
    z0, z1, w = (np.stack(a) for a in zip(*starts))
    frames = max(int(round(float(seconds) * scene.fps)), scene.fps + 1)
    speed = rest_speeds(surrogate.params, surrogate.stats, pca, z0, z1, w, frames, scene.fps) * 1e3
    finite = np.isfinite(speed)
    return {
        "rest_seconds": float(seconds),
        "rest_states": len(starts),
        "rest_speed_median_mm_s": float(np.median(speed)) if finite.all() else float("inf"),
        "rest_speed_max_mm_s": float(speed.max()) if finite.all() else float("inf"),
    }


def stability_check(
    surrogate: Surrogate,
    pca: PCA,
    scene,
    start: np.ndarray,
    train_Z: np.ndarray,
    frames: int,
    settle_frames: int = 600,
    seed: int = 12345,
) -> dict:
    """Long free rollout then settling (see the module docstring); returns flat summary keys.
    start: (2, V, 3) the two first frames; train_Z (N, k) training subspace states."""
    W = drive_then_stop(scene, frames, settle_frames, seed)
    Z = pca.encode(start)
    params, stats = surrogate.params, surrogate.stats
    Zr = np.asarray(
        jax.jit(lambda a, b, w: rollout(params, stats, a, b, w))(
            jnp.asarray(Z[0]), jnp.asarray(Z[1]), jnp.asarray(W[2:])
        )
    )
    finite = bool(np.isfinite(Zr).all())
    ratios = range_ratios(pca.coefficients(Zr), pca.coefficients(train_Z)) if finite else None
    range_ratio = float(ratios.max()) if finite else float("inf")
    settle = alpha_beta_settle = float("nan")
    if finite and settle_frames:  # |dz| = |dx| (orthonormal basis): the ratio of RMS vertex speeds
        last = max(1, min(int(scene.fps), int(settle_frames)))
        settle = float(settle_ratio(Zr, frames, last))
        # alpha/beta alone from the surrogate's last two driven states: is the baseline itself under-damped?
        Za = np.asarray(
            alpha_beta_rollout(
                stats, jnp.asarray(Zr[int(frames) - 4]), jnp.asarray(Zr[int(frames) - 3]), int(settle_frames)
            )
        )
        alpha_beta_settle = float(settle_ratio(np.concatenate([Zr[: int(frames) - 2], Za]), frames, last))
    return {
        "stability_frames": int(frames),
        "settle_frames": int(settle_frames),
        "stability_finite": finite,
        "stability_max_range_ratio": range_ratio,
        "stability_worst_component": int(ratios.max(0).argmax()) if finite else -1,
        "settle_speed_ratio": settle,
        "alpha_beta_settle_speed_ratio": alpha_beta_settle,
        "alpha_beta_max_spectral_radius": max_spectral_radius(np.asarray(stats["alpha"]), np.asarray(stats["beta"])),
        "stable": bool(finite and range_ratio <= 1.5 and (not settle_frames or settle <= 0.1)),
    }
