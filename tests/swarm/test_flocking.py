"""Olfati-Saber flocking: formulas, Algorithms 1-3, grid vs all-pairs, overflow, determinism."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import AnimatError
from animat.swarm.flocking import (
    FlockParams,
    Obstacles,
    alpha_accel_allpairs,
    bump,
    check_start_outside,
    clearance,
    phi_alpha,
    phi_beta,
    sigma_norm,
)
from animat.swarm.metrics import flock_metrics, laplacian_rank_connectivity, neighbour_pairs, relative_connectivity
from animat.swarm.run import SwarmConfig, flock_start
from animat.swarm.simulate import simulate_flock
from animat.swarm.verlet import ListSpec, alpha_accel_list, list_ids, new_list, refresh


def test_scalar_functions_match_the_paper():
    prm = FlockParams.build()
    assert (prm.r, prm.d_beta, prm.r_beta, prm.c2) == pytest.approx((8.4, 4.2, 5.04, 2 * math.sqrt(prm.c1)))
    assert float(sigma_norm(jnp.float32(49.0), 0.1)) == pytest.approx((math.sqrt(1 + 4.9) - 1) / 0.1, rel=1e-6)
    z = jnp.array([0.0, 0.1, 0.2, 0.6, 1.0, 1.1])
    assert np.asarray(bump(z, 0.2)) == pytest.approx([1, 1, 1, 0.5, 0, 0], abs=1e-6)
    x = np.linspace(-0.2, 1.2, 10001)  # the vectorised polynomial cosine against libm, float64 reference
    ref = np.where(x < 0.2, 1.0, np.where(x <= 1.0, 0.5 * (1 + np.cos(np.pi * (x - 0.2) / 0.8)), 0.0))
    assert np.abs(np.asarray(bump(jnp.asarray(x, jnp.float32), 0.2)) - ref).max() < 1e-6
    # phi_a vanishes at the desired distance, repels inside, attracts outside, is 0 beyond r
    assert float(phi_alpha(jnp.float32(prm.d_alpha), prm)) == pytest.approx(0.0, abs=1e-6)
    assert (
        float(phi_alpha(jnp.float32(0.5 * prm.d_alpha), prm))
        < 0
        < float(phi_alpha(jnp.float32(0.5 * (prm.d_alpha + prm.r_alpha)), prm))
    )
    assert float(phi_alpha(jnp.float32(prm.r_alpha * 1.01), prm)) == 0.0
    assert float(phi_beta(jnp.float32(0.5 * prm.d_b), prm)) < 0 and float(phi_beta(jnp.float32(prm.d_b), prm)) == 0.0


def test_phi_alpha_vanishes_at_d_also_when_a_differs_from_b():
    """phi(0) = 0 needs c = |a - b| / sqrt(4ab) (Olfati-Saber 2006, eq. 15); with a = b, c = 0 hides its form."""
    prm = FlockParams.build({"a": 2.0, "b": 5.0})
    assert prm.c_phi == pytest.approx(3.0 / math.sqrt(40.0))
    assert float(phi_alpha(jnp.float32(prm.d_alpha), prm)) == pytest.approx(0.0, abs=1e-6)
    assert (
        float(phi_alpha(jnp.float32(0.5 * prm.d_alpha), prm))
        < 0
        < float(phi_alpha(jnp.float32(1.1 * prm.d_alpha), prm))
    )


def test_gradient_term_is_minus_the_gradient_of_the_pair_potential():
    """With equal velocities, u_i = c1a sum_j phi_a(||q_j - q_i||_s) n_ij = -grad_i V, V = sum over pairs of
    psi_a(||q_j - q_i||_s), psi_a' = phi_a (Olfati-Saber 2006, eqs. 16, 23): central differences of V,
    each pair's change psi_a(z+) - psi_a(z-) by Gauss-Legendre quadrature of phi_a, against the control."""
    prm = FlockParams.build({"a": 3.0, "b": 5.0}, algorithm=1)
    q = np.array([[0.0, 0.0], [5.5, 1.0], [2.0, 6.0], [7.0, 6.5]])
    x, w = np.polynomial.legendre.leggauss(8)

    def psi_change(z_lo, z_hi):
        mid, half = 0.5 * (z_lo + z_hi), 0.5 * (z_hi - z_lo)
        return half * float(np.sum(w * np.asarray(phi_alpha(jnp.asarray(mid + half * x, jnp.float32), prm), float)))

    def z(a, b):  # the sigma-norm in float64 (differences of float32 norms would swamp h)
        return (math.sqrt(1.0 + prm.eps * np.sum((a - b) ** 2)) - 1.0) / prm.eps

    u = np.asarray(alpha_accel_allpairs(jnp.asarray(q, jnp.float32), jnp.ones((4, 2), jnp.float32), prm))
    h = 1e-3
    grad = np.zeros_like(q)
    for i in range(len(q)):
        for k in range(2):
            e = np.zeros(2)
            e[k] = h
            grad[i, k] = sum(psi_change(z(q[i] - e, q[j]), z(q[i] + e, q[j])) for j in range(len(q)) if j != i) / (
                2 * h
            )
    assert np.abs(u).max() > 0.1  # the pairs are in range and not at rest
    np.testing.assert_allclose(u, -prm.c1_alpha * grad, rtol=1e-4, atol=1e-4)


def test_algorithm1_conserves_momentum():
    """Pair terms are antisymmetric (n_ji = -n_ij, a_ij = a_ji), so sum_i p_i stays constant."""
    prm = FlockParams.build(algorithm=1)
    q0, p0 = _start(40, 20.0, 3)
    run = simulate_flock(q0, p0, prm, 2000, record_every=500, neighbours="allpairs")
    momentum = run.velocities.sum(axis=1)
    assert np.abs(momentum - momentum[0]).max() < 1e-4 * np.abs(run.velocities).sum(axis=1).max()
    assert np.abs(run.velocities[-1] - run.velocities[0]).max() > 0.1  # the agents did interact


def test_beta_agent_of_a_sphere_and_a_wall():
    """The beta-agent on a sphere: q^ = mu q + (1 - mu) y, p^ = mu P p, mu = R / ||q - y||, P = I - a a^T;
    on a wall: q^ = P q + (I - P) y, p^ = P p (Olfati-Saber 2006, Lemma 4); u = c1b phi_b n^ + c2b b (p^ - p)."""
    from animat.swarm.flocking import beta_accel

    prm = FlockParams.build(algorithm=3)
    q, p = np.array([[8.0, 0.0]]), np.array([[1.0, 1.0]])

    def expected(qh, ph):
        dq = qh - q[0]
        z = float(sigma_norm(np.sum(dq * dq), prm.eps))
        n = dq / math.sqrt(1.0 + prm.eps * np.sum(dq * dq))
        b = float(bump(jnp.float32(z / prm.d_b), prm.h_beta))
        return prm.c1_beta * float(phi_beta(jnp.float32(z), prm)) * n + prm.c2_beta * b * (ph - p[0])

    sphere = Obstacles.make(2, [((0.0, 0.0), 5.0)])
    got = np.asarray(beta_accel(jnp.asarray(q, jnp.float32), jnp.asarray(p, jnp.float32), prm, sphere))[0]
    np.testing.assert_allclose(got, expected(np.array([5.0, 0.0]), np.array([0.0, 5.0 / 8.0])), rtol=1e-5, atol=1e-6)
    assert got[0] > 0  # pushed away from the sphere
    wall = Obstacles.make(2, [], [((5.0, 0.0), (1.0, 0.0))])
    got = np.asarray(beta_accel(jnp.asarray(q, jnp.float32), jnp.asarray(p, jnp.float32), prm, wall))[0]
    np.testing.assert_allclose(got, expected(np.array([5.0, 0.0]), np.array([0.0, 1.0])), rtol=1e-5, atol=1e-6)
    # an agent at a sphere's centre (only after a failure) gets a finite control, not a NaN for all
    centre = beta_accel(jnp.zeros((1, 2)), jnp.zeros((1, 2)), prm, sphere)
    assert np.isfinite(np.asarray(centre)).all()


def test_damping_bound():
    """Euler on p' = -c p needs dt < 2 / c: c2 = 2 sqrt(c1) toward the gamma-agent, c2_beta at obstacles."""
    assert math.isinf(FlockParams.build(algorithm=1).dt_max)
    assert FlockParams.build(algorithm=2).dt_max == pytest.approx(2.0 / (2.0 * math.sqrt(0.02)))
    assert FlockParams.build(algorithm=3).dt_max == pytest.approx(2.0 / (2.0 * math.sqrt(10.0)))


def test_bad_parameters_raise():
    for bad in ({"a": 6.0}, {"eps": 0.0}, {"h": 1.5}, {"r": 5.0}, {"nonsense": 1.0}):
        with pytest.raises(AnimatError):
            FlockParams.build(bad)
    with pytest.raises(AnimatError):
        FlockParams.build({"c1": 0.0}, algorithm=2)
    obs = Obstacles.make(2, [((0.0, 0.0), 5.0)])
    with pytest.raises(AnimatError, match="overlap the start"):
        check_start_outside(np.array([[10.0, 0.0], [1.0, 1.0]]), obs)


def _start(n, spread, seed, dim=2, speed=2.0):
    cfg = SwarmConfig.build(scheme="flocking", agents=n, spread=spread, seed=seed, dim=dim, speed=speed)
    return flock_start(cfg, np.random.default_rng(seed))


def test_connectivity_equals_laplacian_rank():
    q, _ = _start(60, 30.0, 5)
    assert relative_connectivity(q, 8.4)[0] == pytest.approx(laplacian_rank_connectivity(q, 8.4))


def test_algorithm2_forms_a_quasi_lattice():
    """150 agents from a moderate random start (+-45, no two closer than 3, speeds up to 2): C = 1 and
    every neighbour distance within 10% of d after 150 s. Seed 5: of seeds 0-9 all reach C = 1, but
    only 5 and 8 end within 10% (see the slow test over seeds below for what holds for all ten)."""
    prm = FlockParams.build(algorithm=2)
    q0, p0 = _start(150, 45.0, 5)
    run = simulate_flock(q0, p0, prm, 15000, record_every=15000, neighbours="allpairs")
    m0 = flock_metrics(run.positions[0], run.velocities[0], prm.d, prm.r)
    m = flock_metrics(run.positions[-1], run.velocities[-1], prm.d, prm.r)
    assert m0["connectivity"] < 1
    assert m["connectivity"] == 1.0
    assert m["max_neighbour_error"] < 0.10
    assert m["velocity_mismatch"] < 1e-4


def _adjacency(dist: np.ndarray, prm: FlockParams) -> np.ndarray:
    """The paper's spatial adjacency a_ij = rho_h(||q_j - q_i||_s / r_a) (eq. 11) for distances (float64)."""
    z = (np.sqrt(1.0 + prm.eps * dist**2) - 1.0) / prm.eps / prm.r_alpha
    return np.where(
        z < prm.h_alpha, 1.0, np.where(z <= 1.0, 0.5 * (1 + np.cos(np.pi * (z - prm.h_alpha) / (1 - prm.h_alpha))), 0.0)
    )


@pytest.mark.slow
def test_algorithm2_over_seeds_forms_quasi_lattices():
    """Seeds 0-9 of the moderate start (150 agents in +-45, no two closer than 3, speeds up to 2) with
    a gentle navigational gain c1 = 0.005 (c2 = 2 sqrt(c1)) and 400 s to settle (~2 min in all).

    Every seed reaches C = 1 with matched velocities and no pair closer than 0.9 d. Quasi alpha-lattice
    with delta = 0.1 d, counted two ways: (a) the paper's Def. 2 literally, every pair closer than r:
    6 of 10; (b) every pair the flock is actually bonded by, adjacency a_ij >= 0.01 (the paper's
    weighted proximity graph, eq. 11): 8 of 10. The difference is seeds 2 and 4, each with one pair at
    1.196-1.197 d -- inside r = 1.2 d by 0.3%, a_ij = 4e-5 and 7e-5, links in name only; the two seeds
    failing (b), 7 and 9, keep defect bonds at 1.12-1.13 d with a_ij = 0.02-0.03, local minima of the
    collective potential that the fading attraction cannot pull in. A stronger pull (c1 = 0.02, the CLI default) settles
    faster but squeezes pairs to 0.84 d: 2 of 10 by either count."""
    prm = FlockParams.build({"c1": 0.005}, algorithm=2)
    literal = bonded = 0
    for seed in range(10):
        q0, p0 = _start(150, 45.0, seed)
        run = simulate_flock(q0, p0, prm, 40000, record_every=40000, neighbours="allpairs")
        q = run.positions[-1]
        m = flock_metrics(q, run.velocities[-1], prm.d, prm.r)
        assert m["connectivity"] == 1.0 and m["velocity_mismatch"] < 1e-6, seed
        assert m["min_distance"] > 0.9 * prm.d, seed
        _, dist = neighbour_pairs(q, prm.r)
        err = np.abs(dist - prm.d) / prm.d
        literal += err.max() < 0.10
        bonded += err[_adjacency(dist, prm) >= 0.01].max() < 0.10
    assert literal >= 6 and bonded >= 8


def test_algorithm1_fragments_from_a_wide_start():
    prm = FlockParams.build(algorithm=1)
    q0, p0 = _start(150, 150.0, 1)
    run = simulate_flock(q0, p0, prm, 4000, record_every=400, neighbours="grid")
    m = flock_metrics(run.positions[-1], run.velocities[-1], prm.d, prm.r)
    assert m["connectivity"] < 1 and m["components"] > 1
    assert (
        m["edges"] > flock_metrics(run.positions[0], run.velocities[0], prm.d, prm.r)["edges"]
    )  # local flocks did form
    # the same start under Algorithm 2 gathers into one flock (all-pairs: exact, and at 150 agents
    # cheaper than a grid run whose lists outgrow their starting sizes as the flock gathers)
    run2 = simulate_flock(q0, p0, FlockParams.build(algorithm=2), 15000, record_every=15000, neighbours="allpairs")
    assert flock_metrics(run2.positions[-1], run2.velocities[-1], prm.d, prm.r)["connectivity"] == 1.0


@pytest.mark.parametrize("dim", [2, 3])
def test_algorithm3_keeps_agents_outside_obstacles(dim):
    prm = FlockParams.build(algorithm=3)
    z = [0.0] * (dim - 2)
    obs = Obstacles.make(dim, [((60.0, 0.0, *z), 10.0), ((95.0, 22.0, *z), 8.0)], [((0.0, -30.0, *z), (0.0, 1.0, *z))])
    q0, p0 = _start(60, 20.0, 2, dim=dim)
    check_start_outside(q0, obs)
    goal = np.array([160.0, 0.0, *z])
    # lists sized for the flock from the start (16 slots; the overflow retry has its own test below)
    run = simulate_flock(
        q0, p0, prm, 12000, obstacles=obs, gamma_pos=goal, record_every=5, neighbours="grid", width=16, capacity=16
    )
    clear = np.array([clearance(q, obs).min() for q in run.positions])
    assert clear.min() > 0.0
    assert clear.min() < prm.d_beta  # the flock really met the obstacles
    assert run.positions[-1][:, 0].mean() > 100.0  # and got past them toward the goal


@partial(jax.jit, static_argnums=(2, 3))
def _list_accel(q, p, prm, spec):
    """(alpha control from a fresh list, the list), one compiled program."""
    nl = new_list(q, prm, spec)
    return alpha_accel_list(q, p, nl.idx, prm), nl


@pytest.mark.parametrize("dim", [2, 3])
def test_grid_agrees_with_all_pairs(dim):
    rng = np.random.default_rng(7)
    n = 2500  # more than one block of the force evaluation (BLOCK = 2048)
    prm = FlockParams.build()
    q = jnp.asarray(rng.uniform(0, 7 * n ** (1 / dim), (n, dim)), jnp.float32)
    p = jnp.asarray(rng.normal(size=(n, dim)), jnp.float32)
    ref = jax.jit(alpha_accel_allpairs, static_argnums=2)(q, p, prm)
    u, nl = _list_accel(q, p, prm, ListSpec(2.0, 64, 64, 4 * n))
    assert not bool(nl.overflow)
    assert float(jnp.max(jnp.abs(u - ref))) <= 1e-5 * max(1.0, float(jnp.max(jnp.abs(ref))))
    # the list holds exactly the pairs within r + skin (from a brute-force count), own id in spare slots
    dist = np.linalg.norm(np.asarray(q)[:, None] - np.asarray(q)[None], axis=-1)
    want = (dist < prm.r + 2.0).sum(1) - 1
    idx = np.asarray(list_ids(nl, n))
    assert np.array_equal((idx != np.arange(n)[:, None]).sum(1), want)
    assert int(nl.max_count) == want.max()
    # too small a cell capacity or list width is reported, never silent
    for spec in (ListSpec(2.0, 64, 2, 4 * n), ListSpec(2.0, 4, 64, 4 * n)):
        _, nl = _list_accel(q, p, prm, spec)
        assert bool(nl.overflow) and (int(nl.max_run) > spec.capacity or int(nl.max_count) > spec.width)


def test_grid_follows_a_far_flung_flock():
    """Agents spread over 1e6 units: the cell count cap makes cells larger, the result stays exact."""
    rng = np.random.default_rng(8)
    prm = FlockParams.build()
    q = np.concatenate([rng.uniform(0, 30, (100, 2)), rng.uniform(1e6, 1e6 + 30, (100, 2))]).astype(np.float32)
    p = rng.normal(size=(200, 2)).astype(np.float32)
    ref = jax.jit(alpha_accel_allpairs, static_argnums=2)(q, p, prm)
    u, nl = _list_accel(q, p, prm, ListSpec(1.0, 64, 256, 64))
    assert not bool(nl.overflow)
    assert float(jnp.max(jnp.abs(u - ref))) <= 1e-5 * max(1.0, float(jnp.max(jnp.abs(ref))))


def test_verlet_list_rebuilds_only_when_an_agent_moved_half_the_skin():
    prm = FlockParams.build()
    rng = np.random.default_rng(4)
    q = jnp.asarray(rng.uniform(0, 60, (200, 2)), jnp.float32)
    spec = ListSpec(2.0, 64, 64, 800)
    nl = jax.jit(new_list, static_argnums=(1, 2))(q, prm, spec)
    fresh = jax.jit(refresh, static_argnums=(2, 3))
    shift = jnp.zeros_like(q).at[3, 0].set(0.9)  # one agent moves 0.9 < skin / 2 relative to the rest
    assert int(fresh(nl, q + shift, prm, spec).builds) == 1
    assert int(fresh(nl, q + 50.0 + shift, prm, spec).builds) == 1  # a common translation is no reason
    assert int(fresh(nl, q + 1.2 * shift / 0.9, prm, spec).builds) == 2


def test_overflow_retry_matches_all_pairs_rollout():
    prm = FlockParams.build(algorithm=2)
    q0, p0 = _start(300, 40.0, 3)
    grid = simulate_flock(q0, p0, prm, 200, record_every=50, neighbours="grid", capacity=2)
    ref = simulate_flock(q0, p0, prm, 200, record_every=50, neighbours="allpairs")
    assert grid.events and "overflow" in grid.events[0]
    assert grid.width > 8 and grid.builds >= 1
    assert np.abs(grid.positions - ref.positions).max() < 1e-3
    again = simulate_flock(q0, p0, prm, 200, record_every=50, neighbours="grid", capacity=2)
    assert np.array_equal(again.positions, grid.positions)  # deterministic
