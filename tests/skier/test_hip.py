"""The two-axis hip option: two more gene columns, mirrored, crossed over with their legs, simulated."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from animat.errors import AnimatError
from animat.skier import ga
from animat.skier import gene as G
from animat.skier.model import JOINTS, SPREAD_JOINTS, SkierParams, build_model, groups, joint_names
from animat.skier.rollout import Evaluator

M = len(JOINTS) + len(SPREAD_JOINTS)


def test_two_axis_model_has_two_independent_hip_hinges():
    m = build_model(SkierParams(hip="two-axis"))
    assert m.nu == M
    axes = {}
    for side in ("left", "right"):
        for j, axis in ((f"{side}_hip", (0, 0, 1)), (f"{side}_hip_spread", (1, 0, 0))):
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)
            assert np.allclose(m.jnt_axis[jid], axis)
            axes[j] = m.jnt_bodyid[jid]
        assert axes[f"{side}_hip"] == axes[f"{side}_hip_spread"]  # both on the thigh
    one = build_model(SkierParams())
    assert one.nu == len(JOINTS) and mujoco.mj_name2id(one, mujoco.mjtObj.mjOBJ_JOINT, "left_hip_spread") == -1


def test_two_axis_gene_mirror_groups_and_validation():
    g = G.random_genes(np.random.default_rng(0), 4, n_joints=M)
    names = joint_names(M)
    li, ri = names.index("left_hip_spread"), names.index("right_hip_spread")
    half = g.shape[1] // 2
    assert np.array_equal(g[:, half:, ri], -g[:, :half, li]) and np.array_equal(g[:, half:, li], -g[:, :half, ri])
    assert np.array_equal(g[:, half:, : len(JOINTS)], G.mirror(g[:, :, : len(JOINTS)])[:, half:])  # first 12 as before
    gr = groups(M)
    assert li in gr["left_leg"] and ri in gr["right_leg"] and sorted(sum(gr.values(), ())) == list(range(M))
    children, from_b = ga.crossover(np.random.default_rng(1), g[:2], -g[:2] - 1)
    for k in range(2):
        for gi, cols in enumerate(gr.values()):
            src = (-g[k] - 1) if from_b[k, gi] else g[k]
            assert np.array_equal(children[k][:, list(cols)], src[:, list(cols)])
    assert G.validate_gene(g[0], n_joints=M).shape == (10, M)
    assert G.validate_gene(g[0], n_joints=None).shape == (10, M)
    with pytest.raises(AnimatError, match=r"expected 10 states x 12 joints"):
        G.validate_gene(g[0])
    bad = g[0].copy()
    bad[0, li] = 50
    with pytest.raises(AnimatError, match="left_hip_spread angle 50 deg is out of its range -45..45"):
        G.validate_gene(bad, n_joints=M)


def test_two_axis_skier_stands_and_moves_its_spread_joint():
    g = np.zeros((1, 10, M), dtype=np.int64)
    with Evaluator(SkierParams(hip="two-axis"), seconds=2.0, nthread=1) as ev:
        s = ev(g)
        assert not s.fell[0] and s.fitness[0] == pytest.approx(5.0, abs=0.01)
        spread = g.copy()
        spread[0, :, joint_names(M).index("left_hip_spread")] = 20
        state = ev.states(G.mirror(spread))
        jid = mujoco.mj_name2id(ev.model, mujoco.mjtObj.mjOBJ_JOINT, "left_hip_spread")
        assert np.degrees(state[0, 150, 1 + ev.model.jnt_qposadr[jid]]) == pytest.approx(
            20, abs=5
        )  # at 1.5 s (target 20)


def swizzle_gene(torso: int = 20) -> np.ndarray:
    """Hand-made two-axis skating: open the legs toed out, close them toed in (both legs alike)."""
    names = joint_names(M)
    half = []
    for yaw, spread in ((20, 0), (20, 35), (-20, 35), (-20, 0), (20, 0)):
        s = np.zeros(M, dtype=np.int64)
        s[names.index("torso")] = torso
        s[names.index("left_hip")], s[names.index("right_hip")] = yaw, -yaw
        s[names.index("left_hip_spread")], s[names.index("right_hip_spread")] = spread, -spread
        half.append(s)
    return G.mirror(np.array(half + half))


def test_swizzle_skates_forward_on_anisotropic_skis_only():
    """Anisotropic skis turn the swizzle into forward motion (11.2 m in 10 s); on isotropic ones it gets nowhere (0.1
    m)."""
    gene = swizzle_gene()[None]
    dist = {}
    for friction in ("anisotropic", "isotropic"):
        with Evaluator(SkierParams(hip="two-axis", friction=friction), seconds=10.0, nthread=1) as ev:
            s = ev(gene)
        assert not s.fell[0]
        dist[friction] = float(s.net_forward_m[0])
    assert dist["anisotropic"] > 8.0 and dist["isotropic"] < 2.0
