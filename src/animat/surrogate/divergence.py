"""Predictability floor of a reference scene: how far two reference runs drift apart when their
external paths differ by a tiny noise.

Episode ``i`` follows the path of dataset episode ``i`` (drawn from ``SeedSequence([seed, i])``, as
``generate`` does). The reference runs it twice: once as drawn, once with Gaussian noise of std
``eps`` added to every component of the external state on every frame from recorded frame
``s + 2`` on (Y's units: m for the sheet's sphere, m/s for the flag's wind, m and quaternion
components for the cape's torso). ``noise = "white"`` draws it afresh every frame (for a position
such as the sphere's or the torso's this is a jitter of velocity ~ eps x fps: a forcing, not
only a perturbation); ``"offset"`` draws it once per episode and holds it (a single step).

Gap per frame = mean over vertices of the distance between the two runs' recorded positions, as % of the cloth's side
(the error measure of :mod:`animat.surrogate.evaluate`, in its frame: the cape's X is in the torso's frame, so the
cloth's shape relative to the torso is compared, and white noise on the torso moves that frame by about the noise
itself, ~ sqrt(3) eps / side).

* Per frame (``metrics.csv``, the plot): the run perturbed from frame 2 (``s = 0``).
* Evaluate's protocol: for each start ``s = 0, stride, 2 stride, ...`` with a full ``h``-frame
  segment (those of :func:`animat.surrogate.evaluate.evaluate`), a run perturbed from frame ``s + 2``: the two runs
  agree exactly on frames ``s`` and ``s + 1``, as the surrogate starts from the reference's frames
  ``s`` and ``s + 1`` and is driven by the exact external state. The segment's gap is the mean over
  its frames ``s .. s + h - 1``; ``window_gap_percent_of_size`` averages them over segments and
  episodes. It is the reference's own sensitivity over evaluate's horizon: an input error of
  ``eps`` -- or a state error of the same effect, such as a learned model's one-frame error --
  grows to this much, so a surrogate error near it is at the scene's floor of predictability.
* Growth: a least-squares line through ``log2`` of the mean gap over frames, from the first
  non-zero gap up to the first frame where the mean gap reaches half its maximum (before it
  saturates at the size of the motion); ``frames_per_doubling`` = 1 / slope (None: no growth).
  Read it beside the curve: where the cloth only reacts on contact (the sheet), the gap appears
  in a jump at the first touch and then decays (``gap_last_second_percent_of_size``): a damped,
  not a chaotic, scene, and the fit measures the jump.

**State restarts** (``restart``): the second run also restarts, before recorded frame ``s + 1``'s
last substep, from the state a surrogate starts from: the recorded positions of frames ``s`` and
``s + 1`` -- exactly (``"frames"``), or their projection on a PCA subspace (``"subspace"``, e.g. a
trained model's) -- with the velocity their difference x fps (:meth:`SheetScene.simulate`'s
``restart``). The gap then measures how much the scene amplifies what the surrogate's starting
state leaves out: ``"frames"`` leaves out the velocity's change within a frame, ``"subspace"``
also the components beyond ``k``. An input noise of ``eps`` may be added on top (0: none). A
scene that is predictable to input noise can still amplify a state error (the membrane flag,
``elastic2d = "stretch"``, drifts little from a wind noise and much from a restart at its 64-component
projection; the struck, damped sheet's projection error decays: RESULTS.md, 'Measurements behind the code').

For chaotic dynamics the gap grows exponentially (Lorenz 1963, "Deterministic nonperiodic flow",
J. Atmos. Sci. 20: 130-141; the doubling time is ln 2 / the largest Lyapunov exponent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from animat import runs
from animat.config import require
from animat.errors import ConfigError
from animat.parallel import process_map
from animat.surrogate.sheet import SheetScene

STRIDE = 30  # frames between segment starts: evaluate's default
RESTARTS = {
    "none": "the reference's own state",
    "frames": "the recorded positions of frames s and s + 1",
    "subspace": "their projection on the PCA subspace",
}
NOISE_KINDS = {"white": "a fresh draw every frame", "offset": "one draw per episode, held: a step at frame s + 2"}
PERTURB_UNITS = {"sheet": "m (sphere centre)", "flag": "m/s (wind)", "cape": "m and quaternion components (torso)"}


def segment_starts(frames: int, horizon: int, stride: int) -> list[int]:
    """Starts of evaluate's full ``horizon``-frame segments, every ``stride`` frames, in an episode
    of ``frames`` frames."""
    return list(range(0, int(frames) - int(horizon) + 1, int(stride)))


def gap_percent(a: dict, b: dict, side_m: float) -> np.ndarray:
    """(T,) mean vertex distance between the recorded frames X (T, V, 3) m of two runs of
    :meth:`SheetScene.simulate`, over their common frames, as % of ``side_m``."""
    T = min(len(a["X"]), len(b["X"]))
    return np.linalg.norm(a["X"][:T].astype(np.float64) - b["X"][:T], axis=-1).mean(axis=1) * 100.0 / side_m


def restart_state(
    scene: SheetScene, X: np.ndarray, Y: np.ndarray, project: Callable[[np.ndarray], np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Recorded frames ``X`` (2, V, 3) and external states ``Y`` (2, y) of frames s, s + 1 -> the
    world positions (V, 3) m of frame s + 1 and the velocity (V, 3) m/s = their difference x fps,
    after ``project`` (recorded frames -> frames, e.g. a PCA round trip) when given."""
    X = np.asarray(X if project is None else project(X), np.float64)
    x0, x1 = scene.world(X[0], Y[0]), scene.world(X[1], Y[1])
    return x1, (x1 - x0) * float(scene.fps)


def episode_gaps(
    scene: SheetScene,
    frames: int,
    seed: np.random.SeedSequence,
    eps: float,
    *,
    horizon: int = 120,
    stride: int = STRIDE,
    noise: str = "white",
    restart: str = "none",
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    on_run: Callable[[], None] | None = None,
    path: np.ndarray | None = None,
) -> dict:
    """One episode: ``gap`` (frames,) % of the side for the run perturbed from frame 2 (NaN past a
    run's end when the reference misbehaved), ``segments`` (the mean gap of each full segment of
    :func:`segment_starts`) and ``truncated`` (runs that ended early). A segment's run stops at
    the segment's end, the per-frame curve's (``s = 0``) at the episode's. With a ``restart``
    (:data:`RESTARTS`), the perturbed run restarts at frame ``s + 1`` from :func:`restart_state`
    of the first run's frames ``s``, ``s + 1`` (``project`` for ``"subspace"``). The runs agree
    up to that point, so each perturbed run resumes from the first run's snapshot there
    (:meth:`SheetScene.simulate`'s ``resume``) instead of repeating it. ``path``: the episode's external path
    (warm-up + frames rows; a garment's character playing a clip, say) instead of the dataset episode's."""
    rng = np.random.default_rng(seed)
    if path is None:
        path = scene.controls(int(frames), rng)  # the dataset episode's path (drawn first)
    shape = path.shape if noise == "white" else path.shape[1:]  # offset: one draw per component, held
    added = np.broadcast_to(float(eps) * rng.standard_normal(shape), path.shape)  # the same for every start
    starts = sorted({0, *segment_starts(frames, horizon, stride)})
    results = [scene.simulate(int(frames), path=path, snapshots=[s + 1 for s in starts if s + 1 < int(frames)])]
    if on_run:
        on_run()
    gaps = {}
    ref = results[0]
    for s in starts:
        first = scene.warmup_frames + s + 2  # path index of recorded frame s + 2
        end = int(frames) if s == 0 else min(int(frames), s + int(horizon))
        perturbed = path[: scene.warmup_frames + end].copy()
        perturbed[first:] += added[first : len(perturbed)]
        state = None
        if restart != "none" and s + 1 < len(ref["X"]):
            state = (
                s + 1,
                *restart_state(
                    scene, ref["X"][s : s + 2], ref["Y"][s : s + 2], project if restart == "subspace" else None
                ),
            )
        results.append(scene.simulate(end, path=perturbed, restart=state, resume=ref.get("snapshots", {}).get(s + 1)))
        gap = gap_percent(results[0], results[-1], scene.side_m)
        gaps[s] = np.concatenate([gap, np.full(int(frames) - len(gap), np.nan)])
        if on_run:
            on_run()
    segments = [
        float(gaps[s][s : s + horizon].mean())
        for s in segment_starts(frames, horizon, stride)
        if np.isfinite(gaps[s][s : s + horizon]).all()
    ]
    return {"gap": gaps[0], "segments": segments, "truncated": sum(r["dropped"] > 0 for r in results)}


def _episode(scene: SheetScene, frames: int, seed: np.random.SeedSequence, eps: float, options: dict, on_run) -> dict:
    """:func:`episode_gaps` with its keyword options as one dict (a task of :func:`process_map`)."""
    return episode_gaps(scene, frames, seed, eps, on_run=on_run, **options)


def runs_per_episode(frames: int, horizon: int, stride: int) -> int:
    """Reference runs :func:`episode_gaps` makes: the episode, then one per segment start and ``s = 0``."""
    return 1 + len({0, *segment_starts(frames, horizon, stride)})


def mean_gap(gaps: np.ndarray) -> np.ndarray:
    """(frames,) mean over episodes of gaps (episodes, frames), ignoring runs that ended early
    (NaN where every run had ended)."""
    finite = np.isfinite(gaps)
    count = finite.sum(axis=0)
    return np.where(count > 0, np.where(finite, gaps, 0.0).sum(axis=0) / np.maximum(count, 1), np.nan)


def doubling_fit(gap: np.ndarray) -> dict:
    """Log-linear fit of the mean gap's growth (module docstring): ``frames_per_doubling`` (None when
    the gap does not grow) over frames ``fit_first_frame .. fit_last_frame``."""
    gap = np.asarray(gap, np.float64)
    positive = np.flatnonzero(np.isfinite(gap) & (gap > 0))
    if len(positive) < 3:
        return {
            "frames_per_doubling": None,
            "fit_first_frame": None,
            "fit_last_frame": None,
            "fit_gap_percent_at_first_frame": None,
        }
    first = int(positive[0])
    half = 0.5 * np.nanmax(gap)
    last = max(first + 2, int(np.flatnonzero(gap[first:] >= half)[0]) + first)
    t = np.arange(first, last + 1)
    ok = np.isfinite(gap[t]) & (gap[t] > 0)
    slope, intercept = np.polyfit(t[ok], np.log2(gap[t][ok]), 1) if ok.sum() >= 2 else (0.0, np.log2(gap[first]))
    growing = slope > 1e-6  # slower than x2 per million frames: no growth
    return {
        "frames_per_doubling": 1.0 / float(slope) if growing else None,
        "fit_first_frame": first,
        "fit_last_frame": int(last),
        "fit_gap_percent_at_first_frame": float(2.0 ** (intercept + slope * first)),
    }


def check_inputs(
    episodes: int,
    frames: int,
    eps: float,
    seed: int,
    horizon: int,
    stride: int,
    noise: str,
    restart: str = "none",
    project: Callable | None = None,
    workers: int = 1,
) -> None:
    """ConfigError (one line) for a request :func:`divergence` cannot measure."""
    require("workers", workers, ge=1)
    require("restart", restart, choices=RESTARTS)
    if restart == "subspace" and project is None:
        raise ConfigError("restart 'subspace' needs a subspace: give --model (a trained run's pca.npz)")
    require("noise", noise, choices=NOISE_KINDS)
    require("episodes", episodes, gt=0)
    require("frames", frames, gt=0)
    if int(horizon) < 3 or int(stride) < 1:
        raise ConfigError(f"horizon must be >= 3 frames and stride >= 1, got {horizon} and {stride}")
    if int(horizon) > int(frames):
        raise ConfigError(f"episodes of {frames} frames hold no segment of --horizon {horizon} frames")
    if not (np.isfinite(eps) and eps >= 0):
        raise ConfigError(f"the perturbation must be a finite std >= 0, got {eps}")
    require("seed", seed, ge=0)


def divergence(
    scene: SheetScene,
    episodes: int,
    frames: int,
    eps: float,
    *,
    seed: int = 0,
    horizon: int = 120,
    stride: int = STRIDE,
    noise: str = "white",
    restart: str = "none",
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    components: int | None = None,
    episode_ids: Sequence[int] | None = None,
    on_run: Callable[[], None] | None = None,
    workers: int = 1,
    paths: Sequence[np.ndarray] | None = None,
) -> tuple[dict, np.ndarray]:
    """Measure the predictability floor (module docstring) over ``episodes`` episodes of ``frames``
    frames: dataset episodes ``0 .. episodes - 1``, or the first ``episodes`` of ``episode_ids``
    (e.g. a model's held-out ones). Returns the summary dict and the per-frame gaps (episodes,
    frames) % of the side. ``components`` (the subspace's size) is only reported. ``workers`` > 1:
    episodes in that many processes (``project`` must then pickle, e.g. :meth:`PCA.round_trip`);
    ``on_run`` is then called for an episode's runs when the episode is done. ``paths``: the episodes' external paths
    (one each, instead of the dataset's; e.g. :func:`animat.surrogate.character_clip.clip_path`): the summary then
    adds ``gap_mean_percent_of_size``, the mean gap over frames 2.. of the curve (what ``evaluate --clip`` averages)."""
    check_inputs(episodes, frames, eps, seed, horizon, stride, noise, restart, project, workers)
    ids = [int(i) for i in (range(int(episodes)) if episode_ids is None else list(episode_ids)[: int(episodes)])]
    options = dict(horizon=horizon, stride=stride, noise=noise, restart=restart, project=project)
    parallel = int(workers) > 1 and len(ids) > 1
    args = [
        (scene, frames, np.random.SeedSequence([int(seed), i]), eps, options, None if parallel else on_run) for i in ids
    ]
    if paths is not None:
        args = [(*a[:4], {**a[4], "path": p}, a[5]) for a, p in zip(args, paths, strict=True)]
    results: list[dict] = [{}] * len(ids)
    for n, result in process_map(_episode, args, workers):
        results[n] = result
        if parallel and on_run:
            for _ in range(runs_per_episode(frames, horizon, stride)):
                on_run()
    gaps = np.stack([r["gap"] for r in results])
    summary = _summary(scene, ids, results, gaps, eps, noise, restart, components, frames, seed, horizon, stride)
    if paths is not None:
        summary["gap_mean_percent_of_size"] = float(np.nanmean(mean_gap(gaps)[2:]))
    return summary, gaps


def _summary(scene: SheetScene, ids, results, gaps, eps, noise, restart, components, frames, seed, horizon, stride):
    """:func:`divergence`'s summary: its settings (its arguments'), the window gaps and the per-frame gap curve
    (% of the side) of the episodes ``ids``' ``results`` and ``gaps``."""
    mean = mean_gap(gaps)
    segments = [g for r in results for g in r["segments"]]
    return {
        "scene": scene.name,
        "perturb_std": float(eps),
        "perturb_noise": noise,
        "perturb_units": PERTURB_UNITS.get(scene.name, "Y's units"),
        "restart": restart,
        "restart_components": int(components) if restart == "subspace" and components else None,
        "episodes": len(ids),
        "episode_ids": ids,
        "frames": int(frames),
        "seed": int(seed),
        "horizon_frames": int(horizon),
        "stride_frames": int(stride),
        "segments": len(segments),
        "window_gap_percent_of_size": float(np.mean(segments)) if segments else None,
        "window_gap_max_percent_of_size": float(np.max(segments)) if segments else None,
        **{f"gap_percent_at_frame_{t}": float(mean[t]) for t in (10, 30, 60, 120, 240) if t < frames},
        "gap_max_percent_of_size": float(np.nanmax(gaps)) if np.isfinite(gaps).any() else None,
        "gap_last_second_percent_of_size": float(np.nanmean(mean[-int(scene.fps) :]))
        if np.isfinite(mean[-int(scene.fps) :]).any()
        else None,
        **doubling_fit(mean),
        "truncated_runs": int(sum(r["truncated"] for r in results)),
        "scene_options": scene.to_dict(),
    }


def write_run(run_dir, summary: dict, gaps: np.ndarray, fps: int) -> None:
    """``metrics.csv`` (per frame: mean, median and largest gap over episodes, % of the side),
    ``summary.json`` and ``plots/divergence.png`` in ``run_dir``."""
    from pathlib import Path

    run_dir = Path(run_dir)
    mean = mean_gap(gaps)
    finite = np.isfinite(gaps)
    rows = [
        {
            "frame": t,
            "gap_mean_percent": float(mean[t]),
            "gap_median_percent": float(np.median(gaps[finite[:, t], t])) if finite[:, t].any() else float("nan"),
            "gap_max_percent": float(gaps[finite[:, t], t].max()) if finite[:, t].any() else float("nan"),
            "episodes": int(finite[:, t].sum()),
        }
        for t in range(gaps.shape[1])
    ]
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
    runs.atomic_write_json(run_dir / "summary.json", summary)
    from animat.surrogate.report import divergence_plot

    divergence_plot(gaps, mean, summary, fps, run_dir / "plots" / "divergence.png")
