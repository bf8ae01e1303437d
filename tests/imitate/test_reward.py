"""The imitation reward: presets, perfect match, and each term falling as its error grows."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from animat import quaternions as quat
from animat.character.demo import demo_clip
from animat.character.model import build_model, pose_kinematics
from animat.errors import ConfigError
from animat.imitate.reward import (
    PRESETS,
    RewardConfig,
    code_joint_weights,
    imitation_reward,
    imitation_terms,
    pose_error,
    preset,
    term,
    total_reward,
)


@pytest.fixture(scope="module")
def setup():
    model = build_model()
    ref_state = demo_clip().sample(0.3)
    ref = pose_kinematics(model, mujoco.MjData(model), ref_state)
    return model, ref_state, ref


def test_presets():
    paper, code = PRESETS["paper"], PRESETS["deepmimic-code"]
    assert (paper.pose_w, paper.vel_w, paper.end_w, paper.com_w) == (0.65, 0.1, 0.15, 0.1)
    assert (paper.pose_scale, paper.vel_scale, paper.end_scale, paper.com_scale) == (2, 0.1, 40, 10)
    assert (code.pose_w, code.vel_w, code.end_w, code.root_w, code.com_w) == (0.5, 0.05, 0.15, 0.2, 0.1)
    assert code.root_scale == 5 and code.variant == "deepmimic-code"
    assert code_joint_weights().sum() == pytest.approx(1.0) and code_joint_weights()[0] == pytest.approx(
        1.0 / 4.8
    )  # root first
    with pytest.raises(ConfigError, match="unknown reward preset"):
        preset("nope")
    with pytest.raises(ConfigError, match="pose_w"):
        RewardConfig(pose_w=-1)
    assert total_reward(0.5, 1.0, RewardConfig(w_imitation=0.7, w_goal=0.3)) == pytest.approx(0.65)


def test_pose_error_is_angle_squared():
    a = np.array([[1.0, 0, 0, 0]])
    b = quat.about_axis(np.array([0.0, 0, 1]), np.array([0.3]))
    assert pose_error(a, b) == pytest.approx(0.09)
    assert pose_error(a, -b) == pytest.approx(0.09)  # q and −q are the same rotation
    assert term(0.0, 2.0) == 1.0 and term(0.09, 2.0) == pytest.approx(np.exp(-0.18))


def _perturbed(model, ref_state, what: str, size: float):
    s = ref_state
    if what == "pose":  # bend every joint a little more about its own x axis
        s = dataclasses.replace(
            s, joint_quats=quat.mul(s.joint_quats, quat.about_axis(np.array([1.0, 0, 0]), np.full(12, size)))
        )
    elif what == "vel":
        s = dataclasses.replace(s, joint_angvel=s.joint_angvel + size)
    elif what == "root":  # move the whole body: com and every end effector shift by the same amount
        s = dataclasses.replace(s, root_pos=s.root_pos + np.array([0.0, size, 0.0]))
    return pose_kinematics(model, mujoco.MjData(model), s)


@pytest.mark.parametrize("what, terms", [("pose", ["pose", "end"]), ("vel", ["vel"]), ("root", ["end", "com"])])
def test_terms_fall_monotonically(setup, what, terms):
    model, ref_state, ref = setup
    sizes = [0.0, 0.05, 0.1, 0.2, 0.4]
    values = [imitation_terms(ref, _perturbed(model, ref_state, what, x)) for x in sizes]
    for name in terms:
        seq = [v[name] for v in values]
        assert seq[0] == pytest.approx(1.0) and all(b < a for a, b in zip(seq, seq[1:])), (name, seq)
    total = [imitation_reward(ref, _perturbed(model, ref_state, what, x)) for x in sizes]
    assert total[0] == pytest.approx(1.0) and all(b < a for a, b in zip(total, total[1:]))


def test_com_term_matches_formula(setup):
    model, ref_state, ref = setup
    sim = _perturbed(model, ref_state, "root", 0.1)
    t = imitation_terms(ref, sim)
    assert t["com"] == pytest.approx(np.exp(-10 * 0.01))
    assert t["end"] == pytest.approx(np.exp(-40 * 4 * 0.01))  # four end effectors, each 0.1 m off
    assert t["pose"] == pytest.approx(1.0) and t["vel"] == pytest.approx(1.0)
    # the code variant measures end effectors from the root and compares com velocities: a rigid shift costs only root
    code = imitation_terms(ref, sim, PRESETS["deepmimic-code"])
    assert code["end"] == pytest.approx(1.0) and code["com"] == pytest.approx(1.0)
    assert code["root"] == pytest.approx(np.exp(-5 * 0.01))


def test_code_variant_measures_end_effectors_in_the_heading_frame_and_weighs_the_root(setup):
    """cSceneImitate::CalcRewardImitate: a turn of the whole body about the vertical leaves the end effectors'
    heading-frame positions alone (end term 1) but costs the root's rotation, with the root's DiffWeight;
    a lift costs every end effector's height above the ground, averaged over the four."""
    model, ref_state, ref = setup
    theta = 0.3
    turned = dataclasses.replace(
        ref_state, root_quat=quat.mul(quat.about_axis(np.array([0.0, 0.0, 1.0]), theta), ref_state.root_quat)
    )
    code = imitation_terms(ref, pose_kinematics(model, mujoco.MjData(model), turned), PRESETS["deepmimic-code"])
    assert code["end"] == pytest.approx(1.0)
    assert code["pose"] == pytest.approx(np.exp(-2 * (1.0 / 4.8) * theta**2))
    lifted = dataclasses.replace(ref_state, root_pos=ref_state.root_pos + np.array([0.0, 0.0, 0.1]))
    code = imitation_terms(ref, pose_kinematics(model, mujoco.MjData(model), lifted), PRESETS["deepmimic-code"])
    assert code["end"] == pytest.approx(np.exp(-40 * 0.01))  # the mean, not the sum, of four 0.01 m² errors
