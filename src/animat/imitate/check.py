"""``animat imitate check``: a clip's facts and a kinematic replay scored against the clip itself.

Kinematic replay: at each control time t (30 Hz over one cycle) the clip's pose is written into
the character (``set_pose``), its velocities are *recomputed* by finite differences of the
character's own joint positions (``mj_differentiatePos``, step h = ``fd_seconds``): forward, from
t to t + h, by default — the clip's velocities are right-continuous at frames, so this checks the
same quantity — or central, t ± h/2, which straddles a frame at every 30 Hz step and so also
measures how much the clip's velocities jump there (mocap at 30 fps jumps a lot). The state
is read back (``get_pose``) and, after forward kinematics, scored with the imitation reward
against the clip's analytic state at t. Reference and replay are posed by the same ``set_pose``, so the
pose, end-effector and centre-of-mass terms are 1 by construction: what this checks is the velocity
conventions (finite differences of the character against the clip's analytic velocities) and that
the pipeline runs end to end. A mistake in the axis mapping or joint layout would cancel out here; the
clip and character tests check those (known poses, foot and head heights).
"""

from __future__ import annotations

import mujoco
import numpy as np

from animat import quaternions as quat
from animat.character.clip import Clip
from animat.character.model import CONTROL_HZ, Layout, build_model, kinematics, pose_kinematics, set_pose
from animat.imitate.reward import PRESETS, RewardConfig, imitation_reward


def replay_rewards(
    clip: Clip,
    cfg: RewardConfig = PRESETS["paper"],
    rate_hz: float = CONTROL_HZ,
    fd_seconds: float = 1.0 / 600.0,
    central: bool = False,
    model: mujoco.MjModel | None = None,
) -> np.ndarray:
    """(S,) r_I of the kinematic replay at t = i / rate_hz over one cycle (S = round(cycle · rate), ≥ 1)."""
    m = model if model is not None else build_model()
    lay = Layout.of(m)
    d_ref, d_sim, d_tmp = mujoco.MjData(m), mujoco.MjData(m), mujoco.MjData(m)
    steps = max(1, int(round(clip.cycle_seconds * rate_hz)))
    out = np.empty(steps)
    for i in range(steps):
        t = i / rate_hz
        ref = pose_kinematics(m, d_ref, clip.sample(t), lay)
        t0, t1 = (t - fd_seconds / 2, t + fd_seconds / 2) if central else (t, t + fd_seconds)
        set_pose(m, d_tmp, clip.sample(t0), lay)
        q_before = d_tmp.qpos.copy()
        set_pose(m, d_tmp, clip.sample(t1), lay)
        set_pose(m, d_sim, clip.sample(t), lay)
        mujoco.mj_differentiatePos(m, d_sim.qvel, fd_seconds, q_before, d_tmp.qpos)
        mujoco.mj_forward(m, d_sim)
        out[i] = imitation_reward(ref, kinematics(m, d_sim, lay), cfg)
    return out


def wrap_seam_deg(clip: Clip) -> float:
    """Largest rotation (deg) between the last and first frames over the root and the joints: the jump a
    ``wrap`` clip makes each cycle (DeepMimic carries only the root's horizontal position over). 0 if ``none``."""
    if clip.loop != "wrap":
        return 0.0
    a = np.concatenate([clip.root_quat[-1:], clip.joint_quats[-1]])
    b = np.concatenate([clip.root_quat[:1], clip.joint_quats[0]])
    return float(np.degrees(quat.angle_between(a, b).max()))


def check_clip(clip: Clip, cfg: RewardConfig = PRESETS["paper"]) -> dict:
    """The facts ``animat imitate check`` prints."""
    rewards = replay_rewards(clip, cfg)
    central = replay_rewards(clip, cfg, central=True)
    return {
        "frames": clip.num_frames,
        "loop": clip.loop,
        "cycle_seconds": round(clip.cycle_seconds, 6),
        "root_advance_m": round(float(np.linalg.norm(clip.root_advance[:2])), 6),
        "kinematic_replay_mean_reward": round(float(rewards.mean()), 6),
        "kinematic_replay_min_reward": round(float(rewards.min()), 6),
        "kinematic_replay_steps": int(rewards.size),
        "central_difference_mean_reward": round(float(central.mean()), 6),
        "wrap_seam_deg": round(wrap_seam_deg(clip), 3),
        "reward_preset": cfg.variant,
    }
