"""``ImitateEnv``: the humanoid tracking a clip, as a Gymnasium environment (policy at 30 Hz).

Observation (float32): root height (m); root orientation relative to its heading (yaw removed,
w x y z); root linear velocity in the heading frame (m/s); root angular velocity (rad/s, root
frame); the 12 joints' rotations (ball: quaternion, hinge: angle) and velocities (rad/s); hands
and feet relative to the root in the heading frame (m); the clip phase in [0, 1).
Action (float32, rad): PD targets — a rotation vector per ball joint (8 × 3), an angle per hinge
(4), in clip joint order; clipped to ±π. Reward: r_I of :mod:`animat.imitate.reward` against the
clip at the new time. Reference state initialisation (``rsi``: start at a random clip time) and
early termination (``early_termination``: the root, chest or neck touches the floor) can be
switched off. Episodes are truncated after ``max_seconds``.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np

from animat.imitate import quat
from animat.imitate.character import CONTROL_HZ, SUBSTEPS, Layout, apply_ball_pd, build_model, kinematics, pose_kinematics, set_pd_targets, set_pose
from animat.imitate.clip import HINGE_AXIS, Clip
from animat.imitate.demo import demo_clip
from animat.imitate.reward import PRESETS, RewardConfig, imitation_reward

FALL_BODIES = ("root", "chest", "neck")


def _heading_quat(q: np.ndarray) -> np.ndarray:
    """Yaw-only rotation (about z) of the heading of ``q``: the direction its x axis points, flattened."""
    fwd = quat.rotate(q, np.array([1.0, 0.0, 0.0]))
    return quat.about_axis(np.array([0.0, 0.0, 1.0]), np.arctan2(fwd[1], fwd[0]))


class ImitateEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, clip: Clip | None = None, reward: RewardConfig = PRESETS["paper"], rsi: bool = True,
                 early_termination: bool = True, max_seconds: float = 10.0):
        self.clip = clip or demo_clip()
        self.cfg, self.rsi, self.early_termination, self.max_seconds = reward, rsi, early_termination, max_seconds
        self.model = build_model()
        self.data = mujoco.MjData(self.model)
        self.ref_data = mujoco.MjData(self.model)
        self.layout = Layout.of(self.model)
        self.fall_geoms = {mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in FALL_BODIES}
        self.floor = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        self.action_space = gym.spaces.Box(-np.pi, np.pi, shape=(int(8 * 3 + 4),), dtype=np.float32)
        self.t = self.t0 = 0.0
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(self._obs().shape[0],), dtype=np.float32)

    def _obs(self) -> np.ndarray:
        k = kinematics(self.model, self.data, self.layout)
        s = k.state
        inv_heading = quat.conj(_heading_quat(s.root_quat))
        joints = [s.joint_quats[j] if not self.layout.hinge[j] else [quat.angle_about(s.joint_quats[j], HINGE_AXIS)] for j in range(12)]
        vels = [s.joint_angvel[j] if not self.layout.hinge[j] else [s.joint_angvel[j] @ HINGE_AXIS] for j in range(12)]
        phase = (self.t % self.clip.cycle_seconds) / self.clip.cycle_seconds
        parts = [
            [s.root_pos[2]], quat.mul(inv_heading, s.root_quat), quat.rotate(inv_heading, s.root_vel), s.root_angvel,
            *joints, *vels, quat.rotate(inv_heading, k.end_effectors - s.root_pos).ravel(), [phase],
        ]
        return np.concatenate([np.ravel(p) for p in parts]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t0 = float(self.np_random.uniform(0.0, self.clip.cycle_seconds)) if self.rsi else 0.0
        self.t = self.t0
        mujoco.mj_resetData(self.model, self.data)
        set_pose(self.model, self.data, self.clip.sample(self.t), self.layout)
        mujoco.mj_forward(self.model, self.data)
        return self._obs(), {"time": self.t}

    def _targets(self, action: np.ndarray) -> np.ndarray:
        a = np.clip(np.asarray(action, dtype=np.float64), -np.pi, np.pi)
        out, i = np.empty((12, 4)), 0
        for j in range(12):
            if self.layout.hinge[j]:
                out[j] = quat.about_axis(HINGE_AXIS, a[i])
                i += 1
            else:
                out[j] = quat.exp(a[i : i + 3])
                i += 3
        return out

    def _fallen(self) -> bool:
        for c in self.data.contact[: self.data.ncon]:
            if self.floor in (c.geom1, c.geom2) and ({c.geom1, c.geom2} & self.fall_geoms):
                return True
        return False

    def step(self, action):
        targets = self._targets(action)
        set_pd_targets(self.model, self.data, targets, self.layout)
        for _ in range(SUBSTEPS):
            apply_ball_pd(self.model, self.data, targets, self.layout)
            mujoco.mj_step(self.model, self.data)
        self.t += 1.0 / CONTROL_HZ
        sim = kinematics(self.model, self.data, self.layout)
        ref = pose_kinematics(self.model, self.ref_data, self.clip.sample(self.t), self.layout)
        reward = imitation_reward(ref, sim, self.cfg)
        finite = bool(np.isfinite(self.data.qpos).all())
        terminated = (self.early_termination and self._fallen()) or not finite
        truncated = self.t - self.t0 >= self.max_seconds - 1e-9
        return self._obs() if finite else np.zeros(self.observation_space.shape, np.float32), float(reward if finite else 0.0), bool(terminated), bool(truncated), {"time": self.t}
