"""The imitation's replay: the simulated character and the reference clip's pose beside it (the ghost)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from animat.imitate.policy import load_run
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import read_json_or_none, read_trajectory, trajectory_keys
from animat.viz.scene import Scene

GHOST_RGB = (0.95, 0.55, 0.15)
GHOST_OPACITY = 0.4
GARMENT_RGB = (0.18, 0.55, 0.34)
CLIP_FPS = 30.0
GHOST_OFFSET = np.array([0.0, 0.8, 0.0])  # m: where the reference is drawn relative to the character


def recognises(run_dir: Path) -> bool:
    run_dir = Path(run_dir)
    return "r_imitation" in trajectory_keys(run_dir) or (
        (run_dir / "policy.json").is_file() and (run_dir / "config.json").is_file()
    )


def _env(training_run: Path):
    from animat.imitate.env import make_env

    cfg, _ = load_run(training_run)
    return make_env(cfg, rsi=False)


def clip_poses(env, cycles: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Times ``(F,)`` s and qpos ``(F, nq)`` of the reference clip of ``env``, ``cycles`` times through, at 30 fps."""
    import mujoco

    from animat.character.model import set_pose

    data = mujoco.MjData(env.model)
    times = np.arange(0.0, cycles * env.clip.cycle_seconds + 1e-9, 1.0 / CLIP_FPS)
    qpos = []
    for t in times:
        set_pose(env.model, data, env.clip.sample(t), env.layout)
        qpos.append(data.qpos.copy())
    return times, np.array(qpos)


def build(run_dir: Path, model=None, **_) -> Scene:
    """``play``: the character and the ghost from trajectory.npz (``model``: the MjModel, else rebuilt from the
    training run its summary names). ``train``: the reference clip the policy learns."""
    from animat.viz.mujoco_bodies import add_model

    run_dir = Path(run_dir)
    if "r_imitation" not in trajectory_keys(run_dir):  # a training run: its clip
        env = _env(run_dir)
        times, qpos = clip_poses(env)
        scene = Scene(times, follow=qpos[:, :3], focus=2.5, ground=0.0)
        add_model(scene, "reference clip", env.model, qpos, tint=GHOST_RGB, opacity=0.8)
        scene.notes.append("the reference clip this run learns to imitate (play the policy for the character)")
        return scene
    traj = read_trajectory(run_dir)  # play's (time, root_pos, ...) or steer's (t, position, ...), each with qpos
    if "qpos" not in traj:
        traj = read_trajectory(run_dir, keys=("time", "root_pos"))
        scene = Scene(traj["time"], follow=traj["root_pos"], focus=2.5, ground=0.0)
        scene.add_prims("root", ["sphere"], [[0.1, 0.1, 0.1]], traj["root_pos"][:, None], color=(0.2, 0.4, 0.8))
        scene.add_path("root path", traj["root_pos"] * [1, 1, 0])
        scene.notes.append("this run kept only the root's path (play the policy again for the whole character)")
        return scene
    if model is None:
        source = (read_json_or_none(run_dir / "summary.json") or {}).get("source")
        model = _env(Path(source)).model
    root = traj["qpos"][:, :3]
    scene = Scene(traj["qpos_time"], follow=root, focus=2.5, ground=0.0)
    add_model(scene, "character", model, traj["qpos"].astype(float))
    add_model(
        scene,
        "reference (ghost)",
        model,
        traj["ghost_qpos"].astype(float),
        offset=GHOST_OFFSET,
        tint=GHOST_RGB,
        opacity=GHOST_OPACITY,
    )
    if "garment_vertices" in traj:  # play --garment: the garment it wore, on the character
        scene.add_mesh("garment", traj["garment_vertices"], traj["garment_triangles"], color=GARMENT_RGB)
        scene.notes.append("the character wears a learned garment, stepped live on its simulated body frames")
    scene.add_path("root path", root * [1, 1, 0])
    scene.add_label("character", root[0] + [0, 0, 0.9])
    scene.add_label("reference", root[0] + GHOST_OFFSET + [0, 0, 0.9])
    return scene


def imitation_curve_plot(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike, title: str) -> Path:
    """Imitation against samples (left) and wall time (right): mean r_I per step (top, 0 to 1) and mean episode
    length in s (bottom) of the training episodes. ``rows``: metrics rows with ``timesteps``, ``seconds``
    (training wall time, s), ``r_i_per_step_mean`` and ``ep_seconds_mean`` (NaN or empty before an episode ends)."""
    from animat.viz.plots import column, save_figure, subplots

    t, minutes = column(rows, "timesteps"), column(rows, "seconds") / 60.0
    fig, axes = subplots(2, 2, figsize=(9.0, 5.6), sharey="row")
    for col, (x, xlabel) in enumerate(((t, "samples (30 Hz control steps)"), (minutes, "wall time (min)"))):
        for row, (key, ylabel, colour) in enumerate(
            (("r_i_per_step_mean", "mean r_I per step", "C2"), ("ep_seconds_mean", "mean episode length (s)", "C1"))
        ):
            y, ax = column(rows, key), axes[row, col]
            ok = np.isfinite(x) & np.isfinite(y)
            ax.plot(x[ok], y[ok], color=colour, lw=1.5, marker="o" if ok.sum() == 1 else None)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(ylabel, fontsize=9)
            if row == 1:
                ax.set_xlabel(xlabel)
        axes[0, col].set_ylim(0.0, 1.0)
    axes[1, 0].set_ylim(bottom=0.0)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def steer_plot(flight: Mapping[str, np.ndarray], skills: Sequence[str], path: str | os.PathLike, title: str) -> Path:
    """A steered run (:mod:`animat.imitate.steer`) against time ``flight["t"] (T,)`` s: r_I per step (top), the
    forward speed (m/s, middle) and the path seen from above (bottom, m), coloured by the commanded skill
    (``flight["command"] (T,)``, indices into ``skills``); falls marked with a cross."""
    from animat.viz.plots import save_figure, subplots

    t, cmd, pos = flight["t"], flight["command"], flight["position"]
    fig, axes = subplots(3, 1, figsize=(8.0, 8.4), layout="constrained")
    fell = flight["fell"].astype(bool)
    for k, name in enumerate(skills):
        on = np.where(cmd == k, 1.0, np.nan)
        axes[0].plot(t, flight["r_imitation"] * on, color=f"C{k}", lw=1.2, label=name)
        axes[1].plot(t, flight["forward_speed"] * on, color=f"C{k}", lw=1.2, label=name)
        axes[2].plot(pos[:, 0] * on, pos[:, 1] * on, color=f"C{k}", lw=1.5, label=name)
    axes[0].plot(t[fell], flight["r_imitation"][fell], "kx", label="fall")
    axes[2].plot(pos[fell, 0], pos[fell, 1], "kx")
    axes[0].set(ylabel="r_I per step", ylim=(0.0, 1.0))
    axes[1].set(ylabel="forward speed (m/s)", xlabel="time (s)")
    axes[2].set(xlabel="x (m)", ylabel="y (m)", aspect="equal")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


BUILDERS = (SceneBuilder("imitate", recognises, build),)

write_imitate_report = partial(write_report, builders=BUILDERS)
"""``write_imitate_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` with this
system's builders."""
