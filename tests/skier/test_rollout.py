from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from animat.skier import gene as G
from animat.skier.gene import random_genes
from animat.skier.model import actuator_order
from animat.skier.rollout import Evaluator, score, step_loop_states

UP = np.array([1.0, 0, 0, 0])


def test_score_positive_progress_fall_and_bonus():
    x = np.array([[0.0, 1.0, 0.5, 1.5, 2.0]])  # +1, -0.5 (ignored), +1, +0.5
    q = np.tile(UP, (1, 5, 1))
    s = score(x, q, 0.1)
    assert s.fitness[0] == pytest.approx(2.5 + 5.0) and not s.fell[0]
    a = math.radians(85)
    q2 = q.copy()
    q2[0, 3:] = [math.cos(a / 2), math.sin(a / 2), 0, 0]  # tilted 85 deg about x from frame 3
    s2 = score(x, q2, 0.1)
    assert s2.fell[0] and s2.fitness[0] == pytest.approx(1.0)  # only frames before the fall count
    x3 = x.copy()
    x3[0, 4] = 100.0  # a divergence jump counts as a fall
    assert score(x3, q, 0.1).fell[0]


@pytest.mark.parametrize("axis", [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.6, 0.8, 0.0)])
def test_fall_threshold_is_80_degrees_of_tilt_about_any_horizontal_axis(axis):
    """Tilted 79.9 degrees from frame 3 on: still standing (full progress and the bonus); 80.1: fallen
    there (only the progress before it counts). A turn about the vertical first changes nothing."""
    x = np.array([[0.0, 1.0, 2.0, 3.0, 4.0]])
    yaw = np.array([math.cos(0.6), 0.0, 0.0, math.sin(0.6)])  # 1.2 rad about z

    def tilted(deg):
        a = math.radians(deg)
        tilt = np.array([math.cos(a / 2), *(math.sin(a / 2) * np.asarray(axis))])
        w1, v1, w2, v2 = tilt[0], tilt[1:], yaw[0], yaw[1:]
        q = np.tile(UP, (1, 5, 1))
        q[0, 3:] = [w1 * w2 - v1 @ v2, *(w1 * v2 + w2 * v1 + np.cross(v1, v2))]  # the tilt after the yaw
        return q

    below, above = score(x, tilted(79.9), 0.1), score(x, tilted(80.1), 0.1)
    assert not below.fell[0] and below.fitness[0] == pytest.approx(4.0 + 5.0)
    assert above.fell[0] and above.fitness[0] == pytest.approx(2.0) and above.scored_seconds[0] == pytest.approx(0.3)
    assert not score(x, tilted(84.9), 0.1, fall_deg=85.0).fell[0] and score(x, tilted(85.1), 0.1, fall_deg=85.0).fell[0]


def test_mujoco_reset_near_the_start_counts_as_a_fall():
    """MuJoCo resets a diverged state to the start (time 0): a pelvis within MAX_SPEED * frame_dt of
    its start shows no jump, so the reset is seen in the simulation time."""
    x = np.array([[0.0, 0.1, 0.2, 0.05, 0.15]])  # back near the start at frame 3: no jump
    q = np.tile(UP, (1, 5, 1))
    t = np.array([[0.0, 0.1, 0.2, 0.002, 0.102]])  # the reset at frame 3
    assert not score(x, q, 0.1).fell[0]
    s = score(x, q, 0.1, t=t)
    assert s.fell[0] and s.fitness[0] == pytest.approx(0.2) and s.net_forward_m[0] == pytest.approx(0.2)
    with Evaluator(seconds=0.5, nthread=1) as ev:
        g = np.zeros((1, 10, 12), dtype=np.int64)
        assert not ev(g).fell[0]
        ev.initial_state[0] = 1.0  # a standing skier at 1 s whose first hinge velocity is past mjMAXVAL:
        ev.initial_state[1 + ev.model.nq + 6] = 1e11  # MuJoCo resets it to the start at the first step
        s = ev(g)
    assert s.fell[0] and s.fitness[0] == 0.0 and s.scored_seconds[0] == pytest.approx(ev.frame_dt)  # fell at frame 1


def test_rollout_matches_python_step_loop():
    genes = random_genes(np.random.default_rng(0), 3)
    with Evaluator(seconds=0.5, nthread=2) as ev:
        state = ev.states(genes)
        ref = step_loop_states(ev.model, genes, ev.nstep)
        pos, quat = ev.root(state)
        assert np.allclose(pos, ref[..., :3], atol=1e-9)
        assert np.allclose(quat, ref[..., 3:7], atol=1e-9)
        s = ev(genes)
        assert s.fitness.shape == (3,)


def test_chunked_evaluation_equals_one_rollout_and_is_thread_independent():
    """Chunks restart from saved states (no solver warm start): the same scores bit for bit, and fallen
    skiers stop being simulated."""
    genes = random_genes(np.random.default_rng(4), 6)
    with (
        Evaluator(seconds=3.0, nthread=1, chunk_seconds=None) as whole,
        Evaluator(seconds=3.0, nthread=2, chunk_seconds=0.4) as parts,
    ):
        a, b = whole(genes), parts(genes)
        assert np.array_equal(a.fitness, b.fitness) and np.array_equal(a.fell, b.fell)
        assert np.array_equal(a.scored_seconds, b.scored_seconds)
        assert a.fell.any() and parts.steps_simulated < whole.steps_simulated


def test_standing_pose_stands_for_20_s_on_anisotropic_skis():
    g = np.zeros((1, 10, 12), dtype=np.int64)
    with Evaluator(seconds=20.0, nthread=1) as ev:
        s = ev(g)
    assert not s.fell[0] and s.fitness[0] == pytest.approx(5.0, abs=0.01) and abs(s.net_forward_m[0]) < 0.01


def test_a_skier_thrown_higher_than_max_height_has_diverged():
    """The pelvis above MAX_HEIGHT (2 m; it stands at 0.99 m) is a contact blow-up, not skiing: a fall there,
    and the net distance is taken before it."""
    x = np.array([[0.0, 0.5, 1.0, 1.5, 2.0]])
    z = np.array([[0.99, 1.0, 1.1, 2.5, 3.0]])
    q = np.tile(UP, (1, 5, 1))
    assert not score(x, q, 0.1).fell[0]
    s = score(x, q, 0.1, z=z)
    assert s.fell[0] and s.fitness[0] == pytest.approx(1.0) and s.net_forward_m[0] == pytest.approx(1.0)


# a bred two-axis gene (keyframes 0.3 s apart) that a contact throws into the air at 24 m/s from about 3.2 s:
# the pelvis climbs to 44 m and comes down 140 m further on before its tilt passes 80 degrees (about 6 s)
LAUNCHED = [
    [8, 8, -32, 8, 1, 13, 0, 0, 0, 0, -24, 3, 44, -12],
    [-19, 3, -4, 11, 0, 38, 53, 0, 45, 0, -16, 0, 10, -39],
    [-12, 20, 38, 0, 0, -5, 20, 23, 0, 81, 16, 0, 4, -12],
    [-5, 3, -60, 93, 0, -8, 0, -72, 0, 25, -29, 0, 28, -12],
    [-29, 0, -10, 12, 9, 1, 0, 0, 26, 76, -5, 0, 22, -12],
    [8, 8, 0, 0, 0, 24, 3, -32, 8, 1, -13, 0, 12, -44],
    [-19, 3, 0, 45, 0, 16, 0, -4, 11, 0, -38, 53, 39, -10],
    [-12, 20, 23, 0, 81, -16, 0, 38, 0, 0, 5, 20, 12, -4],
    [-5, 3, -72, 0, 25, 29, 0, -60, 93, 0, 8, 0, 12, -28],
    [-29, 0, 0, 26, 76, 5, 0, -10, 12, 9, -1, 0, 12, -22],
]


def test_a_launched_skier_scores_only_what_it_skied_before_the_launch():
    from animat.skier.model import SkierParams

    with Evaluator(SkierParams.from_dict({"hip": "two-axis"}), seconds=6.0, nthread=1, tau=0.3) as ev:
        s = ev(np.array([LAUNCHED]))
    assert s.fell[0] and 3.0 < s.scored_seconds[0] < 3.6  # not at the tilt (~6 s): at the launch
    assert 1.0 < s.net_forward_m[0] < 5.0 and s.fitness[0] < 5.0  # it had skied ~2.3 m; 54 m were counted before


# a two-axis V-skater bred with a push-off bonus: 25.5 m in 20 s without falling on five alternating push-offs
# (tests/fixtures/skier_vskater.json says how it was bred)
SKATER = json.loads((Path(__file__).parents[1] / "fixtures" / "skier_vskater.json").read_text())["genes"]


def test_the_skate_weight_counts_the_push_offs_the_replay_reports():
    """Training reads the push-offs from the skis' contact sensors in the rollout; the replay from its step loop's
    contacts: the same push-offs, so the extra fitness is ``skate_weight`` times the metres skated on them."""
    from animat.skier import pushoff
    from animat.skier.model import SkierParams
    from animat.skier.replay import pushoff_report, ski_yaw
    from animat.skier.rollout import trajectory

    params = SkierParams.from_dict({"hip": "two-axis"})
    genes = np.array([SKATER, np.zeros((10, 14), dtype=np.int64)])  # the skater, and the standing pose (no push-offs)
    with (
        Evaluator(params, nthread=1, tau=0.3) as plain,
        Evaluator(params, nthread=1, tau=0.3, skate_weight=2.0) as skating,
    ):
        a, b = plain(genes), skating(genes)
    traj = trajectory(params, np.array(SKATER), 20.0, 0.02, 0.3)
    rep = pushoff_report(traj, ski_yaw(traj), 3.0)
    assert not a.fell.any() and a.net_forward_m[0] > 20.0
    assert rep["pushoff_legs_alternate"] and rep["mean_pushoff_yaw_deg"] >= 10.0
    skated = pushoff.skating_progress(rep["pushoffs"], traj["t"], traj["root_pos"][:, 0], 1.5)
    assert b.fitness[0] - a.fitness[0] == pytest.approx(2.0 * skated, rel=1e-9) and 3.0 < skated < a.net_forward_m[0]
    assert b.fitness[1] == a.fitness[1]


def test_ski_sensors_read_the_contact_forces_and_ski_yaws_of_the_step_loop():
    import mujoco

    from animat.skier.model import SkierParams, build_model, ski_readings
    from animat.skier.rollout import ski_forces

    model = build_model(SkierParams.from_dict({"hip": "two-axis"}))
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    ctrl = G.controls(np.array(SKATER)[None], 200, model.opt.timestep, 0.3)[0]
    skis = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, f"{side}_ski") for side in ("left", "right")]
    for k in range(200):
        d.ctrl[actuator_order(model)] = ctrl[k]
        mujoco.mj_step(model, d)
    mujoco.mj_forward(model, d)  # sensors and contacts of one and the same state
    force, yaw = ski_readings(d.sensordata)
    assert np.allclose(force, ski_forces(model, d, [{g} for g in skis]), atol=1e-6) and force[:, 2].sum() > 100.0
    tips = [
        d.geom_xpos[g] - d.geom_xmat[g].reshape(3, 3)[:, 2] for g in skis
    ]  # the capsule's z axis points to its tail
    assert np.allclose(yaw, [math.atan2(*(tip - d.geom_xpos[g])[1::-1]) for tip, g in zip(tips, skis)], atol=1e-9)
