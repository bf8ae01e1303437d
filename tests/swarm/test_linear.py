"""Consensus and second-order dt bounds, Van Loan ellipse / segment / circle limits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from animat.errors import AnimatError
from animat.swarm import linear


def _consensus_ratio(n, scale, dt, steps, seed=0):
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=(n, 2))
    target = np.linspace(x0[0], x0[-1], n)
    res = linear.simulate_consensus(x0, dt, steps, scale, record_every=steps)
    e0 = np.abs(res.positions[0] - target).max()
    return np.abs(res.positions[-1] - target).max() / e0


def test_closed_form_bound_matches_eigenvalues_and_classic_value():
    assert linear.consensus_dt_max(8, 1.0) == pytest.approx(2 / (2 + 2 * math.cos(math.pi / 7)), rel=1e-15)
    assert 0.49 < linear.consensus_dt_max(8) < 0.55
    for n in (3, 5, 8, 20, 51):
        for s in (1.0, 0.5):
            assert linear.consensus_dt_max(n, s) == pytest.approx(linear.consensus_dt_max_eig(n, s), rel=1e-12)
    assert linear.consensus_dt_max(8, 0.5) == pytest.approx(2 * linear.consensus_dt_max(8, 1.0))


def test_classic_demo_049_converges_055_diverges():
    assert _consensus_ratio(8, 1.0, 0.49, 2000) < 1e-10
    assert _consensus_ratio(8, 1.0, 0.55, 2000) > 1e10


@pytest.mark.parametrize("n", [4, 8, 15, 30])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_consensus_bound_is_sharp(n, scale):
    dt_max = linear.consensus_dt_max(n, scale)
    # below the bound the error shrinks as rho^k, rho = max_k |1 + dt lambda_k| over the interior modes
    # lambda_k = s (-2 + 2 cos(k pi / (n - 1))) (the error's norm is within sqrt(n) of its largest mode's),
    # down to float64 round-off
    lam = scale * (-2.0 + 2.0 * np.cos(np.arange(1, n - 1) * np.pi / (n - 1)))
    rho = np.abs(1.0 + 0.99 * dt_max * lam).max()
    assert rho < 1.0 and _consensus_ratio(n, scale, 0.99 * dt_max, 3000) < max(2 * n * rho**3000, 1e-12)
    assert _consensus_ratio(n, scale, 1.01 * dt_max, 3000) > 1e6


@pytest.mark.parametrize("alpha", [1.0, 3.0, 6.0])  # all-complex, mixed, and real critical modes
@pytest.mark.parametrize("n", [5, 8, 16])
def test_second_order_bound_matches_eigenvalues_and_is_sharp(n, alpha):
    for scale in (1.0, 0.5):
        dt_max = linear.second_order_dt_max(n, alpha, scale)
        assert dt_max == pytest.approx(linear.second_order_dt_max_eig(n, alpha, scale), rel=1e-9)
        rng = np.random.default_rng(1)
        x0, v0 = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
        target = np.linspace(x0[0], x0[-1], n)

        def ratio(dt):
            res = linear.simulate_second_order(x0, v0, dt, 30000, alpha, scale, record_every=30000)
            return np.abs(res.positions[-1] - target).max() / np.abs(res.positions[0] - target).max()

        assert ratio(0.99 * dt_max) < 1e-2
        assert ratio(1.01 * dt_max) > 1e2


def test_second_order_complex_modes_bound_is_alpha_over_lambda():
    n, alpha = 8, 1.0  # alpha^2 < 4 |lambda|max: the critical mode is complex
    lam = 2 + 2 * math.cos(math.pi / (n - 1))
    assert linear.second_order_dt_max(n, alpha) == pytest.approx(alpha / lam, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [9, 20])
def test_ellipse_limit(seed, n):
    p0 = np.random.default_rng(seed).normal(size=(n, 2))
    s = linear.ellipse_limit_matrix(p0)
    res = linear.simulate_ellipse(p0, 3000, record_every=3000)
    p = res.positions[-1]
    q = np.einsum("ni,ij,nj->n", p, np.linalg.inv(s), p)
    assert np.abs(q - 1).max() < 1e-8
    _, vecs = np.linalg.eigh(s)
    angles = np.sort(np.degrees(np.arctan2(vecs[1], vecs[0])) % 180)
    assert angles == pytest.approx([45.0, 135.0], abs=1e-9)
    # the iterates are centred and unit-norm per coordinate
    assert np.abs(p.mean(0)).max() < 1e-12
    assert np.linalg.norm(p, axis=0) == pytest.approx([1, 1], abs=1e-12)


def test_ellipse_without_recentring_round_off_grows():
    p0 = np.random.default_rng(0).normal(size=(20, 2))
    drift = np.abs(linear.simulate_ellipse(p0, 2500, recentre=False, record_every=2500).positions[-1].mean(0)).max()
    kept = np.abs(linear.simulate_ellipse(p0, 2500, recentre=True, record_every=2500).positions[-1].mean(0)).max()
    assert kept < 1e-13 and drift > 1e-8


def test_segment_equal_spacing():
    rng = np.random.default_rng(3)
    p0 = rng.normal(scale=5, size=(12, 2))
    res = linear.simulate_segment(p0, 3000, record_every=3000)
    expect = np.linspace(p0[0], p0[-1], 12)
    assert np.abs(res.positions[-1] - expect).max() < 1e-9
    assert np.all(res.positions[-1][[0, -1]] == p0[[0, -1]])


def test_circle_equal_angles_rotating_at_set_speed():
    n, dt, omega, alpha = 13, 0.05, 0.7, 1.5
    th0 = np.sort(np.random.default_rng(4).uniform(0, 2 * np.pi, n))
    res = linear.simulate_circle(th0, dt, 3000, omega=omega, alpha=alpha, radius=2.0, record_every=1)
    gaps = np.diff(res.angles[-1])
    assert gaps == pytest.approx(np.full(n - 1, 2 * np.pi / (n - 1)), abs=1e-9)
    rate = np.diff(res.angles[-50:], axis=0) / dt
    assert rate == pytest.approx(np.full_like(rate, alpha * omega), rel=1e-9)
    assert np.linalg.norm(res.positions[-1], axis=1) == pytest.approx(np.full(n, 2.0))
    # first and last points coincide (the ring closes); angle of point 0 advanced by alpha omega t
    assert res.angles[-1, 0] == pytest.approx(alpha * omega * res.t[-1], rel=1e-12)


def test_bad_inputs():
    with pytest.raises(AnimatError):
        linear.consensus_dt_max(2)
    with pytest.raises(AnimatError):
        linear.simulate_consensus(np.zeros((8, 2)), 0.0, 10)
    with pytest.raises(AnimatError):
        linear.simulate_consensus(np.zeros((8, 2)), 0.1, 10, scale=-1)
    with pytest.raises(AnimatError):
        linear.second_order_dt_max(8, 0.0)
