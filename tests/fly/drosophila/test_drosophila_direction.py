"""The fruit fly's direction tasks (issue 50): the moving reference point the network observes, the direction
fitness against its closed forms, and its options."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve.network import init_genes, unflatten
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.fly.drosophila.physics import pitch_quat
from animat.fly.drosophila.rollout import (
    N_INPUTS,
    N_OUTPUTS,
    REFERENCE_REACH,
    Trajectory,
    simulate_population,
    start_states,
)
from animat.fly.drosophila.tasks import DIRECTIONS, DirectionFitness, direction_score

P = DrosophilaParams()
V = 0.3  # m/s


def _flight(pos: np.ndarray, crashed: bool = False) -> Trajectory:
    """A recorded flight ``(P, S, T, ...)`` with positions ``pos`` in the hover posture (stroke plane level)."""
    shape = pos.shape[:-1]
    quat = np.broadcast_to(pitch_quat(P.stroke_plane_angle), shape + (4,)).astype(np.float32)
    zeros = lambda *tail: np.zeros(shape + tail, np.float32)
    return Trajectory(pos, quat, np.full(shape, crashed), zeros(), zeros(11), zeros(), zeros(0), zeros(0), zeros(0))


def _times(T: int) -> np.ndarray:
    return P.sample_dt * np.arange(1, T + 1)


def test_on_the_moving_point_scores_zero_at_rest_loses_the_windows_and_the_lag():
    """A fly exactly on the point scores 0 (a level stroke plane); one at rest at the start loses every window (1)
    and 0.25 × its mean lag in metres per m/s (the point's mean distance, v · mean t, over v)."""
    T = 200  # 1 s: two 0.5 s windows, the first left out
    cmd = np.asarray(DIRECTIONS["forward"]) * V
    on = _times(T)[:, None] * cmd
    rest = np.zeros((T, 3))
    got = direction_score(P, _flight(np.stack([on, rest])[:, None]), cmd)
    assert got[0] == pytest.approx(0.0, abs=1e-6)
    assert got[1] == pytest.approx(-(1.0 + 0.25 * _times(T).mean()), abs=1e-7)  # float32 hover quaternion


def test_across_the_course_costs_twice_and_a_crash_is_nan():
    T = 200
    cmd = np.asarray(DIRECTIONS["up"]) * V
    aside = _times(T)[:, None] * cmd + np.array([0.01, 0.0, 0.0])  # 1 cm beside the point all along, on its pace
    got = direction_score(P, _flight(aside[None, None]), cmd, position_weight=1.0, velocity_weight=0.0)
    assert got[0] == pytest.approx(-2 * 0.01 / V, rel=1e-6)
    assert np.isnan(direction_score(P, _flight(aside[None, None], crashed=True), cmd)[0])


def test_a_moving_point_is_observed_and_its_offset_clipped_at_the_reach():
    """A point rising at 0.3 m/s changes the flight after the first beat (the first decision is taken at the start,
    where the still point is too); points rising at 50 and 100 m/s are 10 body lengths (the reach) above the fly
    within 5 steps, long before the first beat ends, so the networks see the same clipped offset and fly the same."""
    layers = [N_INPUTS, 8, N_OUTPUTS]
    nets = unflatten(np.asarray(init_genes(jax.random.PRNGKey(1), 3, layers, 0.3)), layers)
    acts = ("tanh", "tanh")
    starts = start_states(P, 2, 0)
    fly = lambda v: simulate_population(P, nets, acts, 0.03, starts, ref_vel=np.tile([0.0, 0.0, v], (2, 1)))
    still = simulate_population(P, nets, acts, 0.03, starts)
    moving = fly(0.3)
    first = still.updates[:, :, 0] == 1  # no beat ended within the first sample: one decision, at the start
    assert first.any() and np.array_equal(moving.pattern[:, :, 0][first], still.pattern[:, :, 0][first])
    assert not np.array_equal(moving.pattern[:, :, -1], still.pattern[:, :, -1])
    assert REFERENCE_REACH * P.body_length / (50.0 * P.dt) <= 5
    fast, faster = fly(50.0), fly(100.0)
    assert all(np.array_equal(a, b) for a, b in zip(fast, faster))
    assert not np.array_equal(fast.pattern, moving.pattern)


def test_the_direction_fitness_and_its_options():
    with pytest.raises(ConfigError, match="unknown direction"):
        DirectionFitness(P, 2.0, ("tanh",), "sideways")
    with pytest.raises(ConfigError, match="speed"):
        DirectionFitness(P, 2.0, ("tanh",), "up", speed=0.0)
    with pytest.raises(ConfigError, match="two windows"):
        DirectionFitness(P, 0.5, ("tanh",), "up")
    cfg = DrosophilaTrainConfig.build(fitness="left", speed=0.2)
    assert (cfg.fitness, cfg.speed, cfg.position_weight, cfg.velocity_weight) == ("left", 0.2, 0.25, 1.0)
    with pytest.raises(ConfigError):
        DrosophilaTrainConfig.build(fitness="sideways")
    with pytest.raises(ConfigError):
        DrosophilaTrainConfig.build(speed=-0.1)
    np.testing.assert_allclose(DirectionFitness(P, 2.0, ("tanh",), "left", 0.2).command_velocity, [0.0, 0.2, 0.0])


def test_the_population_split_over_threads_flies_number_for_number_as_in_one_call():
    """Five networks from two starts in parts of 3 + 3 (the last network repeated) or 2 + 2 + 2, each part's call on
    its own thread: every recorded array exactly as in one call; one network alone too (flown doubled)."""
    layers = [N_INPUTS, 8, N_OUTPUTS]
    nets = unflatten(np.asarray(init_genes(jax.random.PRNGKey(3), 5, layers, 0.3)), layers)
    acts, starts = ("tanh", "tanh"), start_states(P, 2, 1)
    one = simulate_population(P, nets, acts, 0.03, starts, threads=1)
    assert np.abs(one.pos[:, :, -1]).max() > 0
    for threads in (2, 3):
        split = simulate_population(P, nets, acts, 0.03, starts, threads=threads)
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(one, split)), threads
    last = simulate_population(P, jax.tree_util.tree_map(lambda a: a[4:], nets), acts, 0.03, starts, threads=2)
    assert all(np.array_equal(a[4:], b, equal_nan=True) for a, b in zip(one, last))
