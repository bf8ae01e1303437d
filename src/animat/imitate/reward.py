"""DeepMimic's imitation reward, as pure functions of two :class:`Kinematics` (reference, simulated).

Paper (Peng et al. 2018, "DeepMimic", eq. 1–6), preset ``"paper"`` (the default)::

    r   = w_I r_I + w_G r_G
    r_I = 0.65 r_p + 0.1 r_v + 0.15 r_e + 0.1 r_c
    r_p = exp(−2   Σ_j ‖q̂_j ⊖ q_j‖²)      joint rotations, ‖·‖ the angle (rad) of the difference
    r_v = exp(−0.1 Σ_j ‖q̂̇_j − q̇_j‖²)      joint angular velocities (rad/s)
    r_e = exp(−40  Σ_e ‖p̂_e − p_e‖²)      hands and feet, world positions (m)
    r_c = exp(−10  ‖p̂_c − p_c‖²)          centre of mass (m)

Here Σ_j runs over the 12 joints and the root (its world orientation; its angular velocity in the
root frame), unweighted. With no task, w_I = 1 and w_G = 0.

Preset ``"deepmimic-code"``: the variant in the public DeepMimic code
(``DeepMimicCore/scenes/SceneImitate.cpp``, ``cSceneImitate::CalcRewardImitate``), as described there:
weights pose 0.5, velocity 0.05, end-effector 0.15, root 0.2, centre of mass 0.1 (normalised to
sum 1) with scales pose 2, velocity 0.1, end-effector 40, root 5, com 10. It differs from the paper
in that (a) the pose and velocity sums are weighted by the skeleton's ``DiffWeight`` divided by the sum
of all joints' weights, the root's rotation and angular velocity entering with the root's weight;
(b) an end effector is measured from its own character's root horizontally, from the ground
vertically, in that character's heading frame (rotated by minus its root's yaw), and the error is the
mean over the end effectors, not the sum; (c) a root term
``exp(−5 (‖Δp_root‖² + 0.1 Δθ_root² + 0.01 ‖Δv_root‖² + 0.001 ‖Δω_root‖²))`` is added;
(d) the com term compares centre-of-mass *velocities*: ``exp(−10 · 0.1 ‖Δv_com‖²)``.
(The current upstream master sums the end-effector errors with scale 10 instead: the same value for the 4 end
effectors.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from animat import quaternions as quat
from animat.character.clip import JOINT_NAMES
from animat.character.model import Kinematics, Skeleton, default_skeleton
from animat.config import check_instance, option
from animat.errors import ConfigError


@dataclass(frozen=True)
class RewardConfig:
    """Weights (dimensionless) and scales (1/unit² of each error) of the imitation reward."""

    w_imitation: float = option(1.0, "Weight of the imitation reward r_I", ge=0)
    w_goal: float = option(0.0, "Weight of the task-goal reward r_G", ge=0)
    pose_w: float = option(0.65, "Weight of the pose term", ge=0)
    vel_w: float = option(0.1, "Weight of the joint-velocity term", ge=0)
    end_w: float = option(0.15, "Weight of the end-effector term", ge=0)
    com_w: float = option(0.1, "Weight of the centre-of-mass term", ge=0)
    root_w: float = option(0.0, "Weight of the root term (code variant)", ge=0)
    pose_scale: float = option(2.0, "1/rad²", ge=0)
    vel_scale: float = option(0.1, "1/(rad/s)²", ge=0)
    end_scale: float = option(40.0, "1/m²", ge=0)
    com_scale: float = option(10.0, "1/m² (paper) or 1/(m/s)² (code variant)", ge=0)
    root_scale: float = option(5.0, "Scale of the root term", ge=0)
    variant: str = option(
        "paper", "paper | deepmimic-code (see the module docstring)", choices=("paper", "deepmimic-code")
    )
    OPTION_NAME: ClassVar[str] = "reward {name}"

    def __post_init__(self):
        check_instance(self)


PRESETS = {
    "paper": RewardConfig(),
    "deepmimic-code": RewardConfig(pose_w=0.5, vel_w=0.05, end_w=0.15, root_w=0.2, com_w=0.1, variant="deepmimic-code"),
}


def preset(name: str, **overrides) -> RewardConfig:
    if name not in PRESETS:
        raise ConfigError(f"unknown reward preset {name!r}; expected one of {sorted(PRESETS)}")
    return replace(PRESETS[name], **overrides)


def pose_error(ref_quats: np.ndarray, quats: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Σ_j w_j θ_j² (rad²), θ_j the angle of the rotation between ``ref_quats[j]`` and ``quats[j]`` (J, 4)."""
    theta = quat.angle_between(ref_quats, quats)
    w = np.ones(theta.shape) if weights is None else weights
    return float(np.sum(w * theta**2))


def velocity_error(ref_angvel: np.ndarray, angvel: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Σ_j w_j ‖ω̂_j − ω_j‖² ((rad/s)²) over angular velocities ``(J, 3)``."""
    sq = np.sum((np.asarray(ref_angvel) - np.asarray(angvel)) ** 2, axis=-1)
    w = np.ones(sq.shape) if weights is None else weights
    return float(np.sum(w * sq))


def position_error(ref: np.ndarray, pos: np.ndarray) -> float:
    """Σ ‖p̂ − p‖² (m²) over points ``(..., 3)``."""
    return float(np.sum((np.asarray(ref) - np.asarray(pos)) ** 2))


def term(error: float, scale: float) -> float:
    """exp(−scale · error): 1 at zero error, falling monotonically towards 0."""
    return float(np.exp(-scale * error))


def code_joint_weights(skeleton: Skeleton | None = None) -> np.ndarray:
    """(13,) DeepMimic ``DiffWeight`` of the root and each clip joint, in that order, over the sum of all
    joints' weights (root included)."""
    skel = skeleton or default_skeleton()
    by_name = {j.name: j.diff_weight for j in skel.joints}
    total = sum(j.diff_weight for j in skel.joints)
    return np.array([by_name["root"] / total] + [by_name[n] / total for n in JOINT_NAMES])


@functools.lru_cache(maxsize=1)
def _default_code_weights() -> np.ndarray:
    """:func:`code_joint_weights` of the default skeleton, computed once (the reward runs every step)."""
    return code_joint_weights()


def heading_frame(points: np.ndarray, root_pos: np.ndarray, root_quat: np.ndarray) -> np.ndarray:
    """End effectors ``points (E, 3)`` m as DeepMimic's code measures them: from the root horizontally,
    from the ground (z = 0) vertically, rotated by minus the root's heading (yaw about +z)."""
    rel = np.asarray(points, np.float64) - np.asarray(root_pos, np.float64)
    rel[..., 2] = np.asarray(points)[..., 2]
    return quat.rotate(quat.conj(quat.heading(root_quat)), rel)


def imitation_terms(ref: Kinematics, sim: Kinematics, cfg: RewardConfig = PRESETS["paper"]) -> dict[str, float]:
    """The sub-rewards (each in (0, 1]) of ``sim`` against ``ref``: pose, vel, end, com, root."""
    a, b = ref.state, sim.state
    qa = np.concatenate([a.root_quat[None], a.joint_quats])  # root first, as the weights
    qb = np.concatenate([b.root_quat[None], b.joint_quats])
    wa = np.concatenate([a.root_angvel[None], a.joint_angvel])
    wb = np.concatenate([b.root_angvel[None], b.joint_angvel])
    if cfg.variant == "paper":
        return {
            "pose": term(pose_error(qa, qb), cfg.pose_scale),
            "vel": term(velocity_error(wa, wb), cfg.vel_scale),
            "end": term(position_error(ref.end_effectors, sim.end_effectors), cfg.end_scale),
            "com": term(position_error(ref.com, sim.com), cfg.com_scale),
            "root": 1.0,
        }
    w = _default_code_weights()
    ends = len(ref.end_effectors)
    root_err = (
        position_error(a.root_pos, b.root_pos)
        + 0.1 * float(quat.angle_between(a.root_quat, b.root_quat)) ** 2
        + 0.01 * position_error(a.root_vel, b.root_vel)
        + 0.001 * position_error(a.root_angvel, b.root_angvel)
    )
    return {
        "pose": term(pose_error(qa, qb, w), cfg.pose_scale),
        "vel": term(velocity_error(wa, wb, w), cfg.vel_scale),
        "end": term(
            position_error(
                heading_frame(ref.end_effectors, a.root_pos, a.root_quat),
                heading_frame(sim.end_effectors, b.root_pos, b.root_quat),
            )
            / max(ends, 1),
            cfg.end_scale,
        ),
        "com": term(0.1 * position_error(ref.com_vel, sim.com_vel), cfg.com_scale),
        "root": term(root_err, cfg.root_scale),
    }


def imitation_reward(ref: Kinematics, sim: Kinematics, cfg: RewardConfig = PRESETS["paper"]) -> float:
    """r_I: the weighted sum of :func:`imitation_terms` (weights normalised to sum 1); 1 for a perfect match."""
    t = imitation_terms(ref, sim, cfg)
    weights = {"pose": cfg.pose_w, "vel": cfg.vel_w, "end": cfg.end_w, "com": cfg.com_w, "root": cfg.root_w}
    total = sum(weights.values())
    if total <= 0:
        raise ConfigError("reward weights pose_w + vel_w + end_w + com_w + root_w must be > 0")
    return float(sum(weights[k] * t[k] for k in weights) / total)


def total_reward(r_imitation: float, r_goal: float = 0.0, cfg: RewardConfig = PRESETS["paper"]) -> float:
    """r = w_I r_I + w_G r_G."""
    return float(cfg.w_imitation * r_imitation + cfg.w_goal * r_goal)
