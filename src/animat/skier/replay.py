"""Replay one skier: trajectory.npz, top-view path (``plots/topview.png``), a GIF ``media/skier.gif`` and the
MP4 beside it where imageio-ffmpeg is installed (MuJoCo offscreen rendering with a camera following the pelvis
and the path marked on a checkered floor where an OpenGL context can be made, else a matplotlib stick figure),
and headline numbers; ``renderer`` says which drew the animation (``mujoco-egl``, ``mujoco-osmesa``,
``matplotlib``, or ``none`` with no animation asked for)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from animat import runs
from animat.console import phase
from animat.skier import effort, pushoff
from animat.skier.gene import TAU
from animat.skier.model import TOTAL_MASS, G, SkierParams, build_spec
from animat.skier.rollout import fallen_frames, score, tilt_deg, trajectory
from animat.viz import animate, plots
from animat.viz.animate import frame_stride, write_animation
from animat.viz.mujoco_render import View, add_sphere, render_frames

# stick-figure bones: (parent body, child body)
BONES = [
    ("pelvis", "torso"),
    ("torso", "head"),
    ("torso", "left_upper_arm"),
    ("left_upper_arm", "left_forearm"),
    ("left_forearm", "left_hand"),
    ("torso", "right_upper_arm"),
    ("right_upper_arm", "right_forearm"),
    ("right_forearm", "right_hand"),
    ("pelvis", "left_thigh"),
    ("left_thigh", "left_shank"),
    ("pelvis", "right_thigh"),
    ("right_thigh", "right_shank"),
]


def stick_figure_gif(
    traj: dict, path: Path, *, fps: float = 10.0, anim_seconds: float = 10.0, title: str = "skier"
) -> Path:
    """A 3D stick figure (bones between body origins, poles and skis as lines) following the pelvis
    (:func:`animat.viz.animate.stick_figure_gif`)."""
    idx = {n: i for i, n in enumerate(traj["body_names"])}
    frames, fps = _frames(traj["t"], fps, anim_seconds)
    sticks = traj["pole_tips"].reshape(len(traj["t"]), 4, 2, 3)  # pole, ski per side: (T, 4, 2 ends, 3)
    return animate.stick_figure_gif(
        traj["t"],
        traj["xpos"],
        [(idx[a], idx[b]) for a, b in BONES],
        sticks,
        ["0.3", "C3", "0.3", "C3"],
        traj["root_pos"],
        path,
        frames=frames,
        fps=fps,
        title=title,
        mp4=True,
    )


PATH_RGBA = np.array([0.1, 0.6, 0.2, 1.0], dtype=np.float32)
PATH_MARKERS = 60  # most path markers drawn per frame
VIEW = View(
    distance=4.5, azimuth=135.0, elevation=-18.0, lookat_z=0.7
)  # from the skier's front right (+x, -y), looking back at it


def render_spec(params: SkierParams):
    """The skier's model for drawing only: :func:`animat.skier.model.build_spec` with a checkered floor (1 m squares),
    so that gliding shows against the ground (on moguls the height field too, the plane 1 cm below it); physics
    unchanged."""
    spec = build_spec(params)
    tex = spec.add_texture()
    tex.name, tex.type, tex.builtin = "grid", mujoco.mjtTexture.mjTEXTURE_2D, mujoco.mjtBuiltin.mjBUILTIN_CHECKER
    tex.rgb1, tex.rgb2, tex.width, tex.height = [0.93, 0.95, 1.0], [0.78, 0.82, 0.9], 256, 256
    mat = spec.add_material()
    mat.name = "grid"
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "grid"
    mat.texrepeat, mat.texuniform = [0.5, 0.5], True  # one texture (2 x 2 squares) every 2 m
    floor = spec.geom("floor")
    floor.material, floor.rgba = "grid", [1, 1, 1, 1]
    if params.terrain == "moguls":  # the height field drawn checkered too, the plane under it out of its way
        spec.geom("moguls").material, spec.geom("moguls").rgba = "grid", [1, 1, 1, 1]
        floor.pos = [0.0, 0.0, -0.01]
    return spec


def mujoco_gif(
    params: SkierParams,
    traj: dict,
    path: Path,
    *,
    fps: float = 10.0,
    anim_seconds: float = 10.0,
    width: int = 400,
    height: int = 300,
) -> str | None:
    """MuJoCo offscreen rendering (:mod:`animat.viz.mujoco_render`) of ``traj``'s first ``anim_seconds`` s, the camera
    following the pelvis, the pelvis's path so far marked on the ground; the backend's name (``egl``/``osmesa``),
    or None (nothing written) where no offscreen OpenGL context can be made. The MP4 goes beside the GIF
    (:func:`animat.viz.animate.write_animation`)."""
    model = render_spec(params).compile()
    t, root = traj["t"], traj["root_pos"]
    frames, fps = _frames(t, fps, anim_seconds)
    pelvis = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "pelvis")
    ground = params.ground().height(root[:, 0], root[:, 1])  # (T,) m under the pelvis

    def draw_path(i: int, scene: mujoco.MjvScene) -> None:
        upto = frames[i]
        for k in np.linspace(0, upto, min(upto + 1, PATH_MARKERS)).astype(int):
            add_sphere(scene, np.array([root[k, 0], root[k, 1], ground[k]]), 0.03, PATH_RGBA)

    course = traj["course"]
    captions = [f"t = {t[k]:.1f} s   x = {course[k] - course[0]:.2f} m" for k in frames]
    got = render_frames(
        model,
        traj["qpos"][frames],
        track_body=pelvis,
        view=VIEW,
        decorate=draw_path,
        extra_geoms=PATH_MARKERS,
        captions=captions,
        width=width,
        height=height,
    )
    if got is None:
        return None
    write_animation(got[1], path, fps=fps)
    return got[0]


def _frames(t: np.ndarray, fps: float, anim_seconds: float) -> tuple[list[int], float]:
    """Indices into the trajectory's samples ``t (T,)`` s for an animation of about ``fps`` frames per s lasting
    at most ``anim_seconds`` s, and the frame rate that plays them in real time (the stride is whole samples)."""
    every, real_fps = frame_stride(float(t[1] - t[0]) if len(t) > 1 else 1.0, fps)
    return list(range(0, len(t), every))[: max(1, int(anim_seconds * real_fps + 1e-9))], real_fps


def _save_trajectory(path: Path, traj: dict, yaw: np.ndarray) -> None:
    """Write ``traj`` (a :func:`animat.skier.rollout.trajectory`) and its skis' yaw ``yaw`` (T, 2) rad as float32
    arrays in the npz ``path``."""
    # as the fly's: t (T,) s, root position (T, 3) m, root quaternion (T, 4) [w, x, y, z], qpos (T, nq) for the report
    runs.atomic_save_npz(
        path,
        t=traj["t"].astype(np.float32),
        position=traj["root_pos"].astype(np.float32),
        quaternion=traj["root_quat"].astype(np.float32),
        qpos=traj["qpos"].astype(np.float32),
        ski_force=traj["ski_forces"].astype(np.float32),
        ski_yaw=yaw.astype(np.float32),
        servo_torque=traj["servo_torque"].astype(np.float32),  # (T, nu) N m, actuator order
        work=traj["work"].astype(np.float32),  # (T,) J by each frame
    )


def write_replay(
    params: SkierParams,
    gene: np.ndarray,
    seconds: float,
    out: Path,
    *,
    anim_seconds: float = 10.0,
    frame_dt: float = 0.02,
    title: str = "skier",
    fall_deg: float = 80.0,
    bonus: float = 5.0,
    tau: float = TAU,
) -> dict:
    """Simulate ``gene`` (keyframe period ``tau`` s) for ``seconds`` and write ``trajectory.npz``,
    ``plots/topview.png`` and ``media/skier.gif`` and ``.mp4`` (:func:`write_animation`) under ``out``; returns
    headline numbers, with the push-offs before any fall (:func:`pushoff_report`) and the servos' mechanical work over
    the whole replay and the cost of transport over its net forward distance (:mod:`animat.skier.effort`)."""
    out = Path(out)
    with phase(f"skiing {seconds:g} s"):
        traj = trajectory(params, gene, seconds, frame_dt, tau)
    yaw = ski_yaw(traj)
    _save_trajectory(out / "trajectory.npz", traj, yaw)
    plots.topview_plot(
        traj["root_pos"][:, 0], traj["root_pos"][:, 1], out / "plots" / "topview.png", title=f"{title}: path from above"
    )
    renderer = write_animation_of(params, traj, out / "media" / "skier.gif", anim_seconds, title)
    if params.terrain != "flat":
        terrain_profile_plot(params.ground(), traj, out / "plots" / "terrain.png", title=f"{title}: the ground")
    s = score(
        traj["course"][None],
        traj["root_quat"][None],
        traj["frame_dt"],
        fall_deg,
        bonus,
        traj["t"][None],
        traj["clearance"][None],
    )
    return {
        "seconds": float(seconds),
        "fitness": float(s.fitness[0]),
        "net_forward_m": float(s.net_forward_m[0]),
        "fell": bool(s.fell[0]),
        "max_tilt_deg": float(tilt_deg(traj["root_quat"]).max()),
        "final_lateral_m": float(traj["root_pos"][-1, 1] - traj["root_pos"][0, 1]),
        "mechanical_work_J": float(traj["work"][-1]),
        "cost_of_transport_J_per_kg_m": float(
            effort.cost_of_transport(traj["work"][-1], TOTAL_MASS, s.net_forward_m[0])
        ),
        "renderer": renderer,
        **pushoff_report(traj, yaw, len(gene) * tau, fall_deg),
    }


def terrain_profile_plot(terrain, traj: dict, path: Path, *, title: str = "the ground") -> Path:
    """Side view of a :func:`animat.skier.rollout.trajectory` on ``terrain`` (an
    :class:`animat.skier.terrain.Terrain`): the pelvis's height and the ground's under it against x, m."""
    root = traj["root_pos"]
    ground = terrain.height(root[:, 0], root[:, 1])
    return plots.series_plot(
        root[:, 0],
        {"pelvis": root[:, 2], "ground under the pelvis": ground},
        path,
        xlabel="x (m)",
        ylabel="height (m)",
        title=title,
    )


def write_animation_of(params: SkierParams, traj: dict, gif: Path, anim_seconds: float, title: str) -> str:
    """The first ``anim_seconds`` s of ``traj`` as the GIF ``gif`` and the MP4 beside it, by MuJoCo where it can
    render offscreen, else as a stick figure; the renderer's name (``none`` for ``anim_seconds`` 0)."""
    if anim_seconds <= 0:
        return "none"
    with phase(f"rendering {gif.parent.name}/{gif.name} ({anim_seconds:g} s)"):
        backend = mujoco_gif(params, traj, gif, anim_seconds=anim_seconds)
        if backend is None:
            stick_figure_gif(traj, gif, anim_seconds=anim_seconds, title=title)
    return "matplotlib" if backend is None else f"mujoco-{backend}"


def ski_yaw(traj: dict) -> np.ndarray:
    """(T, 2) rad: the heading of the left and right ski (back to front) in a
    :func:`animat.skier.rollout.trajectory`."""
    tips = traj["pole_tips"]
    return pushoff.ski_yaw(tips[:, [3, 7]], tips[:, [2, 6]])


def pushoff_report(traj: dict, yaw: np.ndarray, cycle_seconds: float, fall_deg: float = 80.0) -> dict:
    """:func:`animat.skier.pushoff.summary` of the push-offs in ``traj`` before its first fallen frame, the direction
    of travel taken over one keyframe cycle of ``cycle_seconds`` s, the weight the skier's (:data:`TOTAL_MASS` kg)."""
    fallen = fallen_frames(
        traj["course"][None],
        traj["root_quat"][None],
        traj["frame_dt"],
        fall_deg,
        traj["t"][None],
        traj["clearance"][None],
    )[0][0]
    T = int(fallen.argmax()) if fallen.any() else len(fallen)
    if T < 2:
        return pushoff.summary([])
    found = pushoff.pushoffs(
        traj["t"][:T], traj["ski_forces"][:T], yaw[:T], traj["root_pos"][:T, :2], TOTAL_MASS * G, cycle_seconds
    )
    return pushoff.summary(found)
