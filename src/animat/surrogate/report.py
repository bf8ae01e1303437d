"""The cloth's replay: shaded meshes (with the predicted normals where the run has them) and the proxies of
the external object; ``evaluate``'s reference and learned cloth side by side."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from animat.surrogate.normals import vertex_normals
from animat.surrogate.options import load_run_config
from animat.surrogate.scenes import rest_frame, scene_from_dict
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import read_json_or_none, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, quat_between_z

CLOTH_BYTES = 2_500_000  # stored bytes of cloth a replay keeps at most (frames are thinned to fit)
REFERENCE_RGB = (0.85, 0.55, 0.25)
LEARNED_RGB = (0.25, 0.55, 0.85)
CHARACTER_SHIFT = np.array([0.0, 1.2, 0.0])  # m: where each next garment's character is drawn beside the first


def recognises(run_dir: Path) -> bool:
    keys = trajectory_keys(run_dir)
    return "shown_vertices" in keys or {"reference", "learned"} <= keys


def cloth_stride(frames: int, vertices: int, meshes: int) -> int:
    """Every how many frames to keep so that ``meshes`` cloths of ``vertices`` fit in :data:`CLOTH_BYTES`
    (float16 positions and 1-byte normals: 9 bytes a vertex a frame)."""
    return max(1, -(-frames * vertices * meshes * 9 // CLOTH_BYTES))


def add_proxies(scene: Scene, cloth_scene, Y: np.ndarray, offset=(0.0, 0.0, 0.0)) -> None:
    """The external object's collision proxies at external states ``Y (F, y)``: spheres and capsules, moved by
    ``offset``."""
    shapes = [cloth_scene.proxies(y) for y in Y]
    spheres = np.stack([s for s, _ in shapes]).astype(float)  # (F, S, 4)
    capsules = np.stack([c for _, c in shapes]).astype(float)  # (F, C, 7)
    kinds, sizes, pos, quat = [], [], [], []
    if spheres.shape[1]:
        kinds += ["sphere"] * spheres.shape[1]
        sizes += [[r, r, r] for r in spheres[0, :, 3]]
        pos.append(spheres[..., :3])
        quat.append(np.tile([1.0, 0, 0, 0], spheres.shape[:2] + (1,)))
    if capsules.shape[1]:
        centre, half, q = quat_between_z(capsules[..., :3], capsules[..., 3:6])
        kinds += ["capsule"] * capsules.shape[1]
        sizes += [[r, h, 0.0] for r, h in zip(capsules[0, :, 6], half[0])]
        pos.append(centre)
        quat.append(q)
    if kinds:
        scene.add_prims(
            "proxies",
            kinds,
            sizes,
            np.concatenate(pos, axis=1) + offset,
            np.concatenate(quat, axis=1),
            color=(0.8, 0.25, 0.25),
            opacity=0.45,
        )


def _normals(X: np.ndarray, triangles: np.ndarray, given: np.ndarray | None) -> np.ndarray:

    return given if given is not None else vertex_normals(np.nan_to_num(X), triangles)


def side_by_side(
    cloth_scene,
    reference: np.ndarray,
    learned: np.ndarray,
    Y: np.ndarray,
    triangles: np.ndarray,
    *,
    learned_normals: np.ndarray | None = None,
) -> Scene:
    """Reference and learned cloth ``(T, V, 3)`` m at the scene's frame rate, driven by ``Y (T, y)``, the learned
    one to the right (+x) of the reference, each with its proxies; ``learned_normals (T, V, 3)`` shade the learned
    cloth where given (else both are shaded with the normals of their meshes)."""
    T = min(len(reference), len(learned))
    idx = np.arange(0, T, cloth_stride(T, reference.shape[1], 2))
    ref, lrn = np.asarray(reference, float)[idx], np.asarray(learned, float)[idx]
    width = float(np.ptp(ref[0][:, 0])) if np.isfinite(ref[0]).all() else 1.0
    shift = np.array([1.6 * max(width, 0.2), 0.0, 0.0])
    scene = Scene(idx / float(cloth_scene.fps), view=(0.0, -2.0, 0.6))
    scene.add_mesh(
        "reference", ref, triangles, normals=_normals(ref, triangles, None), color=REFERENCE_RGB, compact=True
    )
    scene.add_mesh(
        "learned",
        lrn + shift,
        triangles,
        normals=_normals(lrn, triangles, None if learned_normals is None else learned_normals[idx]),
        color=LEARNED_RGB,
        compact=True,
    )
    add_proxies(scene, cloth_scene, np.asarray(Y)[idx])
    add_proxies(scene, cloth_scene, np.asarray(Y)[idx], offset=shift)
    top = float(np.nanmax(ref[..., 2]))
    scene.add_label("reference", [float(np.nanmean(ref[0][:, 0])), float(np.nanmean(ref[0][:, 1])), top])
    scene.add_label("learned", [float(np.nanmean(ref[0][:, 0])) + shift[0], float(np.nanmean(ref[0][:, 1])), top])
    scene.notes.append(
        f"frames 0-{T - 1} of the first held-out segment, every {idx[1] - idx[0] if len(idx) > 1 else 1}; "
        + (
            "the learned cloth shaded with its predicted normals"
            if learned_normals is not None
            else "shaded with the normals of each mesh"
        )
    )
    return scene


def garments_on_character(
    cloth_scene,
    garments: Mapping[str, tuple[np.ndarray, tuple]],
    Y: np.ndarray,
    character_path: np.ndarray,
    triangles: np.ndarray,
    times: np.ndarray,
) -> Scene:
    """At ``times`` (T,) s, each garment (name -> (positions (T, V, 3) m in the root frame, RGB)) worn by its own
    copy of the character, side by side (``CHARACTER_SHIFT`` apart), the character posed by its path rows
    ``character_path`` (T, 77: qpos, qvel) and drawn with its model's geoms (:func:`animat.viz.mujoco_bodies.add_model`,
    as the imitation's replay), the garment placed in the world by the body frames Y (T, 105); frames thinned to fit
    :data:`CLOTH_BYTES`."""
    from animat.character.model import build_model
    from animat.viz.mujoco_bodies import add_model

    T, V = len(Y), next(iter(garments.values()))[0].shape[1]
    idx = np.arange(0, T, cloth_stride(T, V, len(garments)))
    model = build_model(ball_actuators=False)
    qpos = np.asarray(character_path, float)[idx, : model.nq]
    shifts = [k * CHARACTER_SHIFT for k in range(len(garments))]
    scene = Scene(np.asarray(times)[idx], follow=qpos[:, :3] + np.mean(shifts, axis=0), focus=3.0, ground=0.0)
    for (name, (X, color)), shift in zip(garments.items(), shifts):
        world = np.stack([cloth_scene.world(X[i], Y[i]) for i in idx]) + shift
        scene.add_mesh(name, world, triangles, normals=_normals(world, triangles, None), color=color, compact=True)
        add_model(scene, f"character ({name})", model, qpos, offset=shift)
        scene.add_label(name, (qpos[0, :3] + shift + [0.0, 0.0, 1.0]).tolist())
    step = idx[1] - idx[0] if len(idx) > 1 else 1
    scene.notes.append(f"{cloth_scene.name}: every {step} of {T} frames; each garment on its own copy of the character")
    return scene


def _garment_scene(run_dir: Path, cloth_scene) -> Scene:
    """A garment run's replay (its trajectory.npz holds the character's path): ``evaluate --clip``'s reference and
    learned garments, or ``play``'s learned one on the frames its video drew, on the character."""
    cloth_scene = cloth_scene if cloth_scene is not None else model_scene(run_dir)
    triangles = cloth_scene.topology()["triangles"]
    if "shown_vertices" in trajectory_keys(run_dir):
        traj = read_trajectory(run_dir, keys=("Y", "shown_frames", "shown_vertices", "character_path"))
        shown = traj["shown_frames"]
        garments = {"learned": (traj["shown_vertices"], LEARNED_RGB)}
        path, times = traj["character_path"][shown], shown / float(cloth_scene.fps)
        return garments_on_character(cloth_scene, garments, traj["Y"][shown], path, triangles, times)
    traj = read_trajectory(run_dir, keys=("reference", "learned", "Y", "character_path"))
    garments = {"reference": (traj["reference"], REFERENCE_RGB), "learned": (traj["learned"], LEARNED_RGB)}
    times = np.arange(len(traj["Y"])) / float(cloth_scene.fps)
    return garments_on_character(cloth_scene, garments, traj["Y"], traj["character_path"], triangles, times)


def model_scene(run_dir: Path):
    """The cloth scene of the model a play or evaluate run used (its config.json names the training run)."""

    config = read_json_or_none(Path(run_dir) / "config.json") or {}
    return scene_from_dict(load_run_config(config["model"])["scene"])


def _play_scene(run_dir: Path, normals: np.ndarray | None, cloth_scene) -> Scene:
    """``animat surrogate play``'s run: the learned cloth on the frames its video drew."""

    traj = read_trajectory(run_dir, keys=("Y", "shown_frames", "shown_vertices"))
    cloth_scene = cloth_scene if cloth_scene is not None else model_scene(run_dir)
    _, triangles = rest_frame(cloth_scene)
    X, shown = traj["shown_vertices"], traj["shown_frames"]
    keep = np.arange(0, len(shown), cloth_stride(len(shown), X.shape[1], 1))
    scene = Scene(shown[keep] / float(cloth_scene.fps), view=(0.0, -2.0, 0.6))
    predicted = normals is not None and len(normals) == len(shown)
    scene.add_mesh(
        "learned",
        X[keep],
        triangles,
        normals=_normals(X[keep], triangles, normals[keep] if predicted else None),
        color=LEARNED_RGB,
        compact=True,
    )
    add_proxies(scene, cloth_scene, traj["Y"][shown[keep]])
    scene.notes.append(
        "shaded with the surrogate's predicted normals"
        if predicted
        else "shaded with the normals of the mesh (the run kept no predicted normals)"
    )
    return scene


def build(run_dir: Path, normals=None, cloth_scene=None, **_) -> Scene:
    """From trajectory.npz: ``play``'s drawn frames (``normals``: their predicted normals), ``evaluate``'s first
    held-out segment (``reference``, ``learned``, ``Y``, ``triangles``). ``cloth_scene``: the scene object
    (else rebuilt from the model the run's config.json names)."""
    if "character_path" in trajectory_keys(run_dir):
        return _garment_scene(Path(run_dir), cloth_scene)
    if "shown_vertices" in trajectory_keys(run_dir):
        return _play_scene(Path(run_dir), normals, cloth_scene)
    traj = read_trajectory(run_dir, keys=("reference", "learned", "Y", "triangles"))
    cloth_scene = cloth_scene if cloth_scene is not None else model_scene(run_dir)
    return side_by_side(cloth_scene, traj["reference"], traj["learned"], traj["Y"], traj["triangles"])


def divergence_plot(
    gaps: np.ndarray, mean: np.ndarray, summary: Mapping[str, Any], fps: float, path: str | os.PathLike
) -> Path:
    """The gap between two runs that should agree (``gaps``: (episodes, frames), % of the cloth's side;
    ``mean``: (frames,) their mean) against time (s, ``fps`` frames per second), log scale, with the 3 %
    accuracy target and, when ``summary["frames_per_doubling"]``, the growth fit between
    ``fit_first_frame`` and ``fit_last_frame``; titled by ``summary``'s scene, restart and perturbation
    (:func:`animat.surrogate.divergence.divergence`'s summary)."""
    from animat.viz.plots import save_figure, subplots

    t = np.arange(gaps.shape[1]) / fps
    fig, ax = subplots(figsize=(7.0, 4.2))
    for g in gaps:
        ax.plot(t, np.where(g > 0, g, np.nan), color="0.7", lw=0.7)
    ax.plot(t, np.where(mean > 0, mean, np.nan), color="C0", lw=2.0, label=f"mean of {len(gaps)} episodes")
    ax.axhline(3.0, color="C3", ls="--", lw=1.0, label="3 % (accuracy target)")
    if summary["frames_per_doubling"]:
        a, b = summary["fit_first_frame"], summary["fit_last_frame"]
        ax.plot(
            t[[a, b]],
            summary["fit_gap_percent_at_first_frame"]
            * 2.0 ** ((np.array([a, b]) - a) / summary["frames_per_doubling"]),
            "k:",
            lw=1.2,
            label=f"x2 every {summary['frames_per_doubling']:.1f} frames",
        )
    if (gaps > 0).any():
        ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("gap between reference runs (% of side)")
    parts = []
    if summary.get("restart", "none") != "none":
        k = summary.get("restart_components")
        parts.append(f"restart from {'frames' if k is None else f'{k} PCA components'}")
    if summary["perturb_std"] or not parts:
        parts.append(
            f"{summary['perturb_noise']} input noise, std {summary['perturb_std']:g} {summary['perturb_units']}"
        )
    ax.set_title(f"{summary['scene']}: " + "; ".join(parts))
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", frameon=False)
    return save_figure(fig, path)


BUILDERS = (SceneBuilder("surrogate", recognises, build),)

write_surrogate_report = partial(write_report, builders=BUILDERS)
"""``write_surrogate_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` with this
system's builders."""
