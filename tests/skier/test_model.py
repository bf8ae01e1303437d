"""The skier's body and the ski friction: anisotropic capsule skis follow their yaw, boxes do not."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from animat.skier.model import JOINTS, TOTAL_MASS, G, SkierParams, build_model, joint_ranges_deg, sliding_ski_model

MU = (0.05, 0.6)


def deceleration(
    shape: str, yaw_deg: float, direction_deg: float, mu=MU, cone: str = "pyramidal"
) -> tuple[float, np.ndarray]:
    """Slide a lone ski (translation only) at 3 m/s in world direction ``direction_deg``; return the
    fitted deceleration (m/s^2) while faster than 0.5 m/s, and the final velocity direction."""
    m = sliding_ski_model(shape, mu, yaw_deg, cone=cone)
    d = mujoco.MjData(m)
    for _ in range(100):  # settle on the plane
        mujoco.mj_step(m, d)
    a = math.radians(direction_deg)
    d.qvel[:3] = [3.0 * math.cos(a), 3.0 * math.sin(a), 0.0]
    ts, vs = [], []
    for _ in range(int(0.3 / m.opt.timestep)):
        mujoco.mj_step(m, d)
        ts.append(d.time)
        vs.append(np.linalg.norm(d.qvel[:2]))
    ts, vs = np.array(ts), np.array(vs)
    ok = vs > 0.5
    return -np.polyfit(ts[ok], vs[ok], 1)[0], d.qvel[:2].copy()


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("yaw", [0.0, 45.0])
def test_capsule_ski_glides_along_and_grips_across_its_axis(yaw, cone):
    along, v = deceleration("capsule", yaw, yaw, cone=cone)
    assert along == pytest.approx(MU[0] * G, rel=0.10)
    assert np.degrees(np.arctan2(v[1], v[0])) == pytest.approx(yaw, abs=1.0)  # keeps its direction
    across, _ = deceleration("capsule", yaw, yaw + 90.0, cone=cone)
    assert across == pytest.approx(MU[1] * G, rel=0.10)


def test_isotropic_ski_same_both_ways():
    along, _ = deceleration("capsule", 30.0, 30.0, mu=(0.2, 0.2))
    across, _ = deceleration("capsule", 30.0, 120.0, mu=(0.2, 0.2))
    assert along == pytest.approx(0.2 * G, rel=0.10)
    assert across == pytest.approx(0.2 * G, rel=0.10)


def test_box_ski_does_not_follow_its_yaw():
    """Plane-box contact frames come from the plane normal alone, so a yawed box's 'along' friction
    is not mu_long: why the skis are capsules."""
    along, _ = deceleration("box", 45.0, 45.0)
    assert abs(along - MU[0] * G) > 0.5 * MU[0] * G


def test_skier_model():
    m = build_model()
    assert m.body_mass.sum() == pytest.approx(TOTAL_MASS)
    assert m.nu == len(JOINTS) == 12
    assert m.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
    assert build_model(SkierParams(cone="elliptic")).opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    rng = np.radians(joint_ranges_deg())
    for i, j in enumerate(JOINTS):
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        assert np.allclose(m.jnt_range[jid], rng[i])
        aid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, j)
        assert np.allclose(m.actuator_ctrlrange[aid], rng[i])
    pair = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_PAIR, "left_ski_floor")
    assert np.allclose(m.pair_friction[pair, :2], SkierParams().ski_friction())
    iso = build_model(SkierParams(friction="isotropic"))
    assert np.allclose(iso.pair_friction[pair, :2], [0.2, 0.2])


def test_skier_stands_still_with_zero_targets():
    m = build_model()
    d = mujoco.MjData(m)
    for _ in range(int(2.0 / m.opt.timestep)):
        mujoco.mj_step(m, d)
    assert d.qpos[2] > 0.9  # pelvis still up
    assert abs(d.qpos[0]) < 0.05
