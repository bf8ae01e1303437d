"""The fruit fly's hover fitness: zero for a perfect hover, each term against its closed form, NaN for
crashes, and the batched fitness object."""

from __future__ import annotations

import math
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve.network import init_genes, unflatten
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import pitch_quat
from animat.fly.drosophila.rollout import N_INPUTS, Trajectory
from animat.fly.drosophila.tasks import HoverFitness, hover, score, stroke_plane_tilt_cos
from animat.rotations import quat_mul, quat_to_mat

P = DrosophilaParams()
L = P.body_length


def _hover_quat(n):
    return np.tile(pitch_quat(P.stroke_plane_angle), (n, 1)).astype(np.float64)


def test_perfect_hover_scores_zero_and_each_term_is_its_closed_form():
    T = 10
    pos, quat = np.zeros((T, 3)), _hover_quat(T)
    assert abs(hover(P, pos, quat)) < 1e-7  # the float32 hover quaternion's rounding
    up = pos.copy()
    up[:, 2] = 2 * L
    np.testing.assert_allclose(hover(P, up, quat), -2.0, atol=1e-7)
    side = pos.copy()
    side[:, 0], side[:, 1] = 3 * L, 4 * L  # 5 L away
    np.testing.assert_allclose(hover(P, side, quat), -1.0, atol=1e-7)
    level = np.tile([1.0, 0.0, 0.0, 0.0], (T, 1))  # body level: the stroke plane tilted by 45°
    np.testing.assert_allclose(hover(P, pos, level), -(1 - math.cos(P.stroke_plane_angle)), rtol=1e-12)


def test_tilt_cosine_matches_the_rotation_matrix():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(20, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    b = P.stroke_plane_angle
    normal_world = np.asarray(quat_to_mat(jnp.asarray(q))) @ np.array([math.sin(b), 0.0, math.cos(b)])
    np.testing.assert_allclose(stroke_plane_tilt_cos(P, q), normal_world[:, 2], atol=1e-6)
    flipped = np.asarray(quat_mul(jnp.asarray([0.0, 1.0, 0.0, 0.0]), jnp.asarray(pitch_quat(b))))
    np.testing.assert_allclose(stroke_plane_tilt_cos(P, flipped), -1.0, atol=1e-6)  # upside down


def test_score_averages_starts_and_gives_nan_for_crashes():
    T = 4
    pos = np.zeros((2, 3, T, 3), np.float32)
    pos[0, 1, :, 2] = 3 * L
    quat = np.broadcast_to(pitch_quat(P.stroke_plane_angle), (2, 3, T, 4))
    crashed = np.zeros((2, 3, T), bool)
    crashed[1, 2, -1] = True
    traj = Trajectory(
        pos,
        quat,
        crashed,
        np.zeros((2, 3, T)),
        np.zeros((2, 3, T, N_PATTERN)),
        np.zeros((2, 3, T), np.int32),
        np.zeros((2, 3, T, 0, 2, 3)),
        np.zeros((2, 3, T, 0, 3)),
        np.zeros((2, 3, T, 0, 4)),
    )
    values = score(P, traj)
    np.testing.assert_allclose(values[0], -1.0, rtol=1e-6)
    assert np.isnan(values[1])


def test_hover_fitness_is_deterministic_and_picklable():
    layers = (N_INPUTS, 8, N_PATTERN)
    nets = unflatten(init_genes(jax.random.PRNGKey(0), 6, layers, 0.5), layers)
    fit = HoverFitness(P, 0.05, ("tanh", "tanh"), starts=2, noise=0.05)
    a, b = fit(nets), pickle.loads(pickle.dumps(fit))(nets)
    assert a.shape == (6,) and np.all(np.isfinite(a)) and np.all(a <= 0)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ConfigError):
        HoverFitness(P, 0.0, ("tanh", "tanh"))
    with pytest.raises(ConfigError):
        HoverFitness(P, 0.1, ("tanh", "tanh"), starts=0)
