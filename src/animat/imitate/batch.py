"""``ImitateBatch``: N humanoids tracking a clip, stepped together (the training path of :mod:`animat.imitate.vecenv`).

The same environment as :class:`~animat.imitate.env.ImitateEnv` (observation, action, the paper's
r_I, reference-state starts, falls, the episode cap; see its docstring), for N characters at once:
each has its own ``MjData`` (so each keeps its own solver warm start and contacts, exactly as one
``ImitateEnv`` does), and a step is ``mj_step(nstep=substeps)`` plus the kinematic stages the
reward needs, run for a share of the characters on each of ``threads`` threads (MuJoCo's Python
bindings release the GIL inside every ``mj_*`` call, so the threads run the physics in parallel);
the reference poses (:meth:`~animat.character.clip.Clip.sample_batch`), actions, observations,
rewards and terminations are NumPy over the N axis. Per character it yields the states one
``ImitateEnv`` with the same seed and actions reaches, bit for bit, and the same observations and
rewards to float rounding (``tests/imitate/test_batch.py``).

Differences from ``ImitateEnv``: the reward is r_I only (``paper`` variant; no task goal), the
servos are MuJoCo's (``mujoco_servos=True``), and it adds the pose termination ``pose_termination``
(m; 0: off, as ``ImitateEnv``'s option of the same name): an episode also ends when a key body
(:data:`KEY_BODIES`) is farther than that from the reference's, MimicKit's ``pose_termination_dist``.
``target_obs`` (off by default, as ``ImitateEnv``'s option) appends :func:`target_observation`.
``clips`` and ``multi_clip``: several clips, as ``ImitateEnv``'s (:mod:`animat.imitate.skills`; a selector's
skill is drawn per reset from each character's generator, as ``ImitateEnv`` draws it).
No auto-reset here: :meth:`ImitateBatch.step` reports ends, :meth:`ImitateBatch.reset` restarts
the characters it is given.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np
from gymnasium.utils import seeding

from animat import quaternions as quat
from animat.character.clip import HINGE_AXIS, Clip, MotionState
from animat.character.model import CONTROL_HZ, SUBSTEPS, Layout, build_spec
from animat.errors import ConfigError
from animat.imitate.reward import PRESETS, RewardConfig
from animat.imitate.skills import MODES, clip_phase, phase_times, sample_skills

FALL_BODIES = ("root", "chest", "neck")  # geoms whose floor contact is a fall (ImitateEnv's)
KEY_BODIES = ("neck", "right_ankle", "right_wrist", "left_ankle", "left_wrist")  # pose termination: head, feet, hands


def physics_timestep(substeps: int) -> float:
    """s: the MuJoCo timestep of ``substeps`` physics steps per 30 Hz control step."""
    return 1.0 / (CONTROL_HZ * int(substeps))


def batch_model(substeps: int, joint_limits: bool) -> mujoco.MjModel:
    """The humanoid at ``substeps`` physics steps per control step, with one MuJoCo contact sensor per fall geom
    (:data:`FALL_BODIES`, ``data="found"``: 1 while it touches the floor, else 0). Sensors only read the state,
    so it moves exactly as ``ImitateEnv``'s model; ``sensordata`` after ``mj_step`` holds the contacts of the last
    substep's start, those ``ImitateEnv`` reads from ``MjData.contact`` (without building that list each step)."""
    spec = build_spec(timestep=physics_timestep(substeps), joint_limits=joint_limits)
    found, no_reduce, one = int(mujoco.mjtConDataField.mjCONDATA_FOUND), 0, 1
    for g in FALL_BODIES:
        spec.add_sensor(
            name=f"fall_{g}",
            type=mujoco.mjtSensor.mjSENS_CONTACT,
            objtype=mujoco.mjtObj.mjOBJ_GEOM,
            objname=g,
            reftype=mujoco.mjtObj.mjOBJ_GEOM,
            refname="floor",
            intprm=[1 << found, no_reduce, one],
        )
    return spec.compile()


def pose_arrays(state: MotionState, layout: Layout, qpos0: np.ndarray, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """``(qpos (N, nq), qvel (N, nv))`` of a batched clip state, as :func:`~animat.character.model.set_pose`
    writes them (hinges: the angle about ``HINGE_AXIS``; quaternions normalised) over ``qpos0``."""
    n = state.root_pos.shape[0]
    qpos, qvel = np.tile(qpos0, (n, 1)), np.zeros((n, nv))
    h, b = np.nonzero(layout.hinge)[0], layout.balls
    jq, jw = state.joint_quats, state.joint_angvel
    qpos[:, 0:3], qpos[:, 3:7] = state.root_pos, quat.normalize(state.root_quat)
    qvel[:, 0:3], qvel[:, 3:6] = state.root_vel, state.root_angvel
    qpos[:, layout.qpos[h]] = quat.angle_about(jq[:, h], HINGE_AXIS)
    qvel[:, layout.dof[h]] = jw[:, h] @ HINGE_AXIS
    qpos[:, layout.ball_qpos] = quat.normalize(jq[:, b])
    qvel[:, layout.ball_dof] = jw[:, b]
    return qpos, qvel


def joint_rotations(qpos: np.ndarray, qvel: np.ndarray, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """``(quats (N, 13, 4), angvel (N, 13, 3))``: the root's world rotation and angular velocity (root
    frame) then the 12 joints' (clip order; hinges as rotations about ``HINGE_AXIS``), read from
    ``qpos``/``qvel`` as :func:`~animat.character.model.get_pose` reads them."""
    n = qpos.shape[0]
    jq, jw = np.empty((n, 12, 4)), np.empty((n, 12, 3))
    h, b = np.nonzero(layout.hinge)[0], layout.balls
    jq[:, h] = quat.about_axis(HINGE_AXIS, qpos[:, layout.qpos[h]])
    jw[:, h] = qvel[:, layout.dof[h]][..., None] * HINGE_AXIS
    jq[:, b] = qpos[:, layout.ball_qpos]
    jw[:, b] = qvel[:, layout.ball_dof]
    return np.concatenate([qpos[:, None, 3:7], jq], axis=1), np.concatenate([qvel[:, None, 3:6], jw], axis=1)


def target_observation(root_pos, root_quat, ref_root_pos, ref_root_quat, ref_ends, inv_heading=None) -> np.ndarray:
    """(N, 7 + 3E) where the reference character is, seen from the simulated one (MimicKit's DeepMimic ``tar_obs``,
    one step: ``enable_tar_obs``): the reference's root position (m) and hands and feet ``ref_ends (N, E, 3)`` (m)
    relative to the character's root ``root_pos (N, 3)``, and the reference's root orientation ``ref_root_quat
    (N, 4)`` (w x y z), all in the character's heading frame (its root's yaw ``root_quat (N, 4)`` removed).
    The paper's r_e and r_c and the pose termination compare world positions, so a policy that cannot see how
    far it has drifted from the reference loses them slowly over a long episode; with this it can steer back.
    ``inv_heading (N, 4)``: the inverse of ``root_quat``'s heading, where the caller has it already."""
    root_pos, ref_ends = np.asarray(root_pos), np.asarray(ref_ends)
    inv = quat.conj(quat.heading(np.asarray(root_quat))) if inv_heading is None else inv_heading
    return np.concatenate(
        [
            quat.rotate(inv, np.asarray(ref_root_pos) - root_pos),
            quat.mul(inv, np.asarray(ref_root_quat)),
            quat.rotate(inv[:, None], ref_ends - root_pos[:, None]).reshape(len(root_pos), -1),
        ],
        axis=1,
    )


def paper_reward(ref_q, ref_w, ref_ends, ref_com, q, w, ends, com, cfg: RewardConfig = PRESETS["paper"]) -> np.ndarray:
    """(N,) r_I of the paper (:mod:`animat.imitate.reward`, ``variant == "paper"``) over a batch: rotations
    ``(N, 13, 4)``, angular velocities ``(N, 13, 3)`` rad/s, end effectors ``(N, E, 3)`` m, centres of mass
    ``(N, 3)`` m, reference first."""
    terms = {
        "pose": np.exp(-cfg.pose_scale * np.sum(quat.angle_between(ref_q, q) ** 2, axis=1)),
        "vel": np.exp(-cfg.vel_scale * np.sum((ref_w - w) ** 2, axis=(1, 2))),
        "end": np.exp(-cfg.end_scale * np.sum((ref_ends - ends) ** 2, axis=(1, 2))),
        "com": np.exp(-cfg.com_scale * np.sum((ref_com - com) ** 2, axis=1)),
        "root": 1.0,
    }
    weights = {"pose": cfg.pose_w, "vel": cfg.vel_w, "end": cfg.end_w, "com": cfg.com_w, "root": cfg.root_w}
    total = sum(weights.values())
    if total <= 0:
        raise ConfigError("reward weights pose_w + vel_w + end_w + com_w + root_w must be > 0")
    return sum(weights[k] * terms[k] for k in weights) / total


def _check_batch(reward: RewardConfig, n: int, threads: int, substeps: int, multi_clip: str) -> None:
    """ConfigError in one line for what :class:`ImitateBatch` cannot step: another reward than the paper's r_I,
    fewer than one character, thread or substep, an unknown multi_clip mode."""
    if reward.variant != "paper" or reward.w_goal > 0:
        raise ConfigError(
            "the batched environments compute the paper's r_I only (reward preset 'paper', no goal); got "
            f"variant {reward.variant!r}, w_goal {reward.w_goal}"
        )
    if int(n) < 1 or int(threads) < 1 or int(substeps) < 1:
        raise ConfigError(f"ImitateBatch needs n, threads and substeps >= 1, got {n}, {threads}, {substeps}")
    if multi_clip not in MODES:
        raise ConfigError(f"multi_clip must be one of {list(MODES)}, got {multi_clip!r}")


class ImitateBatch:
    """N characters on one clip; see the module docstring. ``seed``: character i's generator is seeded
    with ``seed + i`` (Gymnasium's, as ``ImitateEnv.reset(seed=seed + i)``); None: unseeded."""

    def __init__(
        self,
        clip: Clip,
        n: int,
        *,
        reward: RewardConfig = PRESETS["paper"],
        rsi: bool = True,
        early_termination: bool = True,
        max_seconds: float = 10.0,
        hold_seconds: float = 0.0,
        residual: bool = False,
        joint_limits: bool = False,
        substeps: int = SUBSTEPS,
        pose_termination: float = 0.0,
        target_obs: bool = False,
        threads: int = 1,
        seed: int | None = None,
        clips: list[Clip] | None = None,
        multi_clip: str = "selector",
    ):
        _check_batch(reward, n, threads, substeps, multi_clip)
        self.clips = tuple(clips) if clips else (clip,)
        self.selector = bool(clips) and multi_clip == "selector"
        self.max_clips = bool(clips) and multi_clip == "max" and len(self.clips) > 1
        self.clip, self.n, self.cfg, self.substeps = self.clips[0], int(n), reward, int(substeps)
        self._cycles = np.array([c.cycle_seconds for c in self.clips])  # s
        self._one_shot = np.array([c.loop != "wrap" for c in self.clips])
        self.skill = np.zeros(self.n, int)  # each character's clip (index into clips)
        self.rsi, self.early_termination, self.max_seconds, self.residual = (
            rsi,
            early_termination,
            float(max_seconds),
            residual,
        )
        self.pose_termination, self.target_obs = float(pose_termination), bool(target_obs)
        self.hold_seconds = float(hold_seconds)  # a one-shot clip's last pose held this long (animat.imitate.skills)
        self.model = batch_model(self.substeps, joint_limits)
        self._datas(seed)
        self._state_arrays()
        self.threads = min(int(threads), self.n)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="imitate-batch") if self.threads > 1 else None
        self.action_size = 8 * 3 + 4
        self.observation_size = int(self.reset().shape[1])

    def _datas(self, seed: int | None) -> None:
        """MuJoCo data of each character, of its reference and (multi_clip "max") of the other clips' references;
        each character's generator; the body ids and actuators the step reads; the observation's layout."""
        m = self.model
        self.layout = lay = Layout.of(m)
        self.datas = [mujoco.MjData(m) for _ in range(self.n)]
        self.refs = [mujoco.MjData(m) for _ in range(self.n)]
        k = len(self.clips) - 1 if self.max_clips else 0  # multi_clip "max": the other clips' references
        self.alt_refs = [[mujoco.MjData(m) for _ in range(self.n)] for _ in range(k)]
        self._alt_qpos, self.alt_xpos = np.zeros((k, self.n, m.nq)), np.zeros((k, self.n, m.nbody, 3))
        self.alt_com = np.zeros((k, self.n, 3))
        self.rngs = [seeding.np_random(None if seed is None else seed + i)[0] for i in range(self.n)]
        body = lambda name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)  # noqa: E731
        self._ends, self._keys = lay.end_effector_bodies, np.array([body(b) for b in KEY_BODIES])
        self._hinge_act, self._ball_act = lay.actuator[np.nonzero(lay.hinge)[0]], lay.ball_actuators.ravel()
        self._index()

    def _state_arrays(self) -> None:
        """Per character, written by the threads: state, kinematics of the state and of its reference."""
        m = self.model
        self.qpos, self.qvel = np.zeros((self.n, m.nq)), np.zeros((self.n, m.nv))
        self.xpos, self.ref_xpos = np.zeros((self.n, m.nbody, 3)), np.zeros((self.n, m.nbody, 3))  # m, world
        self.com, self.ref_com = np.zeros((self.n, 3)), np.zeros((self.n, 3))  # m, whole-body centre of mass
        self.fallen = np.zeros(self.n, bool)  # a fall geom touches the floor (its contact sensor, batch_model)
        self._ctrl = np.zeros((self.n, m.nu))
        self.t, self.t0 = np.zeros(self.n), np.zeros(self.n)
        self._ref_qpos, self._start_qvel = np.zeros((self.n, m.nq)), np.zeros((self.n, m.nv))

    def _index(self) -> None:
        """Where each joint's entries go in the observation and the action (ImitateEnv's layout)."""
        qi, ai, vi, ri, bi, hi, a, v, i = [], [], [], [], [], [], 0, 0, 0
        for hinge in self.layout.hinge:
            if hinge:
                ai.append(a), ri.append(v), hi.append(i)
                a, v, i = a + 1, v + 1, i + 1
            else:
                qi.append(list(range(a, a + 4))), vi.append(list(range(v, v + 3))), bi.append(list(range(i, i + 3)))
                a, v, i = a + 4, v + 3, i + 3
        self._quat_idx, self._angle_idx, self._vec_idx, self._rate_idx = (
            np.array(qi),
            np.array(ai),
            np.array(vi),
            np.array(ri),
        )
        self._act_ball_idx, self._act_hinge_idx = np.array(bi), np.array(hi)
        self._joint_obs_size, self._vel_obs_size = a, v

    # ---------------------------------------------------------------- threads
    def _run(self, fn, idx: np.ndarray) -> None:
        """``fn(i)`` for every character in ``idx``, shared out over the threads one character at a time: each
        thread takes the next character left (``next`` on the shared iterator is atomic under the GIL), so
        a thread held up elsewhere or a costly character (many contacts) leaves at most one character's
        work to the end of the step, not a fixed chunk's."""
        if self._pool is None or idx.size < 2:
            for i in idx:
                fn(int(i))
            return
        todo = iter(idx.tolist())
        for f in [self._pool.submit(lambda: [fn(i) for i in todo]) for _ in range(min(self.threads, idx.size))]:
            f.result()

    def _read(self, i: int) -> None:
        """Copy character i's state and kinematics (and its reference's, posed from ``_ref_qpos[i]``) into the batch
        arrays."""
        m, d, r = self.model, self.datas[i], self.refs[i]
        r.qpos[:] = self._ref_qpos[i]
        mujoco.mj_kinematics(m, r)
        mujoco.mj_comPos(m, r)
        root = self.layout.root_body
        self.qpos[i], self.qvel[i], self.xpos[i], self.com[i] = d.qpos, d.qvel, d.xpos, d.subtree_com[root]
        self.ref_xpos[i], self.ref_com[i] = r.xpos, r.subtree_com[root]
        for j, refs in enumerate(self.alt_refs):
            a = refs[i]
            a.qpos[:] = self._alt_qpos[j, i]
            mujoco.mj_kinematics(m, a)
            mujoco.mj_comPos(m, a)
            self.alt_xpos[j, i], self.alt_com[j, i] = a.xpos, a.subtree_com[root]
        self.fallen[i] = d.sensordata.any()  # the contacts of the last substep's start (ImitateEnv's)

    def _advance(self, i: int) -> None:
        m, d = self.model, self.datas[i]
        d.ctrl[:] = self._ctrl[i]
        mujoco.mj_step(m, d, nstep=self.substeps)
        # positions and centre of mass of the state reached (mj_step leaves them from its last substep's start)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        self._read(i)

    def _restart(self, i: int) -> None:
        """Character i at the reference state ``_ref_qpos[i]``, ``_start_qvel[i]``."""
        m, d = self.model, self.datas[i]
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = self._ref_qpos[i], self._start_qvel[i]
        mujoco.mj_forward(m, d)
        self._read(i)

    # ---------------------------------------------------------------- API
    def reset(self, idx: np.ndarray | None = None, seeds: list[int | None] | None = None) -> np.ndarray:
        """Restart characters ``idx`` (default all) at reference states (random clip times with ``rsi``),
        reseeding character ``idx[k]`` with ``seeds[k]`` where given; returns every character's observation (N, D)."""
        idx = np.arange(self.n) if idx is None else np.asarray(idx, dtype=int)
        for k, i in enumerate(idx):
            if seeds is not None and seeds[k] is not None:
                self.rngs[i] = seeding.np_random(int(seeds[k]))[0]
            if self.selector and len(self.clips) > 1:
                self.skill[i] = int(self.rngs[i].integers(len(self.clips)))
            self.t0[i] = float(self.rngs[i].uniform(0.0, self._cycles[self.skill[i]])) if self.rsi else 0.0
        self.t[idx] = self.t0[idx]
        if idx.size:
            self._ref_qpos[idx], self._start_qvel[idx] = pose_arrays(
                sample_skills(self.clips, self.skill[idx], self.t[idx]), self.layout, self.model.qpos0, self.model.nv
            )
            self._pose_alt(idx)
            self._run(self._restart, idx)
        return self.observations()

    def observations(self, rotations: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(N, D) float32: ImitateEnv's observation of each character's current state (``rotations``: its
        :func:`joint_rotations`, if already at hand)."""
        qpos, qvel, n = self.qpos, self.qvel, self.n
        q, w = rotations or joint_rotations(qpos, qvel, self.layout)
        inv_heading = quat.conj(quat.heading(q[:, 0]))
        h = self.layout.hinge
        joints, vels = np.empty((n, self._joint_obs_size)), np.empty((n, self._vel_obs_size))
        joints[:, self._quat_idx] = q[:, 1:][:, ~h]
        joints[:, self._angle_idx] = quat.angle_about(q[:, 1:][:, h], HINGE_AXIS)
        vels[:, self._vec_idx] = w[:, 1:][:, ~h]
        vels[:, self._rate_idx] = w[:, 1:][:, h] @ HINGE_AXIS
        cycle = self._cycles[self.skill]
        ends = quat.rotate(inv_heading[:, None], self.xpos[:, self._ends] - qpos[:, None, 0:3]).reshape(n, -1)
        parts = [
            qpos[:, 2:3],
            quat.mul(inv_heading, q[:, 0]),
            quat.rotate(inv_heading, qvel[:, 0:3]),
            qvel[:, 3:6],
            joints,
            vels,
            ends,
            clip_phase(self.t, cycle, self._one_shot[self.skill])[:, None],
        ]
        if self.target_obs:
            ref = self._ref_qpos
            parts.append(
                target_observation(
                    qpos[:, 0:3], q[:, 0], ref[:, 0:3], ref[:, 3:7], self.ref_xpos[:, self._ends], inv_heading
                )
            )
        if self.selector:
            parts.append(np.eye(len(self.clips))[self.skill])
        return np.concatenate(parts, axis=1).astype(np.float32)

    def _pose_alt(self, idx: np.ndarray) -> list:
        """multi_clip "max": pose the other clips' references of characters ``idx`` at clip 0's phase
        (``_alt_qpos``; :mod:`animat.imitate.skills`); returns their ``(qpos, qvel)`` per clip."""
        if not self.max_clips:
            return []
        poses = []
        for j, (clip, t) in enumerate(zip(self.clips[1:], phase_times(self.clips, self.t[idx])[1:])):
            poses.append(pose_arrays(clip.sample_batch(t), self.layout, self.model.qpos0, self.model.nv))
            self._alt_qpos[j, idx] = poses[-1][0]
        return poses

    def _best_clip(self, r: np.ndarray, q: np.ndarray, w: np.ndarray, alt: list) -> tuple[np.ndarray, np.ndarray]:
        """multi_clip "max": ``(r_I (N,), key error (N,) m)``: the largest r_I over the clips (``r``: clip 0's;
        ``q, w``: the characters' :func:`joint_rotations`; ``alt``: :meth:`_pose_alt`'s) and the smallest error."""
        ends, rewards, errors = self._ends, [r], [self.key_error()]
        for j, (qpos, qvel) in enumerate(alt):
            ref_q, ref_w = joint_rotations(qpos, qvel, self.layout)
            ref_ends, com = self.alt_xpos[j][:, ends], self.alt_com[j]
            rewards.append(paper_reward(ref_q, ref_w, ref_ends, com, q, w, self.xpos[:, ends], self.com, self.cfg))
            errors.append(self.key_error(self.alt_xpos[j]))
        return np.max(rewards, axis=0), np.min(errors, axis=0)

    def controls(self, actions: np.ndarray, ref: MotionState) -> np.ndarray:
        """(N, nu) servo targets of actions (N, 28) rad (clipped to ±π; ``residual``: offsets from the
        clip's pose ``ref`` at the end of this control step), as ``ImitateEnv`` sets them."""
        a = np.clip(np.asarray(actions, dtype=np.float64), -np.pi, np.pi)
        hinge, ball = a[:, self._act_hinge_idx], a[:, self._act_ball_idx]
        if self.residual:
            ref, h = ref.joint_quats, self.layout.hinge
            hq = quat.about_axis(HINGE_AXIS, quat.angle_about(ref[:, h], HINGE_AXIS) + hinge)
            bq = quat.mul(ref[:, ~h], quat.exp(ball))
        else:
            hq, bq = quat.about_axis(HINGE_AXIS, hinge), quat.exp(ball)
        ctrl = np.zeros((self.n, self.model.nu))
        ctrl[:, self._hinge_act] = quat.angle_about(hq, HINGE_AXIS)
        ctrl[:, self._ball_act] = quat.log(bq).reshape(self.n, -1)
        return ctrl

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """One control step of every character: ``(obs (N, D) float32, reward (N,), terminated (N,), truncated (N,),
        nonfinite (N,), r_I (N,))``; the reward is r_I except on a terminated step, which earns 0 (a fall, a
        pose error past ``pose_termination``, or a physics blow-up, whose observation and r_I are zeros)."""
        self.t += (
            1.0 / CONTROL_HZ
        )  # (ImitateEnv's residual targets are its clip at t + 1/30 before this: the same numbers)
        ref = sample_skills(self.clips, self.skill, self.t)
        self._ctrl[:] = self.controls(actions, ref)
        self._ref_qpos[:], ref_qvel = pose_arrays(ref, self.layout, self.model.qpos0, self.model.nv)
        alt = self._pose_alt(np.arange(self.n))
        self._run(self._advance, np.arange(self.n))
        nonfinite = ~(np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1))
        with np.errstate(invalid="ignore", over="ignore"):
            q, w = joint_rotations(self.qpos, self.qvel, self.layout)
            ref_q, ref_w = joint_rotations(self._ref_qpos, ref_qvel, self.layout)
            r = paper_reward(
                ref_q,
                ref_w,
                self.ref_xpos[:, self._ends],
                self.ref_com,
                q,
                w,
                self.xpos[:, self._ends],
                self.com,
                self.cfg,
            )
            key_error = None
            if self.max_clips:
                r, key_error = self._best_clip(r, q, w, alt)
            terminated = self.early_termination & self.fallen
            if self.pose_termination > 0:
                terminated |= (self.key_error() if key_error is None else key_error) > self.pose_termination
            obs = self.observations((q, w))
        terminated |= nonfinite
        obs[nonfinite] = 0.0
        r = np.where(nonfinite, 0.0, r)
        clip_end = self._cycles[self.skill] + self.hold_seconds  # a one-shot clip's end, its last pose held after
        ended = self._one_shot[self.skill] & (self.t >= clip_end - 1e-9)
        truncated = ((self.t - self.t0 >= self.max_seconds - 1e-9) | ended) & ~nonfinite
        return obs, np.where(terminated, 0.0, r), terminated, truncated, nonfinite, r

    def key_error(self, ref_xpos: np.ndarray | None = None) -> np.ndarray:
        """(N,) m: the largest distance of a key body (:data:`KEY_BODIES`) from its reference position (in
        ``ref_xpos (N, nbody, 3)``, default the reference's)."""
        ref = self.ref_xpos if ref_xpos is None else ref_xpos
        return np.linalg.norm(self.xpos[:, self._keys] - ref[:, self._keys], axis=2).max(axis=1)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
