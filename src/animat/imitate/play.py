"""``animat imitate play``: run a saved policy on its clip and draw it beside the reference (a ghost).

The policy comes from a run directory that ``animat imitate train`` wrote (``policy.npz`` +
``policy.json`` + ``config.json``; read without unpickling, see :mod:`animat.imitate.policy`). The
episode starts at the clip's time 0 (no random start), runs for ``seconds`` or until the character
falls (early termination as in training), and is drawn as a GIF: the simulated character in blue,
the clip's pose (a second copy of the character posed kinematically) in translucent orange
``GHOST_OFFSET`` to its left (+y). ``renderer``: ``mujoco`` renders MuJoCo's own shapes offscreen
(EGL or OSMesa, :mod:`animat.viz.mujoco_render` via :mod:`animat.imitate.render`); ``matplotlib`` draws a box around
each geom (capsules as boxes along their axis, spheres as cubes); ``auto`` (default) takes MuJoCo where an offscreen GL
context can be made, else matplotlib. Writes ``media/play.gif`` (not with ``render`` off), ``trajectory.npz`` (per step:
time, r_I, root position; per drawn frame: qpos of the character and of the ghost), ``plots/imitation_reward.png``
(r_I per step), ``summary.json`` (``renderer`` says which drew the GIF) and ``report.html``; the command line adds
``config.json``.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import mujoco
import numpy as np

from animat import runs
from animat.character.wear import Garment
from animat.config import require
from animat.console import phase
from animat.errors import CheckpointError, ConfigError
from animat.imitate.dress import Dresser
from animat.imitate.policy import load_run
from animat.imitate.report import GHOST_OFFSET, write_imitate_report
from animat.viz import plots

RENDERERS = ("auto", "mujoco", "matplotlib")
GARMENT_COLOR = "#2e8b57"  # a worn garment in the GIF

_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))  # box_faces' corner order


def geom_boxes(model: mujoco.MjModel, data: mujoco.MjData, offset: np.ndarray = np.zeros(3)) -> list[np.ndarray]:
    """(8, 3) m corners of a box around each body geom (floor excluded), world frame, moved by ``offset``."""
    out = []
    for g in range(model.ngeom):
        t = model.geom_type[g]
        if t == mujoco.mjtGeom.mjGEOM_PLANE:
            continue
        s = model.geom_size[g]
        if t == mujoco.mjtGeom.mjGEOM_SPHERE:
            half = np.array([s[0], s[0], s[0]])
        elif t == mujoco.mjtGeom.mjGEOM_CAPSULE:
            half = np.array([s[0], s[0], s[1] + s[0]])
        else:
            half = s[:3]
        local = _SIGNS * half
        out.append(data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T + offset)
    return out


def frame_polygons(sim: list[np.ndarray], ghost: list[np.ndarray]) -> list[dict]:
    from animat.viz.animate import box_faces

    polys = [{"vertices": f, "color": "#ff9f40", "alpha": 0.35} for c in ghost for f in box_faces(c)]
    polys += [{"vertices": f, "color": "#4a6fa5", "alpha": 1.0} for c in sim for f in box_faces(c)]
    return polys


def run_episode(env, policy, obs: np.ndarray, every: int, render: bool, garment: Garment | None = None) -> dict:
    """One episode of the deterministic ``policy`` in ``env`` from observation ``obs`` until it ends: per step
    ``r_imitation (S,)``, ``r_goal (S,)`` (NaN without a goal) and ``root_pos (S, 3)`` m; with ``render``, at its
    start, every ``every`` steps and its end, ``qpos_time (F,)`` s and the qpos ``(F, nq)`` of the character
    (``qpos``) and of the clip's pose (``ghost_qpos``), and with a ``garment`` worn (:mod:`animat.imitate.dress`)
    its world vertices ``garment (F, V, 3)`` m; ``terminated``, the last step's ``info`` and ``wall``: the loop's
    wall time (s: the policy, the physics, the garment and the recorded frames' poses)."""
    from animat.character.model import set_pose

    ghost_data = mujoco.MjData(env.model)
    rec = {k: [] for k in ("r_imitation", "r_goal", "root_pos", "qpos_time", "qpos", "ghost_qpos", "garment")}
    dresser = None if garment is None else Dresser(garment, env.model, env.data)

    def grab(t: float) -> None:
        set_pose(env.model, ghost_data, env.clip.sample(t), env.layout)
        rec["qpos"].append(env.data.qpos.copy())
        rec["ghost_qpos"].append(ghost_data.qpos.copy())
        rec["qpos_time"].append(t)
        if dresser is not None:
            rec["garment"].append(dresser.vertices.astype(np.float32))

    if render:
        grab(env.t)
    done, terminated, step, info = False, False, 0, {}
    started = time.perf_counter()
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(obs))
        step += 1
        if dresser is not None and not info.get("nonfinite", False):
            dresser.after_step()
        rec["r_imitation"].append(info["r_imitation"])
        rec["r_goal"].append(info.get("r_goal", np.nan))
        rec["root_pos"].append(env.data.qpos[:3].copy())
        done = terminated or truncated
        if render and (step % every == 0 or done):
            grab(env.t)
    wall = time.perf_counter() - started
    return {**{k: np.array(v) for k, v in rec.items()}, "terminated": bool(terminated), "info": info, "wall": wall}


def play(
    run_dir: Path,
    seconds: float,
    out: Path,
    *,
    fps: float = 15.0,
    render: bool = True,
    renderer: str = "auto",
    garment: Garment | None = None,
) -> dict:
    """Run the policy of ``run_dir`` for up to ``seconds``, wearing ``garment`` if given (:mod:`animat.imitate.dress`);
    write the GIF (with ``render``), trajectory, reward plot and summary into ``out``."""
    from animat.imitate.env import make_env
    from animat.viz.animate import frame_stride

    require("--seconds", seconds, gt=0)
    require("--renderer", renderer, choices=RENDERERS)
    cfg, policy = load_run(run_dir)
    env = make_env(cfg, rsi=False, max_seconds=float(seconds))
    if env.observation_space.shape[0] != policy.obs_dim:
        raise CheckpointError(
            f"policy expects {policy.obs_dim} observations, the environment gives {env.observation_space.shape[0]}"
        )
    every, real_fps = frame_stride(1.0 / 30.0, fps)
    ep = run_episode(env, policy, env.reset(seed=cfg.seed)[0], every, render or garment is not None, garment)
    out = Path(out)
    _write_trajectory(out, ep, garment)
    plots.series_plot(
        np.arange(1, len(ep["r_imitation"]) + 1) / 30.0,
        {"r_I": ep["r_imitation"]},
        out / "plots" / "imitation_reward.png",
        ylabel="imitation reward r_I per step (0 to 1)",
        title=f"policy of {Path(run_dir).name} on {cfg.clip_label}",
    )
    summary = {**_summary(run_dir, seconds, cfg, policy, ep), **_garment_summary(garment, ep)}
    if render:
        with phase("rendering media/play.gif"):
            frames = (ep["qpos"], ep["ghost_qpos"], ep["qpos_time"])
            worn = None if garment is None else (ep["garment"], garment.triangles)
            summary.update(
                write_gif(env.model, *frames, out / "media" / "play.gif", fps=real_fps, renderer=renderer, garment=worn)
            )
        summary["gif"] = str(Path(summary["gif"]).relative_to(out))
    runs.atomic_write_json(out / "summary.json", summary)
    write_imitate_report(out, model=env.model)
    return summary


def _write_trajectory(out: Path, ep: dict, garment: Garment | None) -> None:
    """trajectory.npz: per step ``time`` s, ``r_imitation``, ``root_pos`` m; per drawn frame ``qpos_time``, ``qpos``,
    ``ghost_qpos``; with a garment ``garment_vertices (F, V, 3)`` m (world) and ``garment_triangles (T, 3)``."""
    drawn = ("qpos_time", "qpos", "ghost_qpos") if len(ep["qpos_time"]) else ()
    worn = {} if garment is None else {"garment_vertices": ep["garment"], "garment_triangles": garment.triangles}
    runs.atomic_save_npz(
        out / "trajectory.npz",
        time=np.arange(1, len(ep["r_imitation"]) + 1) / 30.0,
        r_imitation=ep["r_imitation"],
        root_pos=ep["root_pos"],
        **{k: ep[k] for k in drawn},
        **worn,
    )


def _summary(run_dir: Path, seconds: float, cfg, policy, ep: dict) -> dict:
    """summary.json's figures of the episode ``ep`` (:func:`run_episode`) of the policy of ``run_dir``."""
    rewards, info = ep["r_imitation"], ep["info"]
    return {
        "source": str(run_dir),
        "seconds_requested": float(seconds),
        "episode_steps": len(rewards),
        "episode_seconds": round(len(rewards) / 30.0, 4),
        "fell": ep["terminated"] and not info.get("nonfinite", False),
        "nonfinite": bool(info.get("nonfinite", False)),  # the physics blew up (not a fall)
        "mean_r_imitation": float(rewards.mean()),
        "return_r_imitation": float(rewards.sum()),
        "episode_wall_seconds": round(ep["wall"], 4),  # the loop alone: policy, physics, garment (no rendering)
        "simulated_frames_per_wall_second": len(rewards) / ep["wall"] if ep["wall"] > 0 else float("inf"),
        "clip": cfg.clip_label,
        "policy_timesteps": int(policy.manifest.get("num_timesteps", 0)),
        **({"mean_r_goal": float(np.mean(ep["r_goal"]))} if cfg.goal else {}),
    }


def _garment_summary(garment: Garment | None, ep: dict) -> dict:
    """The worn garment's figures: its name, frames stepped, whether every drawn vertex is finite, the largest
    distance of a drawn vertex from the character's root (m), and, where the garment times its frames
    (``seconds``), the median and largest frame time (µs)."""
    if garment is None:
        return {}
    X, root = ep["garment"], ep["qpos"][:, None, :3]
    times = np.asarray(getattr(garment, "seconds", []), dtype=float) * 1e6
    return {
        "garment": garment.name,
        "garment_frames": int(round(len(ep["r_imitation"]) * float(garment.fps) / 30.0)),
        "garment_finite": bool(np.isfinite(X).all()),
        "garment_max_distance_from_root_m": float(np.nanmax(np.linalg.norm(X - root, axis=-1))),
        **(
            {"garment_frame_us_median": float(np.median(times)), "garment_frame_us_max": float(times.max())}
            if times.size
            else {}
        ),
    }


def write_gif(
    model: mujoco.MjModel,
    sim_q: np.ndarray,
    ghost_q: np.ndarray,
    times: np.ndarray,
    path: Path,
    *,
    fps: float,
    renderer: str = "auto",
    garment: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    """Draw frames ``sim_q``, ``ghost_q (F, nq)`` at ``times (F,)`` s into the GIF ``path``, with ``garment``
    (world vertices (F, V, 3) m, triangles (T, 3)) on the character; ``{"gif", "renderer"}``."""
    from animat.imitate.render import render_with_ghost
    from animat.viz.mujoco_render import write_gif as write_images

    title = f"policy (blue) and clip (ghost, +{GHOST_OFFSET[1]:g} m y)"
    got = None
    if renderer in ("auto", "mujoco"):
        got = render_with_ghost(
            model,
            sim_q,
            ghost_q,
            ghost_offset=GHOST_OFFSET,
            captions=[f"t = {t:.2f} s   policy (blue), clip (ghost)" for t in times],
            garment=garment,
        )
        if got is None and renderer == "mujoco":
            raise ConfigError(
                "--renderer mujoco: no offscreen OpenGL context (tried MUJOCO_GL, egl, osmesa); use --renderer "
                "matplotlib"
            )
    if got is not None:
        return {"gif": str(write_images(got[1], path, fps=fps)), "renderer": f"mujoco-{got[0]}"}
    from animat.viz.animate import animate_body

    sim, ghost = mujoco.MjData(model), mujoco.MjData(model)
    frames = []
    for i, (q, g) in enumerate(zip(sim_q, ghost_q)):
        sim.qpos[:], ghost.qpos[:] = q, g
        mujoco.mj_kinematics(model, sim)
        mujoco.mj_kinematics(model, ghost)
        frames.append(frame_polygons(geom_boxes(model, sim), geom_boxes(model, ghost, GHOST_OFFSET)))
        if garment is not None:
            frames[-1] += cloth_polygons(garment[0][i], garment[1])
    gif = animate_body(frames, path, fps=fps, trail=sim_q[:, :3], times=times, title=title, view_size=1.4, ground=0.0)
    return {"gif": str(gif), "renderer": "matplotlib"}


def cloth_polygons(vertices: np.ndarray, triangles: np.ndarray) -> list[dict]:
    """The matplotlib polygons of a garment's triangles ``(T, 3)`` at ``vertices (V, 3)`` m."""
    return [{"vertices": vertices[t], "color": GARMENT_COLOR, "alpha": 0.9} for t in triangles]
