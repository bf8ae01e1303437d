"""A garment scene's character driven by one motion clip (``evaluate --clip``, ``play --clip``), and the
evaluation of a trained garment surrogate on it.

The character stands for the scene's warm-up in its rest pose, then plays the clip from its start (blended in over
the scene's ``blend_seconds``, facing the standing heading, +x; a one-shot clip holds its last pose past its end,
a looping one goes on). Any clip in DeepMimic's humanoid3d format will do (``shared:NAME`` or a file): one that was
not among the scene's training clips is the real test.

:func:`evaluate_clip`: the reference (the scene's MuJoCo flex cloth) is simulated along that path; the surrogate
starts from the reference's first two frames (encoded) and runs alone, one :meth:`Runtime.frame` per frame (the
step, decompression, normals and the projection out of the character's proxies), driven by the character's motion.
Reported (% of the garment's length ``side_m``): the mean vertex error against the reference over the frames it
predicts, after the projection and before it, beside alpha/beta alone and the PCA floor; the fraction of vertices
deeper than ``INSIDE_TOLERANCE_M`` inside the character's own spheres and capsules (not grown by the cloth's
contact radius: the body itself), for the surrogate after and before the projection and for the reference on the
same frames; the runtime's frames per second against the reference's (timed in the same run, all its substeps).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from animat import runs
from animat.character.bones import place_shapes
from animat.character.clip import load_clip, resolve_clip
from animat.character.playback import Segment
from animat.config import require
from animat.errors import ConfigError
from animat.surrogate.collision import INSIDE_TOLERANCE_M, penetration_depth
from animat.surrogate.garment import GARMENT_SCENES
from animat.surrogate.options import CLIP_FRAMES, load_run_config
from animat.surrogate.root_frame import bodies_in_root
from animat.surrogate.runtime import Runtime
from animat.surrogate.scenes import scene_from_dict
from animat.surrogate.subspace import PCA


def check_clip_inputs(model_dir: str | Path, scene: str, clip: str, frames: int):
    """``(training config, scene object, Clip)`` of a ``--clip`` run, every input checked (cheap, before a run
    directory is made): a model of ``scene``, a garment scene, a readable humanoid3d clip, ``frames`` >= 3."""

    check_garment_scene(scene)
    require("--frames", frames, ge=3)
    train_cfg = load_run_config(model_dir, scene)
    return train_cfg, scene_from_dict(train_cfg["scene"]), load_clip(resolve_clip(clip))


def check_garment_scene(scene: str) -> None:
    """ConfigError unless ``scene`` (a name) is a garment scene, the only ones ``--clip`` applies to."""
    if scene not in GARMENT_SCENES:
        raise ConfigError(
            f"--clip drives the character of the garment scenes ({', '.join(GARMENT_SCENES)}), not the {scene!r} scene"
        )


def clip_path(scene, clip, frames: int) -> np.ndarray:
    """(warm-up + frames, 77) the character's ``qpos`` and ``qvel`` per frame: standing, then ``clip`` from its
    start (see the module docstring)."""

    return scene.playback_path([Segment(clip, int(frames) / scene.fps + scene.blend_seconds)], int(frames))


def character_drive(scene, frames: int, *, clip=None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(Y (frames, 105) float32, path (frames, 77))``: the recorded body frames and the character's path rows after
    the warm-up, playing ``clip`` (a :class:`animat.character.clip.Clip`) or, without one, the scene's random chain
    of its training clips drawn from ``seed``."""
    if clip is not None:
        path = clip_path(scene, clip, frames)
    else:
        path = scene.controls(int(frames), np.random.default_rng(seed))
    path = path[scene.warmup_frames :]
    return scene.recorded_states(path), path


def inside_fraction(scene, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(T,) the fraction of the vertices of frames X (T, V, 3) (root frame, m) deeper than ``INSIDE_TOLERANCE_M``
    inside the character's own shapes at body frames Y (T, 105)."""

    out = np.empty(len(X))
    for t, (x, y) in enumerate(zip(X, Y)):
        out[t] = np.mean(penetration_depth(x, *place_shapes(*bodies_in_root(y))) > INSIDE_TOLERANCE_M)
    return out


def surrogate_run(runtime, pca, X0: np.ndarray, W: np.ndarray, Y: np.ndarray) -> dict:
    """The surrogate alone from the two frames X0 (2, V, 3), driven by inputs W (T, w) and body frames Y (T, 105):
    ``projected`` (T, V, 3) (the runtime's output; frames 0, 1 are X0), ``z`` (T, k) and the runtime's ``seconds``
    (T - 2,) per frame (one BLAS thread, as ``play``)."""
    Z = np.empty((len(W), pca.state_dim), np.float32)
    Z[:2] = pca.encode(X0)
    shown = np.empty((len(W), *X0.shape[1:]), np.float32)
    shown[:2] = X0
    seconds = np.empty(max(0, len(W) - 2))
    with threadpool_limits(limits=1, user_api="blas"):
        for t in range(2, len(W)):
            start = time.perf_counter()
            z, x, _ = runtime.frame(Z[t - 2], Z[t - 1], W[t], Y[t])
            x = np.asarray(x)
            seconds[t - 2] = time.perf_counter() - start
            Z[t], shown[t] = z, x
    return {"projected": shown, "z": Z, "seconds": seconds}


def alpha_beta_states(stats: dict, z0: np.ndarray, z1: np.ndarray, frames: int) -> np.ndarray:
    """(frames, k) alpha/beta alone from ``z0``, ``z1``: ``z_t = alpha z_{t-1} + beta (z_{t-1} - z_{t-2})``, the
    first two rows ``z0``, ``z1``."""
    alpha, beta = np.asarray(stats["alpha"], np.float64), np.asarray(stats["beta"], np.float64)
    Z = np.empty((int(frames), len(z0)))
    Z[0], Z[1] = z0, z1
    for t in range(2, int(frames)):
        Z[t] = alpha * Z[t - 1] + beta * (Z[t - 1] - Z[t - 2])
    return Z


def evaluate_clip(
    model_dir: str | Path,
    run_dir: str | Path,
    scene_name: str,
    clip: str,
    *,
    frames: int = CLIP_FRAMES,
    video: bool = True,
) -> dict:
    """The trained garment surrogate in ``model_dir`` against the reference on ``clip`` (``shared:NAME`` or a file)
    for ``frames`` frames, into ``run_dir`` (see the module docstring): config.json, summary.json, metrics.csv (per
    frame), plots/clip_error.png, trajectory.npz, media/clip.gif|mp4 (``video``: reference | surrogate on the
    character) and report.html. Returns the summary."""
    from animat.surrogate.model import external_input
    from animat.surrogate.video import garment_video

    model_dir, run_dir = Path(model_dir), Path(run_dir)
    _, scene, motion = check_clip_inputs(model_dir, scene_name, clip, frames)
    path = clip_path(scene, motion, frames)
    reference = scene.simulate(int(frames), path=path)
    X, Y = reference["X"], reference["Y"]
    if len(X) < 3:
        raise ConfigError(f"the reference misbehaved after {len(X)} frames of clip {clip!r}: nothing to compare with")
    pca, runtime = PCA.load(model_dir / "pca.npz"), Runtime.load(model_dir)
    run = surrogate_run(runtime, pca, X[:2], external_input(Y, scene.name), Y)
    shown = {
        "surrogate_projected": run["projected"],
        "surrogate": pca.decode(run["z"]),
        "alpha_beta": pca.decode(alpha_beta_states(runtime.arrays, run["z"][0], run["z"][1], len(X))),
        "pca_floor": pca.round_trip(X),
    }
    errors = {name: np.linalg.norm(P[2:] - X[2:], axis=-1).mean(axis=1) for name, P in shown.items()}  # (T - 2,) m
    inside = {
        "surrogate_projected": inside_fraction(scene, shown["surrogate_projected"][2:], Y[2:]),
        "surrogate": inside_fraction(scene, shown["surrogate"][2:], Y[2:]),
        "reference": inside_fraction(scene, X[2:], Y[2:]),
    }
    summary = _clip_summary(scene, clip, reference, errors, inside, run, shown["surrogate_projected"])
    summary.update(backend=runtime.backend, components=int(pca.n_components), model=str(model_dir))
    runs.atomic_write_json(run_dir / "config.json", {"model": str(model_dir), "clip": clip, "frames": int(frames)})
    _write_clip_curves(run_dir, errors, inside, run["seconds"], scene)
    character = path[scene.warmup_frames :][: len(X)]
    if video:
        panels = {"reference": X, "surrogate": shown["surrogate_projected"]}
        written = garment_video(scene, panels, Y, character, run_dir / "media" / "clip.gif")
        summary["video"] = str(written[0].relative_to(run_dir)) if written else None
    runs.atomic_write_json(run_dir / "summary.json", summary)
    _write_clip_replay(run_dir, X, shown["surrogate_projected"], Y, character, scene)
    return summary


def _clip_summary(scene, clip: str, reference: dict, errors: dict, inside: dict, run: dict, shown) -> dict:
    """The summary of :func:`evaluate_clip`: errors (% of the garment's ``side_m``), inside fractions, speeds."""

    trained = {resolve_clip(c).resolve() for c in scene.clips}
    pct = {name: float(e.mean() * 100 / scene.side_m) for name, e in errors.items()}
    us = run["seconds"] * 1e6
    surrogate_spf, reference_spf = float(run["seconds"].mean()), float(reference["seconds_per_frame"])
    return {
        "scene": scene.name,
        "clip": clip,
        "clip_in_training": resolve_clip(clip).resolve() in trained,
        "frames": len(reference["X"]),
        "reference_dropped_frames": int(reference["dropped"]),
        "garment_size_m": float(scene.side_m),
        **{f"{name}_error_percent_of_size": v for name, v in pct.items()},
        "surrogate_projected_max_frame_error_percent_of_size": float(errors["surrogate_projected"].max())
        * 100
        / scene.side_m,
        **{f"{name}_inside_fraction": float(v.mean()) for name, v in inside.items()},
        "inside_tolerance_m": INSIDE_TOLERANCE_M,
        "finite": bool(np.isfinite(shown).all()),
        "per_frame_us_mean": float(us.mean()),
        "per_frame_us_median": float(np.median(us)),
        "surrogate_frames_per_second": 1.0 / surrogate_spf,
        "reference_frames_per_second": 1.0 / reference_spf,
        "speedup_vs_reference": reference_spf / surrogate_spf,
        "speedup_vs_reference_median_frame": reference_spf / float(np.median(run["seconds"])),
    }


def _write_clip_curves(run_dir: Path, errors: dict, inside: dict, seconds: np.ndarray, scene) -> None:
    """``metrics.csv`` (per predicted frame: each error, % of size; each inside fraction; the runtime's µs) and
    ``plots/clip_error.png``."""
    from animat.viz.plots import series_plot

    rows = [
        {
            "frame": t + 2,
            **{f"{name}_error_percent": float(e[t] * 100 / scene.side_m) for name, e in errors.items()},
            **{f"{name}_inside_fraction": float(v[t]) for name, v in inside.items()},
            "microseconds": float(seconds[t] * 1e6),
        }
        for t in range(len(seconds))
    ]
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
    series_plot(
        (np.arange(len(seconds)) + 2) / scene.fps,
        {name.replace("_", " "): e * 100 / scene.side_m for name, e in errors.items()},
        run_dir / "plots" / "clip_error.png",
        ylabel="mean vertex error (% of garment size)",
        title=f"{scene.name} on the clip, against the reference",
    )


def _write_clip_replay(run_dir: Path, X, learned, Y, character: np.ndarray, scene) -> None:
    """``trajectory.npz`` (reference and learned garments (T, V, 3) root frame, Y, triangles, the character's
    ``character_path`` (T, 77)) and the report that shows both garments on the character."""
    from animat.surrogate.report import write_surrogate_report

    runs.atomic_save_npz(
        run_dir / "trajectory.npz",
        reference=X.astype(np.float32),
        learned=learned.astype(np.float32),
        Y=Y,
        triangles=scene.topology()["triangles"],
        character_path=character,
    )
    write_surrogate_report(run_dir, cloth_scene=scene)
