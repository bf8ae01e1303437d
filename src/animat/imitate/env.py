"""``ImitateEnv``: the humanoid tracking a clip, as a Gymnasium environment (policy at 30 Hz).

Observation (float32): root height (m); root orientation relative to its heading (yaw removed,
w x y z); root linear velocity in the heading frame (m/s); root angular velocity (rad/s, root
frame); the 12 joints' rotations (ball: quaternion, hinge: angle) and velocities (rad/s); hands
and feet relative to the root in the heading frame (m); the clip phase in [0, 1); with a task goal
(``goal``, see :mod:`animat.imitate.goal`) also the target direction in the heading frame (x, y) and
the target speed (m/s).
Action (float32, rad): PD targets — a rotation vector per ball joint (8 × 3), an angle per hinge
(4), in clip joint order; clipped to ±π. With ``residual=True`` (off by default; DeepMimic's
policies send absolute targets) the action is an offset from the clip's pose at the end of the
control step instead (ball: ``q_ref ⊗ exp(a)``, hinge: ``θ_ref + a``), so a zero action tracks the
clip open-loop — a much easier start for learning. Reward: r_I of :mod:`animat.imitate.reward` against the
clip at the new time; with a goal, ``w_I r_I + w_G r_G`` (weights from the reward config, r_G from the
centre-of-mass velocity; ``info`` holds ``r_imitation`` and ``r_goal``; ``nonfinite`` marks a step
whose physics blew up, ending the episode with reward 0). Reference state initialisation (``rsi``:
start at a random clip time) and early termination (``early_termination``: the root, chest or neck
touches the floor) can be switched off. Episodes are truncated after ``max_seconds``. The ball joints' servos run inside
MuJoCo (``mujoco_servos=True``, default; one ``mj_step`` call per control step) or as the Python
quaternion PD of :func:`~animat.character.model.apply_ball_pd` each physics step (the reference,
slower: ``benchmarks/imitate_env.py`` measures it); see :mod:`animat.character.model`. ``joint_limits``
adds the per-axis ball-joint limits of DeepMimic's character file
(:func:`~animat.character.model.add_ball_limits`; off by default). ``substeps``: physics steps per
control step (default 20: 600 Hz). ``pose_termination`` (m; 0, the default: off): an episode also
ends when a key body (:data:`~animat.imitate.batch.KEY_BODIES`: head, hands, feet) is farther than
that from the reference's (MimicKit's ``pose_termination_dist``). ``target_obs`` (off by default) appends
where the reference is, seen from the character (:func:`~animat.imitate.batch.target_observation`: its root
position and orientation, hands and feet, in the heading frame). ``clips`` (several clips, in place of
``clip``) with ``multi_clip`` ``"selector"`` (the skill drawn per reset, or fixed by ``reset(options={"skill":
k})`` or the ``command`` attribute; its one-hot ends the observation) or ``"max"`` (the largest of the clips'
rewards): :mod:`animat.imitate.skills`, which also states the end of a one-shot clip's episode (truncated at
the clip's end). :mod:`animat.imitate.batch` steps many of these at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import mujoco
import numpy as np

from animat import quaternions as quat
from animat.character.clip import HINGE_AXIS, Clip
from animat.character.demo import demo_clip
from animat.character.model import (
    CONTROL_HZ,
    SUBSTEPS,
    Layout,
    apply_ball_pd,
    build_model,
    kinematics,
    pose_kinematics,
    set_pd_targets,
    set_pose,
)
from animat.errors import ConfigError
from animat.imitate.batch import FALL_BODIES, KEY_BODIES, physics_timestep, target_observation
from animat.imitate.goal import GoalConfig, draw_goal, heading_reward
from animat.imitate.reward import PRESETS, RewardConfig, imitation_reward, preset, total_reward
from animat.imitate.skills import MODES, clip_ended, clip_phase, one_hot, phase_times


class ImitateEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        clip: Clip | None = None,
        reward: RewardConfig = PRESETS["paper"],
        rsi: bool = True,
        early_termination: bool = True,
        max_seconds: float = 10.0,
        hold_seconds: float = 0.0,
        mujoco_servos: bool = True,
        residual: bool = False,
        goal: GoalConfig | None = None,
        joint_limits: bool = False,
        substeps: int = SUBSTEPS,
        pose_termination: float = 0.0,
        target_obs: bool = False,
        clips: Sequence[Clip] | None = None,
        multi_clip: str = "selector",
    ):
        if multi_clip not in MODES:
            raise ConfigError(f"multi_clip must be one of {list(MODES)}, got {multi_clip!r}")
        self.clips = tuple(clips) if clips else (clip or demo_clip(),)
        self.selector = bool(clips) and multi_clip == "selector"
        self.max_clips = bool(clips) and multi_clip == "max" and len(self.clips) > 1
        self.clip, self.skill, self.command = self.clips[0], 0, None  # command: a fixed skill for every reset
        if goal is not None and not reward.w_goal > 0:
            raise ConfigError(
                "a task goal needs a reward with w_goal > 0 (the paper: w_imitation 0.7, w_goal 0.3), got w_goal "
                f"{reward.w_goal}"
            )
        self.goal_cfg, self.goal = goal, None
        self._clip_speed = float(np.linalg.norm(self.clip.root_advance)) / self.clip.cycle_seconds
        self.cfg, self.rsi, self.early_termination, self.max_seconds = reward, rsi, early_termination, max_seconds
        self.hold_seconds = float(hold_seconds)  # a one-shot clip's last pose held this long (animat.imitate.skills)
        self.residual, self.substeps, self.pose_termination = residual, int(substeps), float(pose_termination)
        self.target_obs = bool(target_obs)
        self.model = build_model(
            timestep=physics_timestep(substeps), ball_actuators=mujoco_servos, joint_limits=joint_limits
        )
        self.data = mujoco.MjData(self.model)
        self.ref_data = mujoco.MjData(self.model)
        self.alt_data = mujoco.MjData(self.model)  # multi_clip "max": the other clips' references
        self.layout = Layout.of(self.model)
        self.fall_geoms = {mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in FALL_BODIES}
        self.floor = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        self._fall_geom_ids = np.array(sorted(self.fall_geoms))
        self._key_bodies = np.array([mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, n) for n in KEY_BODIES])
        self._index_obs()
        self.action_space = gym.spaces.Box(-np.pi, np.pi, shape=(int(8 * 3 + 4),), dtype=np.float32)
        self.t = self.t0 = 0.0
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(self._obs().shape[0],), dtype=np.float32)

    def _obs(self, k=None, ref=None) -> np.ndarray:
        """The observation of the state ``k`` (its kinematics; default: computed) against the reference ``ref`` at
        the current time (its kinematics; default: posed here when ``target_obs`` needs it)."""
        k = k or kinematics(self.model, self.data, self.layout)
        s, h = k.state, self.layout.hinge
        inv_heading = quat.conj(quat.heading(s.root_quat))
        joints = np.empty(self._joint_obs_size)
        joints[self._quat_idx] = s.joint_quats[~h]
        joints[self._angle_idx] = quat.angle_about(s.joint_quats[h], HINGE_AXIS)
        vels = np.empty(self._vel_obs_size)
        vels[self._vec_idx] = s.joint_angvel[~h]
        vels[self._rate_idx] = s.joint_angvel[h] @ HINGE_AXIS
        phase = float(clip_phase(self.t, self.clip.cycle_seconds, self.clip.loop != "wrap"))
        parts = [
            [s.root_pos[2]],
            quat.mul(inv_heading, s.root_quat),
            quat.rotate(inv_heading, s.root_vel),
            s.root_angvel,
            joints,
            vels,
            quat.rotate(inv_heading, k.end_effectors - s.root_pos).ravel(),
            [phase],
        ]
        if self.goal_cfg is not None:
            goal = self.goal or self._draw_goal()  # (only while the spaces are being sized)
            parts += [quat.rotate(inv_heading, goal.direction)[:2], [goal.speed]]
        if self.target_obs:
            ref = ref or pose_kinematics(self.model, self.ref_data, self.clip.sample(self.t), self.layout)
            r = ref.state
            parts.append(
                target_observation(
                    s.root_pos[None], s.root_quat[None], r.root_pos[None], r.root_quat[None], ref.end_effectors[None]
                )
            )
        if self.selector:
            parts.append(one_hot(self.skill, len(self.clips)))
        return np.concatenate([np.ravel(p) for p in parts]).astype(np.float32)

    def observation(self) -> np.ndarray:
        """(D,) float32: the observation of the current state (after a change made from outside, e.g. a new skill
        command in :mod:`animat.imitate.steer`)."""
        return self._obs()

    def _index_obs(self) -> None:
        """Where each joint's entries go in the observation (clip order; ball: 4 or 3 numbers, hinge: 1)."""
        qi, ai, vi, ri, a, v = [], [], [], [], 0, 0
        for hinge in self.layout.hinge:
            if hinge:
                ai.append(a)
                ri.append(v)
                a, v = a + 1, v + 1
            else:
                qi.append(list(range(a, a + 4)))
                vi.append(list(range(v, v + 3)))
                a, v = a + 4, v + 3
        self._quat_idx, self._angle_idx, self._vec_idx, self._rate_idx = (
            np.array(qi),
            np.array(ai),
            np.array(vi),
            np.array(ri),
        )
        self._joint_obs_size, self._vel_obs_size = a, v
        # the action: a rotation vector per ball joint, an angle per hinge, in clip order
        bi, hi, i = [], [], 0
        for hinge in self.layout.hinge:
            if hinge:
                hi.append(i)
                i += 1
            else:
                bi.append(list(range(i, i + 3)))
                i += 3
        self._act_ball_idx, self._act_hinge_idx = np.array(bi), np.array(hi)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.skill = self._choose_skill(options)
        if self.selector:  # (else the clip stays what it is: a caller may have put a turned one in its place)
            self.clip = self.clips[self.skill]
        self.t0 = float(self.np_random.uniform(0.0, self.clip.cycle_seconds)) if self.rsi else 0.0
        self.t = self.t0
        mujoco.mj_resetData(self.model, self.data)
        set_pose(self.model, self.data, self.clip.sample(self.t), self.layout)
        mujoco.mj_forward(self.model, self.data)
        self.goal = self._draw_goal() if self.goal_cfg is not None else None
        return self._obs(), {"time": self.t}

    def _choose_skill(self, options: dict | None) -> int:
        """The episode's skill: ``options["skill"]``, else ``command``, else (selector, several clips) drawn."""
        k = (options or {}).get("skill", self.command)
        if k is None:
            return int(self.np_random.integers(len(self.clips))) if self.selector and len(self.clips) > 1 else 0
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < len(self.clips):
            raise ConfigError(f"skill must be an index in [0, {len(self.clips)}), got {k!r}")
        return int(k)

    def _key_error(self, ref_data: mujoco.MjData) -> float:
        """m: the largest distance of a key body from its place in the reference posed in ``ref_data``."""
        keys = self._key_bodies
        return float(np.linalg.norm(self.data.xpos[keys] - ref_data.xpos[keys], axis=1).max())

    def _best_clip(self, sim, r_first: float) -> tuple[float, int, float]:
        """multi_clip "max": ``(r_I, index, key error m)``: the largest r_I over the clips (``r_first``: clip 0's),
        its clip, and the smallest key-body error; each clip at clip 0's phase (:mod:`animat.imitate.skills`)."""
        rewards, errors = [r_first], [self._key_error(self.ref_data)]
        for clip, t in zip(self.clips[1:], phase_times(self.clips, self.t)[1:]):
            alt = pose_kinematics(self.model, self.alt_data, clip.sample(t), self.layout)
            rewards.append(imitation_reward(alt, sim, self.cfg))
            errors.append(self._key_error(self.alt_data))
        best = int(np.argmax(rewards))
        return rewards[best], best, min(errors)

    def _draw_goal(self):
        return draw_goal(self.goal_cfg, self.np_random, self.clip.root_advance, self._clip_speed, self.t)

    def _targets(self, action: np.ndarray) -> np.ndarray:
        """(12, 4) target rotations of an action (clipped to ±π)."""
        a = np.clip(np.asarray(action, dtype=np.float64), -np.pi, np.pi)
        out, h = np.empty((12, 4)), self.layout.hinge
        if self.residual:  # offsets from the clip's pose at the end of this control step
            ref = self.clip.sample(self.t + 1.0 / CONTROL_HZ).joint_quats
            out[h] = quat.about_axis(HINGE_AXIS, quat.angle_about(ref[h], HINGE_AXIS) + a[self._act_hinge_idx])
            out[~h] = quat.mul(ref[~h], quat.exp(a[self._act_ball_idx]))
        else:
            out[h] = quat.about_axis(HINGE_AXIS, a[self._act_hinge_idx])
            out[~h] = quat.exp(a[self._act_ball_idx])
        return out

    def _fallen(self) -> bool:
        g = self.data.contact.geom[: self.data.ncon]  # (ncon, 2)
        if not g.size:
            return False
        other = np.where(g[:, 0] == self.floor, g[:, 1], np.where(g[:, 1] == self.floor, g[:, 0], -1))
        return bool(np.isin(other, self._fall_geom_ids).any())

    def step(self, action):
        targets = self._targets(action)
        set_pd_targets(self.model, self.data, targets, self.layout)
        if self.layout.ball_actuators.size:  # every servo is in MuJoCo: one call for the substeps
            mujoco.mj_step(self.model, self.data, nstep=self.substeps)
        else:
            for _ in range(self.substeps):
                apply_ball_pd(self.model, self.data, targets, self.layout)
                mujoco.mj_step(self.model, self.data)
        self.t += 1.0 / CONTROL_HZ
        if not (np.isfinite(self.data.qpos).all() and np.isfinite(self.data.qvel).all()):
            info = {"time": self.t, "r_imitation": 0.0, "nonfinite": True, **({"r_goal": 0.0} if self.goal else {})}
            return np.zeros(self.observation_space.shape, np.float32), 0.0, True, False, info
        # positions and centre of mass of the state reached (mj_step leaves them, and the contacts that
        # _fallen reads, from its last substep's start: 1/600 s earlier)
        for stage in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_comVel):
            stage(self.model, self.data)
        sim = kinematics(self.model, self.data, self.layout)
        ref = pose_kinematics(self.model, self.ref_data, self.clip.sample(self.t), self.layout)
        r_imitation, key_error = imitation_reward(ref, sim, self.cfg), None
        info = {"time": self.t, "r_imitation": r_imitation}
        if self.max_clips:
            r_imitation, info["skill"], key_error = self._best_clip(sim, r_imitation)
            info["r_imitation"] = r_imitation
        elif self.selector:
            info["skill"] = self.skill
        reward = r_imitation
        if self.goal is not None:
            info["r_goal"] = heading_reward(sim.com_vel, self.goal.direction, self.goal.speed, self.goal_cfg.scale)
            reward = total_reward(r_imitation, info["r_goal"], self.cfg)
            if self.t >= self.goal.until:  # the next observation shows the new goal
                self.goal = self._draw_goal()
        terminated = self.early_termination and self._fallen()
        if self.pose_termination > 0:
            key_error = self._key_error(self.ref_data) if key_error is None else key_error
            terminated = terminated or key_error > self.pose_termination
        if terminated:  # fallen: no reward from this step on (DeepMimic's early termination)
            reward = 0.0
        truncated = self.t - self.t0 >= self.max_seconds - 1e-9 or clip_ended(self.clip, self.t, self.hold_seconds)
        return self._obs(sim, ref), float(reward), bool(terminated), bool(truncated), info


def make_env(cfg, clip=None, **overrides):
    """One :class:`ImitateEnv` as ``cfg`` (an :class:`animat.imitate.options.TrainConfig`) describes it
    (``overrides``: env keyword arguments)."""
    weights = dict(w_imitation=cfg.goal_weights[0], w_goal=cfg.goal_weights[1]) if cfg.goal else {}
    kw = dict(
        reward=preset(cfg.reward, **weights),
        rsi=cfg.rsi,
        early_termination=cfg.early_termination,
        max_seconds=cfg.max_seconds,
        hold_seconds=cfg.hold_seconds,
        residual=cfg.residual,
        goal=cfg.goal_config(),
        joint_limits=cfg.joint_limits,
        substeps=cfg.substeps,
        pose_termination=cfg.pose_termination,
        target_obs=cfg.target_obs,
        **({"clips": cfg.load_clips(), "multi_clip": cfg.multi_clip} if cfg.clips else {}),
    )
    kw.update(overrides)
    return ImitateEnv(clip if clip is not None else cfg.load_clip(), **kw)
