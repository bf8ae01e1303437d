"""The servos' effort (issue 49): recorded torques, mechanical work, cost of transport, the fitness's effort term."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest
from mujoco import rollout as mj_rollout

from animat.skier import effort
from animat.skier.gene import mirror, standing_genes
from animat.skier.model import DEFAULT_GAINS, JOINTS, TOTAL_MASS, G, SkierParams, joint_kind
from animat.skier.rollout import Evaluator, trajectory


def _genes(n: int = 3) -> np.ndarray:
    """(n, 10, 12): the standing pose and swinging neighbours of it (their limbs move, they stay up for a second)."""
    return standing_genes(np.random.default_rng(7), n, 25.0)


def test_cost_of_transport_work_and_power_closed_forms():
    assert effort.cost_of_transport(574.0, 57.4, 10.0) == pytest.approx(1.0)
    assert np.isnan(effort.cost_of_transport(100.0, 57.4, 0.0)) and np.isnan(effort.cost_of_transport(1.0, 1.0, -2.0))
    p = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    whole = effort.cumulative_work(p, 0.01)
    np.testing.assert_allclose(whole, [[0.01, 0.03, 0.06, 0.10, 0.15]])
    parts = effort.cumulative_work(p[:, 2:], 0.01, effort.cumulative_work(p[:, :2], 0.01)[:, -1])
    assert np.array_equal(parts, whole[:, 2:])  # chunks add up bit for bit
    # positive and negative joint power both count: tau = (2, -3) N m at q' = (1, 1) rad/s -> 5 W
    data = np.array([0.0, 2.0, -3.0, 1.0, 1.0])
    assert effort.servo_power(data, (np.array([1, 2]), np.array([3, 4]))) == 5.0


def test_recorded_torques_equal_the_servo_law():
    """``mujoco.rollout``'s torque readings of step k equal kp (ctrl_k - q) - kv q' at the state before step k, with
    the gains of :data:`animat.skier.model.DEFAULT_GAINS` (the servos have no force range to clamp to); the
    velocity readings are the hinges' q'."""
    with Evaluator(seconds=1.0, nthread=1) as ev:
        model, genes = ev.model, _genes()
        ctrl = ev.controls(genes)
        init = np.tile(ev.initial_state, (len(genes), 1))
        states, sensed = mj_rollout.rollout(model, mujoco.MjData(model), init, ctrl)
    before = np.concatenate([init[:, None], states[:, :-1]], axis=1)  # the state each step starts from
    joints = model.actuator_trnid[:, 0]
    q = before[..., 1 + model.jnt_qposadr[joints]]
    qd = before[..., 1 + model.nq + model.jnt_dofadr[joints]]
    names = [model.actuator(i).name for i in range(model.nu)]
    kp = np.array([DEFAULT_GAINS["kp"][joint_kind(n)] for n in names])
    kv = np.array([DEFAULT_GAINS["kv"][joint_kind(n)] for n in names])
    assert not model.actuator_forcelimited.any()
    lo, hi = model.actuator_ctrlrange.T
    torque_cols, speed_cols = effort.servo_columns(model)
    torque = sensed[..., torque_cols]
    np.testing.assert_allclose(torque, kp * (np.clip(ctrl, lo, hi) - q) - kv * qd, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sensed[..., speed_cols], qd, rtol=1e-12, atol=1e-12)
    assert np.abs(torque).max() > 50.0 and np.abs(qd).max() > 0.5  # the servos work: not a test of zeros


def test_replay_work_equals_the_training_evaluators_and_the_effort_term():
    """The replay's step loop and the chunked rollout sum the same work bit for bit; the effort term takes
    ``effort_weight * W / (m g)`` off the fitness; a skier that does not move does (next to) no work."""
    genes = _genes()
    with Evaluator(seconds=1.0, nthread=1, chunk_seconds=0.3) as ev:
        plain = ev(genes)
    with Evaluator(seconds=1.0, nthread=1, chunk_seconds=None, effort_weight=0.5) as ev:
        taxed = ev(genes)
    assert not plain.fell.any() and np.array_equal(plain.work_J, taxed.work_J)
    np.testing.assert_array_equal(taxed.fitness, plain.fitness - 0.5 * plain.work_J / (TOTAL_MASS * G))
    for gene, work in zip(genes, plain.work_J):
        traj = trajectory(SkierParams(), gene, 1.0)
        assert traj["work"][-1] == work and np.all(np.diff(traj["work"]) >= 0)
    assert plain.work_J[0] < 1e-3 * plain.work_J[1:].min()  # gene 0 is the standing pose: it holds still


def test_an_allowance_charges_only_the_work_beyond_its_cost_of_transport():
    """``effort_free_cot``: the term takes ``effort_weight * max(0, W - c m d) / (m g)`` off the fitness, d the progress
    the fitness counted; an allowance above a skier's cost of transport leaves its fitness as without the term."""
    assert effort.effort_metres(1000.0, 5.0, 50.0, 10.0, 2.0) == pytest.approx((1000.0 - 500.0) / 500.0)
    assert effort.effort_metres(400.0, 5.0, 50.0, 10.0, 2.0) == 0.0  # within the allowance: free
    genes = _genes(8)
    with Evaluator(seconds=1.0, nthread=1) as ev:
        plain = ev(genes)
    moving = plain.progress_m > 0.01
    assert moving.sum() >= 4 and np.all(plain.fitness == plain.progress_m + 5.0)  # none fell: the bonus
    cot = plain.work_J[moving] / (TOTAL_MASS * plain.progress_m[moving])  # J/(kg m) over the counted progress
    c = float(np.median(cot))
    with Evaluator(seconds=1.0, nthread=1, effort_weight=2.0, effort_free_cot=c) as ev:
        taxed = ev(genes)
    excess = np.maximum(plain.work_J - c * TOTAL_MASS * plain.progress_m, 0.0)
    np.testing.assert_allclose(plain.fitness - taxed.fitness, 2.0 * excess / (TOTAL_MASS * G), rtol=1e-12, atol=1e-12)
    assert np.any(plain.fitness[moving] == taxed.fitness[moving]) and np.any(plain.fitness > taxed.fitness)


def test_fallen_skiers_work_stops_at_the_fall():
    """A skier that falls is charged the work up to the frame before its fall, as its progress is counted."""
    g = np.zeros((1, 10, len(JOINTS)), dtype=np.int64)
    g[0, :, JOINTS.index("torso")] = 40  # bent forward at the waist with straight legs...
    g[0, ::2, JOINTS.index("left_shoulder")] = 80  # ...flinging the arms: it topples
    g = mirror(g)
    with Evaluator(seconds=3.0, nthread=1) as ev:
        s = ev(g)
    assert s.fell[0] and 0.5 < s.scored_seconds[0] < 2.5
    traj = trajectory(SkierParams(), g[0], 3.0)
    frame = int(round(s.scored_seconds[0] / ev.frame_dt))  # the first fallen frame
    assert s.work_J[0] == traj["work"][frame - 1] < traj["work"][-1]


def test_skier_replay_reports_work_and_cost_of_transport(animat_cli, tmp_path):
    gene = tmp_path / "gene.json"
    gene.write_text(json.dumps({"states": _genes(2)[1].tolist()}))
    code, _, err = animat_cli("skier", "replay", str(gene), "-s", "1", "--no-animation", "--out", str(tmp_path / "r"))
    assert code == 0, err
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    with np.load(tmp_path / "r" / "trajectory.npz") as z:
        work, torque = z["work"], z["servo_torque"]
    assert s["mechanical_work_J"] > 0 and s["mechanical_work_J"] == pytest.approx(float(work[-1]), rel=1e-6)
    assert torque.shape == (len(work), len(JOINTS)) and np.abs(torque).max() > 10.0
    if s["net_forward_m"] > 0:
        assert s["cost_of_transport_J_per_kg_m"] == pytest.approx(
            s["mechanical_work_J"] / (TOTAL_MASS * s["net_forward_m"])
        )
    else:
        assert s["cost_of_transport_J_per_kg_m"] is None  # strict JSON: NaN (got nowhere) as null


def test_the_effort_configs_term_reaches_the_evaluator():
    """configs/skier_effort.toml as ``skier train`` resolves it: configs/skier_symmetric.toml's task with creep steps
    and an effort term whose allowance leaves work up to ``effort_free_cot`` per kg and metre free; against the same
    file without the term (its baseline), the fitness loses exactly ``effort_weight * effort_metres``."""
    from pathlib import Path

    from animat.skier.options import TrainConfig
    from animat.skier.train import make_evaluator

    configs = Path(__file__).parents[2] / "configs"
    taxed = TrainConfig.build(configs / "skier_effort.toml", seconds=1.0, nthread=1)
    plain = TrainConfig.build(configs / "skier_effort.toml", seconds=1.0, nthread=1, effort_weight=0.0)
    symmetric = TrainConfig.build(configs / "skier_symmetric.toml", seconds=1.0, nthread=1)
    assert taxed.effort_weight > 0 and taxed.effort_free_cot > 0 and taxed.creep_rate > 0
    changed = ("effort_weight", "effort_free_cot", "creep_rate", "creep_deg", "generations")
    assert {**vars(taxed), **{k: getattr(symmetric, k) for k in changed}} == vars(symmetric)
    genes = _genes(8)
    with make_evaluator(taxed, taxed.skier_params()) as a, make_evaluator(plain, plain.skier_params()) as b:
        t, p = a(genes), b(genes)
    assert np.array_equal(t.net_forward_m, p.net_forward_m) and np.array_equal(t.work_J, p.work_J)
    charged = effort.effort_metres(p.work_J, p.progress_m, TOTAL_MASS, G, taxed.effort_free_cot)
    np.testing.assert_allclose(p.fitness - t.fitness, taxed.effort_weight * charged, rtol=1e-12, atol=1e-12)
    assert (p.fitness - t.fitness).max() > 0.1  # the swinging skiers spend more than the allowance in a second
