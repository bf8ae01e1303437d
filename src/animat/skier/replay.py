"""Replay one skier: trajectory.npz, top-view path, a GIF (MuJoCo offscreen if possible, else a
matplotlib stick figure), and headline numbers."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from animat import runs
from animat.skier.model import SkierParams
from animat.skier.rollout import score, tilt_deg, trajectory
from animat.viz import plots

# stick-figure bones: (parent body, child body)
BONES = [
    ("pelvis", "torso"), ("torso", "head"),
    ("torso", "left_upper_arm"), ("left_upper_arm", "left_forearm"), ("left_forearm", "left_hand"),
    ("torso", "right_upper_arm"), ("right_upper_arm", "right_forearm"), ("right_forearm", "right_hand"),
    ("pelvis", "left_thigh"), ("left_thigh", "left_shank"),
    ("pelvis", "right_thigh"), ("right_thigh", "right_shank"),
]


def stick_figure_gif(traj: dict, path: Path, *, fps: float = 10.0, anim_seconds: float = 10.0, title: str = "skier") -> Path:
    """A 3D stick figure (bones between body origins, poles and skis as lines) following the pelvis."""
    import imageio.v2 as imageio
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, xpos, tips, root = traj["t"], traj["xpos"], traj["pole_tips"], traj["root_pos"]
    names = traj["body_names"]
    idx = {n: i for i, n in enumerate(names)}
    frame_dt = float(t[1] - t[0]) if len(t) > 1 else 1.0
    every = max(1, int(round(1.0 / (fps * frame_dt))))
    frames = list(range(0, len(t), every))[: max(1, int(anim_seconds * fps))]
    images = []
    fig = plt.figure(figsize=(5, 5), dpi=70)
    ax = fig.add_subplot(projection="3d")
    for i in frames:
        ax.cla()
        c = root[i]
        for a, b in BONES:
            p, q = xpos[i, idx[a]], xpos[i, idx[b]]
            ax.plot([p[0], q[0]], [p[1], q[1]], [p[2], q[2]], color="C0", lw=3)
        for k, colour in ((0, "0.3"), (1, "C3"), (2, "0.3"), (3, "C3")):  # pole, ski per side
            p, q = tips[i, 2 * k], tips[i, 2 * k + 1]
            ax.plot([p[0], q[0]], [p[1], q[1]], [p[2], q[2]], color=colour, lw=2)
        ax.plot(root[: i + 1, 0], root[: i + 1, 1], np.zeros(i + 1), color="C2", lw=1)
        ax.set_xlim(c[0] - 1.2, c[0] + 1.2)
        ax.set_ylim(c[1] - 1.2, c[1] + 1.2)
        ax.set_zlim(0, 2.4)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_title(f"{title}  t = {t[i]:.2f} s  x = {c[0]:.2f} m", fontsize=9)
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    import io

    buf = io.BytesIO()
    imageio.mimsave(buf, images, format="GIF", duration=1000.0 / fps, loop=0)
    return runs.atomic_write_bytes(path, buf.getvalue())


def mujoco_gif(params: SkierParams, gene: np.ndarray, traj: dict, path: Path, *, fps: float = 10.0, anim_seconds: float = 10.0) -> Path | None:
    """MuJoCo offscreen rendering, only where MUJOCO_GL names an offscreen backend (egl/osmesa) and it
    works; returns None otherwise (never raises)."""
    if os.environ.get("MUJOCO_GL", "").lower() not in ("egl", "osmesa"):
        return None
    try:
        import io

        import imageio.v2 as imageio
        import mujoco

        from animat.skier.model import build_model

        model = build_model(params)
        data = mujoco.MjData(model)
        t = traj["t"]
        frame_dt = float(t[1] - t[0]) if len(t) > 1 else 1.0
        every = max(1, int(round(1.0 / (fps * frame_dt))))
        images = []
        with mujoco.Renderer(model, 240, 320) as renderer:
            cam = mujoco.MjvCamera()
            cam.distance, cam.elevation, cam.azimuth = 4.0, -15.0, 120.0
            for i in list(range(0, len(t), every))[: max(1, int(anim_seconds * fps))]:
                data.qpos[:] = traj["qpos"][i]
                mujoco.mj_forward(model, data)
                cam.lookat[:] = data.qpos[:3]
                renderer.update_scene(data, cam)
                images.append(renderer.render().copy())
        buf = io.BytesIO()
        imageio.mimsave(buf, images, format="GIF", duration=1000.0 / fps, loop=0)
        return runs.atomic_write_bytes(path, buf.getvalue())
    except Exception:  # noqa: BLE001 - no GL context here: fall back to matplotlib
        return None


def write_replay(params: SkierParams, gene: np.ndarray, seconds: float, out: Path, *, anim_seconds: float = 10.0,
                 frame_dt: float = 0.02, title: str = "skier", fall_deg: float = 80.0, bonus: float = 5.0) -> dict:
    """Simulate ``gene`` for ``seconds`` and write ``trajectory.npz``, ``plots/topview.png`` and
    ``media/skier.gif`` under ``out``; returns headline numbers."""
    out = Path(out)
    traj = trajectory(params, gene, seconds, frame_dt)
    # as the fly's: t (T,) s, root position (T, 3) m, root quaternion (T, 4) [w, x, y, z]
    runs.atomic_save_npz(out / "trajectory.npz", t=traj["t"].astype(np.float32), position=traj["root_pos"].astype(np.float32),
                         quaternion=traj["root_quat"].astype(np.float32))
    plots.topview_plot(traj["root_pos"][:, 0], traj["root_pos"][:, 1], out / "plots" / "topview.png", title=f"{title}: path from above")
    gif = out / "media" / "skier.gif"
    renderer = "mujoco" if mujoco_gif(params, gene, traj, gif, anim_seconds=anim_seconds) else None
    if renderer is None:
        stick_figure_gif(traj, gif, anim_seconds=anim_seconds, title=title)
        renderer = "matplotlib"
    s = score(traj["root_pos"][None, :, 0], traj["root_quat"][None], frame_dt, fall_deg, bonus)
    return {
        "seconds": float(seconds),
        "fitness": float(s.fitness[0]),
        "net_forward_m": float(s.net_forward_m[0]),
        "fell": bool(s.fell[0]),
        "max_tilt_deg": float(tilt_deg(traj["root_quat"]).max()),
        "final_lateral_m": float(traj["root_pos"][-1, 1] - traj["root_pos"][0, 1]),
        "renderer": renderer,
    }
