"""Batched evaluation of skiers with ``mujoco.rollout`` (open-loop controls precomputed from genes).

Fitness (maximised): the sum over frames (every ``frame_dt`` s) of the positive forward progress
of the pelvis along the course (+x; along the slope on a slope, :meth:`animat.skier.terrain.Terrain.course`;
backward progress adds nothing); scoring stops at the first frame where the
pelvis tilts more than ``fall_deg`` (its up axis more than 80 deg from vertical, whatever the axis
of the tilt); ``+bonus`` if it never fell; and, a skier that never fell, ``skate_weight`` times the metres it skated on
push-offs that alternate legs with the ski angled outwards by ``skate_min_yaw_deg`` to ``skate_max_yaw_deg``
(:func:`animat.skier.pushoff.skating_progress`, a stroke being half a keyframe cycle; the push-offs the replay reports,
read here from the skis' contact sensors); minus ``effort_weight`` times the servos' mechanical work over the scored
motion in metres, ``W / (m g)`` (:mod:`animat.skier.effort`, read from the servos' sensors; with ``effort_free_cot``
only the work beyond that cost of transport over the counted progress, :func:`animat.skier.effort.effort_metres`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from animat.skier import effort, pushoff
from animat.skier import gene as G
from animat.skier.model import TOTAL_MASS, SkierParams, actuator_order, build_model, ski_readings
from animat.skier.model import G as GRAVITY
from animat.skier.terrain import ski_geoms

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


@dataclass
class Scores:
    fitness: np.ndarray  # (P,)  (with the skating term where skate_weight > 0)
    fell: np.ndarray  # (P,) bool
    net_forward_m: np.ndarray  # (P,) last x - start x of the pelvis, m (last simulated frame; before a divergence)
    scored_seconds: np.ndarray  # (P,) s of motion that counted (until the fall)
    work_J: np.ndarray | None = None  # (P,) J the servos' mechanical work over the frames whose progress counted
    progress_m: np.ndarray | None = None  # (P,) m the forward progress the fitness counted (before the bonus)


def tilt_deg(quat: np.ndarray) -> np.ndarray:
    """Angle (deg) between a body's up axis and vertical, from quaternions (..., 4) [w, x, y, z]."""
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    zz = 1.0 - 2.0 * (q[..., 1] ** 2 + q[..., 2] ** 2)
    return np.degrees(np.arccos(np.clip(zz, -1.0, 1.0)))


MAX_SPEED = 30.0  # m/s; faster pelvis motion between frames means the simulation diverged
# m; the pelvis starts 0.99 m up and a skier cannot jump a metre on skis: higher, a contact blew up and threw it
# (seen: a bred two-axis skier launched at 24 m/s to 44 m, 54 m of "progress" in the air before its tilt said fallen)
MAX_HEIGHT = 2.0


def fallen_frames(
    x: np.ndarray,
    quat: np.ndarray,
    frame_dt: float,
    fall_deg: float = 80.0,
    t: np.ndarray | None = None,
    z: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(fallen, jump), both (P, F) bool, from pelvis x (P, F) m and quaternions (P, F, 4): a frame is fallen
    when the pelvis tilts more than ``fall_deg`` or the simulation diverged there (a ``jump``: non-finite
    values, the pelvis moving faster than ``MAX_SPEED`` since the previous frame, given its height ``z`` (P, F) m
    the pelvis higher than ``MAX_HEIGHT``, or, given the simulation
    times ``t`` (P, F) s, time not advancing by a frame: MuJoCo's reset of a diverged state (mj_checkPos,
    mj_checkVel, mj_checkAcc call mj_resetData) sets the time back to 0 and the pelvis back to its start,
    which a skier within ``MAX_SPEED * frame_dt`` of the start would pass unnoticed; and ``mujoco.rollout``
    stops stepping a trajectory at any MuJoCo warning (it repeats the last state), so in training every
    warning is a fall there, while a replay's step loop carries on through warnings other than a reset)."""
    x = np.asarray(x, dtype=np.float64)
    quat = np.nan_to_num(np.asarray(quat, dtype=np.float64), nan=0.0) + np.array([1e-12, 0, 0, 0])
    with np.errstate(invalid="ignore"):
        jump = np.abs(np.diff(x, axis=1, prepend=x[:, :1])) > MAX_SPEED * frame_dt
    if t is not None:
        t = np.asarray(t, dtype=np.float64)
        jump[:, 1:] |= ~(np.diff(t, axis=1) > 0.5 * frame_dt)
    if z is not None:
        with np.errstate(invalid="ignore"):
            jump |= ~(np.asarray(z, dtype=np.float64) <= MAX_HEIGHT)
    return (tilt_deg(quat) > fall_deg) | ~np.isfinite(x) | jump, jump


def score(
    x: np.ndarray,
    quat: np.ndarray,
    frame_dt: float,
    fall_deg: float = 80.0,
    bonus: float = 5.0,
    t: np.ndarray | None = None,
    z: np.ndarray | None = None,
    work: np.ndarray | None = None,
) -> Scores:
    """Fitness from pelvis x (P, F) m and quaternions (P, F, 4) sampled every ``frame_dt`` s (frame 0
    is the start), with the simulation times ``t`` (P, F) s and pelvis heights ``z`` (P, F) m where known. A frame where
    the simulation diverged (see :func:`fallen_frames`; MuJoCo resets a diverged simulation) counts as a fall there.
    Given the servos' work done by each frame ``work`` (P, F) J, ``work_J`` is that of the last frame whose progress
    counted (the one before the fall)."""
    fallen, jump = fallen_frames(x, quat, frame_dt, fall_deg, t, z)
    x = np.nan_to_num(np.asarray(x, dtype=np.float64))
    fell = fallen.any(axis=1)
    first = np.where(fell, fallen.argmax(axis=1), x.shape[1])  # first fallen frame
    step = np.maximum(np.diff(x, axis=1), 0.0)  # progress from frame f to f+1
    counts = np.arange(1, x.shape[1])[None, :] < first[:, None]  # frame f+1 before the fall
    progress = (step * counts).sum(axis=1)
    fitness = progress + np.where(fell, 0.0, bonus)
    last = np.where(jump.any(axis=1), np.maximum(first - 1, 0), x.shape[1] - 1)  # before a divergence
    rows = np.arange(x.shape[0])
    return Scores(
        fitness,
        fell,
        x[rows, last] - x[:, 0],
        np.minimum(first, x.shape[1] - 1) * frame_dt,
        None if work is None else np.asarray(work, dtype=np.float64)[rows, np.maximum(first - 1, 0)],
        progress,
    )


def quiet_warnings() -> None:
    """Silence MuJoCo's printed warnings (a diverging random gene prints one; :func:`score` counts it as a fall)."""
    mujoco.set_mju_user_warning(lambda msg: None)


class Evaluator:
    """Scores a generation of genes with ``mujoco.rollout`` over a thread pool, in chunks.

    genes (P, n, m) int degrees (m = 12, or 14 with the two-axis hip) -> :class:`Scores`. ``nthread`` defaults to the
    CPU count. The episode is simulated in chunks of ``chunk_seconds`` (rounded to whole frames; ``None``: one chunk);
    after each chunk the skiers that fell stop being simulated, since scoring stops at the fall. Each chunk starts from
    the previous chunk's full physics state, which continues the motion bit for bit (tests/skier/test_rollout.py), so
    the fitness does not depend on the chunking.
    """

    def __init__(
        self,
        params: SkierParams | None = None,
        seconds: float = 20.0,
        frame_dt: float = 0.02,
        *,
        fall_deg: float = 80.0,
        bonus: float = 5.0,
        tau: float = G.TAU,
        nthread: int | None = None,
        chunk_seconds: float | None = 2.0,
        skate_weight: float = 0.0,
        skate_min_yaw_deg: float = 10.0,
        effort_weight: float = 0.0,
        skate_max_yaw_deg: float = 180.0,
        effort_free_cot: float = 0.0,
    ):
        self.params = (params or SkierParams()).validate()
        self.model = build_model(self.params)
        self.dt = float(self.model.opt.timestep)
        self.nstep = int(round(seconds / self.dt))
        self.stride = max(1, int(round(frame_dt / self.dt)))
        self.frame_dt = self.stride * self.dt
        whole = -(-self.nstep // self.stride) * self.stride
        self.chunk = (
            whole
            if chunk_seconds is None
            else min(whole, self.stride * max(1, int(round(chunk_seconds / self.frame_dt))))
        )
        self.fall_deg, self.bonus, self.tau = fall_deg, bonus, tau
        self.skate_weight = float(skate_weight)
        self.skate_yaw_deg = (float(skate_min_yaw_deg), float(skate_max_yaw_deg))
        self.effort_weight, self.effort_free_cot = float(effort_weight), float(effort_free_cot)
        self._servos = effort.servo_columns(self.model)
        self.nthread = int(nthread or os.cpu_count() or 1)
        self.datas = [mujoco.MjData(self.model) for _ in range(self.nthread)]
        d = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, d)
        self.initial_state = np.empty(mujoco.mj_stateSize(self.model, STATE_SPEC))
        mujoco.mj_getState(self.model, d, self.initial_state, STATE_SPEC)
        self.terrain = self.params.ground()
        self.x0 = float(self.terrain.course(d.qpos[:3]))  # along the course, m
        self.z0 = float(self.terrain.clearance(d.qpos[:3]))  # above the ground, m
        self._act = actuator_order(self.model)
        quiet_warnings()
        self._pool = mj_rollout.Rollout(nthread=self.nthread) if self.nthread > 1 else None
        self.steps_simulated = 0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def controls(self, genes: np.ndarray) -> np.ndarray:
        ctrl = np.zeros((genes.shape[0], self.nstep, self.model.nu))
        ctrl[:, :, self._act] = G.controls(genes, self.nstep, self.dt, self.tau)
        return ctrl

    def _rollout(self, init: np.ndarray, ctrl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """States (B, K, nstate) after each of the K steps of controls ctrl (B, K, nu) from states init (B, nstate),
        and the sensor readings (B, K, nsensordata) of each step (:func:`animat.skier.model.add_ski_sensors`)."""
        if self._pool is not None:
            state, sensors = self._pool.rollout(self.model, self.datas, init, ctrl, nstep=ctrl.shape[1])
        else:
            state, sensors = mj_rollout.rollout(self.model, self.datas[0], init, ctrl, nstep=ctrl.shape[1])
        self.steps_simulated += ctrl.shape[0] * ctrl.shape[1]
        return state, sensors

    def states(self, genes: np.ndarray) -> np.ndarray:
        """(P, nstep, nstate) states after each step (full physics: time, qpos, qvel, ...), one unchunked rollout."""
        genes = np.asarray(genes)
        return self._rollout(np.tile(self.initial_state, (genes.shape[0], 1)), self.controls(genes))[0]

    def root(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pelvis position (..., 3) and quaternion (..., 4) from full-physics states (qpos starts at 1)."""
        return state[..., 1:4], state[..., 4:8]

    def evaluate(self, genes: np.ndarray) -> Scores:
        """Scores of genes (P, n, m); a fallen skier's ``net_forward_m`` is taken at the end of the chunk it fell in."""
        genes = np.asarray(genes)
        P = genes.shape[0]
        ctrl = self.controls(genes)
        nframe = self.nstep // self.stride
        x = np.full((P, nframe + 1), self.x0)  # frame f: the state after f * stride steps
        z = np.full((P, nframe + 1), self.z0)  # pelvis height above the ground, m
        quat = np.tile(self.initial_state[4:8], (P, nframe + 1, 1))
        t = self.initial_state[0] + self.frame_dt * np.arange(nframe + 1.0)[None].repeat(P, axis=0)  # simulation time s
        skating = bool(self.skate_weight)  # then the pelvis y (m) and the ski sensors per frame: for the push-offs
        y = np.zeros((P, nframe + 1)) if skating else None
        sensed = np.zeros((P, nframe + 1, self.model.nsensordata)) if skating else None
        work, done = np.zeros((P, nframe + 1)), np.zeros(P)  # J by each frame; by the last step simulated
        state = np.tile(self.initial_state, (P, 1))
        alive = np.arange(P)
        for k0 in range(0, self.nstep, self.chunk):
            k1 = min(k0 + self.chunk, self.nstep)
            st, sens = self._rollout(state[alive], ctrl[alive, k0:k1])
            state[alive] = st[:, -1]
            f0, f1 = k0 // self.stride + 1, k1 // self.stride + 1  # frames inside this chunk
            frames = st[:, self.stride - 1 :: self.stride][:, : f1 - f0]
            pos, q = self.root(frames)
            x[alive, f0:f1], z[alive, f0:f1], quat[alive, f0:f1], t[alive, f0:f1] = (
                self.terrain.course(pos),
                self.terrain.clearance(pos),
                q,
                frames[..., 0],
            )
            steps = effort.cumulative_work(effort.servo_power(sens, self._servos), self.dt, done[alive])
            work[alive, f0:f1], done[alive] = steps[:, self.stride - 1 :: self.stride][:, : f1 - f0], steps[:, -1]
            if skating:
                y[alive, f0:f1] = pos[..., 1]
                sensed[alive, f0:f1] = sens[:, self.stride - 1 :: self.stride][:, : f1 - f0]
            fell = fallen_frames(
                x[alive, :f1], quat[alive, :f1], self.frame_dt, self.fall_deg, t[alive, :f1], z[alive, :f1]
            )[0].any(axis=1)
            for i in alive[fell]:  # frozen from here (t keeps its frame times): the score stops at the fall anyway
                x[i, f1:], z[i, f1:], quat[i, f1:] = x[i, f1 - 1], z[i, f1 - 1], quat[i, f1 - 1]
            alive = alive[~fell]
            if alive.size == 0:
                break
        scores = score(x, quat, self.frame_dt, self.fall_deg, self.bonus, t, z, work)
        if skating:
            self._add_skating(scores, genes.shape[1] * self.tau, t, x, y, sensed)
        if self.effort_weight:
            charged = effort.effort_metres(scores.work_J, scores.progress_m, TOTAL_MASS, GRAVITY, self.effort_free_cot)
            scores.fitness -= self.effort_weight * charged
        return scores

    def _add_skating(self, scores: Scores, cycle: float, t, x, y, sensed) -> None:
        """Adds the skating term to the fitness of the skiers that did not fall, from the frames' times ``t``,
        pelvis ``x``, ``y`` (P, F) and sensor readings ``sensed`` (P, F, nsensordata) (keyframe cycle ``cycle`` s)."""
        for i in np.flatnonzero(~scores.fell):  # frames 1.. (frame 0, before any step, has no contact forces yet)
            force, yaw = ski_readings(sensed[i, 1:])
            found = pushoff.pushoffs(
                t[i, 1:], force, yaw, np.stack([x[i, 1:], y[i, 1:]], axis=-1), TOTAL_MASS * GRAVITY, cycle
            )
            scores.fitness[i] += self.skate_weight * pushoff.skating_progress(
                found, t[i, 1:], x[i, 1:], cycle / 2, *self.skate_yaw_deg
            )

    def __call__(self, genes: np.ndarray) -> Scores:
        return self.evaluate(genes)


def step_loop_states(model: mujoco.MjModel, genes: np.ndarray, nstep: int, tau: float = G.TAU) -> np.ndarray:
    """Reference (slow) path: a Python ``mj_step`` loop per gene; returns pelvis qpos (P, nstep, 7)."""
    d = mujoco.MjData(model)
    act = actuator_order(model)
    dt = float(model.opt.timestep)
    out = np.empty((len(genes), nstep, 7))
    for p, g in enumerate(genes):
        mujoco.mj_resetData(model, d)
        mujoco.mj_forward(model, d)
        ctrl = G.controls(g[None], nstep, dt, tau)[0]
        for k in range(nstep):
            d.ctrl[act] = ctrl[k]
            mujoco.mj_step(model, d)
            out[p, k] = d.qpos[:7]
    return out


def trajectory(
    params: SkierParams, gene: np.ndarray, seconds: float, frame_dt: float = 0.02, tau: float = G.TAU
) -> dict:
    """One skier's motion (Python step loop, same physics as the rollout) sampled every ``frame_dt`` s
    (rounded to whole physics steps: returned as ``frame_dt``): t (T,) s, root_pos (T, 3) m, root_quat (T, 4), qpos (T,
    nq), xpos (T, nbody, 3) m body origins, pole_tips (T, 8, 3) m (ends of left pole, left ski, right pole, right ski; a
    pole's tip then its hand end, a ski's front then its back), ski_forces (T, 2, 3) N (the ground's force on the left
    and right ski, world frame), servo_torque (T, nu) N m (each servo's torque, actuator order, over the step that
    ended at the frame; 0 at frame 0), work (T,) J (the servos' mechanical work by the frame,
    :mod:`animat.skier.effort`, summed as in :class:`Evaluator`), body_names, course (T,) m the pelvis's distance
    along the course and clearance (T,) m its height above the ground (:class:`animat.skier.terrain.Terrain`; on flat
    snow its x and z)."""
    model = build_model(params)
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    dt = float(model.opt.timestep)
    nstep = int(round(seconds / dt))
    stride = max(1, int(round(frame_dt / dt)))
    act = actuator_order(model)
    ctrl = G.controls(np.asarray(gene)[None], nstep, dt, tau)[0]
    skis = ski_geoms(model)
    ts, qpos, xpos, poles, forces = (
        [d.time],
        [d.qpos.copy()],
        [d.xpos.copy()],
        [_pole_tips(model, d)],
        [ski_forces(model, d, skis)],
    )
    sensed = np.zeros((nstep + 1, model.nsensordata))  # row k + 1: the readings of step k (row 0: frame 0's zeros)
    for k in range(nstep):
        d.ctrl[act] = ctrl[k]
        mujoco.mj_step(model, d)
        sensed[k + 1] = d.sensordata
        if (k + 1) % stride == 0:
            ts.append(d.time)
            qpos.append(d.qpos.copy())
            xpos.append(d.xpos.copy())
            poles.append(_pole_tips(model, d))
            forces.append(ski_forces(model, d, skis))
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(model.nbody)]
    qpos = np.array(qpos)
    ground = params.ground()
    servos = effort.servo_columns(model)
    work = np.concatenate([[0.0], effort.cumulative_work(effort.servo_power(sensed[1:], servos), dt)])
    return {
        "t": np.array(ts),
        "frame_dt": stride * dt,
        "root_pos": qpos[:, :3],
        "root_quat": qpos[:, 3:7],
        "qpos": qpos,
        "xpos": np.array(xpos),
        "pole_tips": np.array(poles),
        "ski_forces": np.array(forces),
        "servo_torque": sensed[::stride, servos[0]],
        "work": work[::stride],
        "body_names": names,
        "course": ground.course(qpos[:, :3]),
        "clearance": ground.clearance(qpos[:, :3]),
    }


def ski_forces(model: mujoco.MjModel, d: mujoco.MjData, skis: list[set[int]]) -> np.ndarray:
    """(len(skis), 3) N: the total contact force of the world on each set of geoms in ``skis`` (a ski, with its
    wheels on moguls: :func:`animat.skier.terrain.ski_geoms`), world frame (a contact's frame has its normal,
    pointing from geom1 to geom2, as its first row)."""
    out = np.zeros((len(skis), 3))
    f = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        for k, g in enumerate(skis):
            if c.geom1 in g or c.geom2 in g:
                mujoco.mj_contactForce(model, d, i, f)
                world = c.frame.reshape(3, 3).T @ f[:3]  # on geom2
                out[k] += world if c.geom2 in g else -world
    return out


def _pole_tips(model: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    """(8, 3) m: the two ends of the left pole, left ski, right pole, right ski (a pole's tip then its hand end,
    a ski's front then its back: the capsule's axis points from its ``fromto``'s second point to its first)."""
    out = []
    for side in ("left", "right"):
        for g in (f"{side}_pole", f"{side}_ski"):
            gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, g)
            c, axis, half = d.geom_xpos[gid], d.geom_xmat[gid].reshape(3, 3)[:, 2], model.geom_size[gid, 1]
            out.extend([c - axis * half, c + axis * half])
    return np.array(out)
