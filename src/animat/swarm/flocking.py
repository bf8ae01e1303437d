"""Olfati-Saber flocking: Algorithms 1, 2 and 3 in 2D and 3D, float32 JAX.

R. Olfati-Saber, "Flocking for multi-agent dynamic systems: algorithms and theory",
IEEE Transactions on Automatic Control 51(3), 401-420, 2006.

Agents are double integrators ``q' = p, p' = u`` (positions q (N, d), velocities p (N, d); the
paper's unitless lengths). With the sigma-norm ``||z||_s = (sqrt(1 + eps ||z||^2) - 1) / eps``:

* Algorithm 1 (alpha-agents only): ``u_i = c1a sum_j phi_a(||q_j - q_i||_s) n_ij
  + c2a sum_j a_ij(q) (p_j - p_i)`` with ``n_ij = (q_j - q_i) / sqrt(1 + eps ||q_j - q_i||^2)``,
  ``a_ij = rho_h(||q_j - q_i||_s / r_a)``, ``phi_a(z) = rho_h(z / r_a) phi(z - d_a)``,
  ``phi(z) = ((a + b) sigma1(z + c) + (a - b)) / 2``, ``sigma1(z) = z / sqrt(1 + z^2)``,
  ``c = |a - b| / sqrt(4ab)``, ``r_a = ||r||_s``, ``d_a = ||d||_s``; the paper's Algorithm 1 has
  c1a = c2a = 1 (the defaults here).
* Algorithm 2 adds navigational feedback toward a gamma-agent ``(q_r, p_r)`` that moves with constant
  velocity: ``u_i^g = -c1 (q_i - q_r) - c2 (p_i - p_r)``, ``c2 = 2 sqrt(c1)`` unless given.
* Algorithm 3 adds beta-agents, the projections of each agent on nearby obstacles:
  sphere (centre y, radius R): ``mu = R / ||q_i - y||``, ``a = (q_i - y) / ||q_i - y||``,
  ``P = I - a a^T``, ``q^ = mu q_i + (1 - mu) y``, ``p^ = mu P p_i``; wall (hyperplane through y with
  unit normal a pointing into free space): ``P = I - a a^T``, ``q^ = P q_i + (I - P) y``,
  ``p^ = P p_i``. ``u_i^b = c1b sum_k phi_b(||q^_ik - q_i||_s) n^_ik + c2b sum_k b_ik (p^_ik - p_i)``
  with ``phi_b(z) = rho_h(z / d_b) (sigma1(z - d_b) - 1)``, ``b_ik = rho_h(||q^_ik - q_i||_s / d_b)``,
  ``d_b = ||d'||_s``.

Defaults from the paper: d = 7, r = 1.2 d, d' = 0.6 d, r' = 1.2 d', eps = 0.1, a = b = 5, h = 0.2 for
phi_a, 0.9 for phi_b, c2 = 2 sqrt(c1). The gamma gain c1 = 0.02 is ours (the paper leaves it to
the example): it gathers a 150-agent flock within a minute but squeezes some pairs below d (the
alpha force is weak near d, where the bump is already 0.18); a larger c1 squeezes more, a smaller one keeps
every pair above 0.9 d but gathers slowly (tests/swarm; the figures: RESULTS.md, 'Measurements behind the code').
Integration is
semi-implicit Euler (``p += dt u; q += dt p``) at dt = 0.01. Neighbour terms are computed all-pairs
here or on Verlet lists built on a cell list (:mod:`animat.swarm.verlet`, :mod:`animat.swarm.grid`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.config import check_instance, check_known, option
from animat.errors import ConfigError

__all__ = [
    "FlockParams",
    "Obstacles",
    "FlockState",
    "sigma_norm",
    "bump",
    "phi_alpha",
    "phi_beta",
    "pair_terms",
    "pair_weights",
    "alpha_sum",
    "gamma_accel",
    "euler_step",
    "clearance",
    "alpha_accel_allpairs",
    "beta_accel",
    "accel",
    "check_start_outside",
]


@dataclass(frozen=True)
class FlockParams:
    """Model parameters (hashable: a static argument of the jitted functions).

    d, r: desired distance and interaction range of alpha-agents; d_beta, r_beta: the same for
    obstacles (d', r'); eps: sigma-norm parameter; a, b: phi's attraction/repulsion (0 < a <= b);
    h_alpha, h_beta: bump-function plateaus; c1_alpha, c2_alpha: weights of the alpha gradient and
    consensus terms; c1, c2: gamma (navigational) gains; c1_beta, c2_beta: obstacle gains;
    algorithm: 1, 2 or 3; dt: time step. r' only bounds the beta-neighbour set, which the bump of
    b_ik already limits to d' < r': it is validated and reported with the paper's parameters but
    changes no result.
    """

    d: float = option(7.0, "Desired distance of alpha-agents", gt=0)
    r: float = option(8.4, "Interaction range of alpha-agents", gt=0)
    d_beta: float = option(4.2, "Desired distance to obstacles (d')", gt=0)
    r_beta: float = option(5.04, "Interaction range of obstacles (r')", gt=0)
    eps: float = option(0.1, "Sigma-norm parameter", gt=0)
    a: float = option(5.0, "phi's attraction (0 < a <= b)", gt=0)
    b: float = option(5.0, "phi's repulsion", gt=0)
    h_alpha: float = option(0.2, "Bump-function plateau of phi_alpha", gt=0, lt=1)
    h_beta: float = option(0.9, "Bump-function plateau of phi_beta", gt=0, lt=1)
    c1_alpha: float = option(1.0, "Weight of the alpha gradient term", ge=0)
    c2_alpha: float = option(1.0, "Weight of the alpha consensus term", ge=0)
    c1: float = option(0.02, "Gamma (navigational) position gain", ge=0)
    c2: float = option(2.0 * math.sqrt(0.02), "Gamma velocity gain", ge=0)
    c1_beta: float = option(10.0, "Obstacle position gain", ge=0)
    c2_beta: float = option(2.0 * math.sqrt(10.0), "Obstacle velocity gain", ge=0)
    algorithm: int = option(2, "Flocking algorithm 1, 2 or 3", choices=(1, 2, 3))
    dt: float = option(0.01, "Time step", gt=0)
    OPTION_NAME: ClassVar[str] = "flocking parameter {name}"

    # names accepted by --param (aliases on the left)
    ALIASES = {
        "h": "h_alpha",
        "dp": "d_beta",
        "rp": "r_beta",
        "d_prime": "d_beta",
        "r_prime": "r_beta",
        "epsilon": "eps",
    }

    @classmethod
    def build(cls, overrides: dict[str, Any] | None = None, **fixed: Any) -> FlockParams:
        """Paper defaults, then ``overrides`` (names as in --param). Derived values follow the given
        ones unless set: r = 1.2 d, d' = 0.6 d, r' = 1.2 d', c2 = 2 sqrt(c1), c2_beta = 2 sqrt(c1_beta)."""
        vals: dict[str, Any] = {}
        for k, v in {**(overrides or {}), **fixed}.items():
            k = cls.ALIASES.get(k, k)
            vals[k] = v
        check_known({f.name for f in fields(cls)} | set(cls.ALIASES), vals, "flocking parameter")
        try:
            vals = {k: (int(v) if k == "algorithm" else float(v)) for k, v in vals.items()}
        except (TypeError, ValueError):
            raise ConfigError(f"flocking parameters must be numbers, got {vals}") from None
        d = vals.get("d", 7.0)
        vals.setdefault("d", d)
        vals.setdefault("r", 1.2 * d)
        vals.setdefault("d_beta", 0.6 * d)
        vals.setdefault("r_beta", 1.2 * vals["d_beta"])
        c1 = vals.setdefault("c1", 0.02)
        vals.setdefault("c2", 2.0 * math.sqrt(max(c1, 0.0)))
        c1b = vals.setdefault("c1_beta", 10.0)
        vals.setdefault("c2_beta", 2.0 * math.sqrt(max(c1b, 0.0)))
        return cls(**vals).validate()

    def validate(self) -> FlockParams:
        check_instance(self)
        if self.a > self.b:
            raise ConfigError(
                f"flocking needs 0 < a <= b (phi must be repulsive enough), got a = {self.a} > b = {self.b}"
            )
        if not self.r > self.d:
            raise ConfigError(
                f"interaction range r must exceed the desired distance d, got r = {self.r} <= d = {self.d}"
            )
        if self.algorithm >= 2 and not self.c1 > 0:
            raise ConfigError(f"algorithm {self.algorithm} needs navigational feedback c1 > 0, got {self.c1}")
        return self

    # derived sigma-norm constants
    @property
    def r_alpha(self) -> float:
        return _sigma_norm_scalar(self.r, self.eps)

    @property
    def d_alpha(self) -> float:
        return _sigma_norm_scalar(self.d, self.eps)

    @property
    def d_b(self) -> float:
        return _sigma_norm_scalar(self.d_beta, self.eps)

    @property
    def dt_max(self) -> float:
        """Time-step bound of the velocity damping (Euler: ``p <- (1 - c dt) p`` needs ``dt < 2 / c``) for
        the largest damping gain on an agent: c2 toward the gamma-agent (algorithms 2, 3), c2_beta
        (b_ik <= 1) at an obstacle (algorithm 3); inf for algorithm 1. Necessary, not sufficient: the
        alpha velocity consensus adds ``c2_alpha sum_j a_ij``, which grows with the flock's density."""
        gains = ([self.c2] if self.algorithm >= 2 else []) + ([self.c2_beta] if self.algorithm >= 3 else [])
        top = max(gains, default=0.0)
        return 2.0 / top if top > 0 else math.inf

    @property
    def c_phi(self) -> float:
        return abs(self.a - self.b) / math.sqrt(4.0 * self.a * self.b)

    def to_dict(self) -> dict:
        return asdict(self)


def _sigma_norm_scalar(z: float, eps: float) -> float:
    return (math.sqrt(1.0 + eps * z * z) - 1.0) / eps


class Obstacles(NamedTuple):
    """spheres: centres (S, d), radii (S,); walls: points (W, d), unit normals (W, d) pointing into
    the free half-space. Empty arrays for none."""

    centres: np.ndarray
    radii: np.ndarray
    wall_points: np.ndarray
    wall_normals: np.ndarray

    @classmethod
    def empty(cls, dim: int) -> Obstacles:
        z = np.zeros((0, dim), np.float32)
        return cls(z, np.zeros((0,), np.float32), z.copy(), z.copy())

    @classmethod
    def make(cls, dim: int, spheres=(), walls=()) -> Obstacles:
        """spheres: iterable of (centre (d,), radius); walls: iterable of (point (d,), normal (d,))."""
        spheres, walls = list(spheres), list(walls)
        cen = np.zeros((len(spheres), dim), np.float32)
        rad = np.zeros((len(spheres),), np.float32)
        for i, (c, rr) in enumerate(spheres):
            c = np.asarray(c, float).ravel()
            if c.shape != (dim,):
                raise ConfigError(f"sphere obstacle {i}: centre must have {dim} coordinates, got {c.tolist()}")
            if not (np.isfinite(c).all() and math.isfinite(float(rr)) and float(rr) > 0):
                raise ConfigError(
                    f"sphere obstacle {i}: centre must be finite and radius > 0, got {c.tolist()} and {rr}"
                )
            cen[i], rad[i] = c, float(rr)
        wp = np.zeros((len(walls), dim), np.float32)
        wn = np.zeros((len(walls), dim), np.float32)
        for i, (pt, nrm) in enumerate(walls):
            pt, nrm = np.asarray(pt, float).ravel(), np.asarray(nrm, float).ravel()
            if pt.shape != (dim,) or nrm.shape != (dim,):
                raise ConfigError(
                    f"wall {i}: point and normal must have {dim} coordinates each, got {pt.tolist()} and {nrm.tolist()}"
                )
            norm = np.linalg.norm(nrm)
            if not (np.isfinite(pt).all() and np.isfinite(nrm).all()):
                raise ConfigError(f"wall {i}: point and normal must be finite, got {pt.tolist()} and {nrm.tolist()}")
            if not norm > 0:
                raise ConfigError(f"wall {i}: normal must be non-zero, got {nrm.tolist()}")
            wp[i], wn[i] = pt, nrm / norm
        return cls(cen, rad, wp, wn)

    @property
    def count(self) -> int:
        return int(self.radii.shape[0] + self.wall_points.shape[0])

    def to_dict(self) -> dict:
        return {
            "spheres": [{"center": c.tolist(), "radius": float(r)} for c, r in zip(self.centres, self.radii)],
            "walls": [{"point": p.tolist(), "normal": n.tolist()} for p, n in zip(self.wall_points, self.wall_normals)],
        }


def clearance(q: np.ndarray, obs: Obstacles) -> np.ndarray:
    """Signed distance (N,) of each agent to the nearest obstacle surface (negative inside); +inf if none."""
    q = np.asarray(q, float)
    out = np.full(q.shape[0], np.inf)
    if obs.radii.size:
        dist = np.linalg.norm(q[:, None, :] - obs.centres[None].astype(float), axis=-1) - obs.radii[None]
        out = np.minimum(out, dist.min(axis=1))
    if obs.wall_points.shape[0]:
        dist = np.einsum(
            "nkd,kd->nk", q[:, None, :] - obs.wall_points[None].astype(float), obs.wall_normals.astype(float)
        )
        out = np.minimum(out, dist.min(axis=1))
    return out


def check_start_outside(q: np.ndarray, obs: Obstacles) -> None:
    """Raise ConfigError if any agent starts inside (or on) an obstacle."""
    c = clearance(q, obs)
    bad = np.flatnonzero(c <= 0)
    if bad.size:
        raise ConfigError(
            f"obstacles overlap the start: {bad.size} agent(s) start inside an obstacle (first: agent {bad[0]} "
            f"at {np.round(np.asarray(q)[bad[0]], 3).tolist()}); move the obstacles or the start"
        )


# --------------------------------------------------------------------------------------------------
# scalar functions (elementwise, jnp)


def sigma_norm(z2: jnp.ndarray, eps: float) -> jnp.ndarray:
    """sigma-norm from the squared Euclidean norm ``z2``: (sqrt(1 + eps z2) - 1) / eps."""
    return (jnp.sqrt(1.0 + eps * z2) - 1.0) / eps


# Taylor coefficients of sin(t) / t in t^2 up to t^12: on |t| <= pi/2 the truncation error is below
# (pi/2)^15 / 15! < 1e-9, so float32 rounding (~1e-7) dominates.
_SIN_TAYLOR = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(7))


def _one_plus_cos_pi_half(x: jnp.ndarray) -> jnp.ndarray:
    """(1 + cos(pi x)) / 2 for x in [0, 1] (clipped), as sin(t)^2 with t = pi (1 - x) / 2 in [0, pi/2]
    and sin by its Taylor polynomial: exactly 0 at x = 1, never negative, within ~2e-7 of the cosine.
    (XLA on CPU lowers jnp.cos to a scalar libm call per element, about 12x the cost of the rest of
    the pair force; the polynomial vectorises.)"""
    t = 0.5 * jnp.pi * (1.0 - jnp.clip(x, 0.0, 1.0))
    t2 = t * t
    s = _SIN_TAYLOR[-1]
    for c in reversed(_SIN_TAYLOR[:-1]):
        s = c + t2 * s
    return (t * s) ** 2


def bump(z: jnp.ndarray, h: float) -> jnp.ndarray:
    """rho_h(z): 1 on [0, h), (1 + cos(pi (z - h) / (1 - h))) / 2 on [h, 1], 0 beyond (Olfati-Saber
    2006, eq. 10)."""
    mid = _one_plus_cos_pi_half((z - h) / (1.0 - h))
    return jnp.where(z < h, 1.0, jnp.where(z <= 1.0, mid, 0.0))


def sigma1(z: jnp.ndarray) -> jnp.ndarray:
    return z / jnp.sqrt(1.0 + z * z)


def phi_alpha(z: jnp.ndarray, prm: FlockParams) -> jnp.ndarray:
    """phi_a(z) = rho_h(z / r_a) phi(z - d_a)."""
    phi = 0.5 * ((prm.a + prm.b) * sigma1(z - prm.d_alpha + prm.c_phi) + (prm.a - prm.b))
    return bump(z / prm.r_alpha, prm.h_alpha) * phi


def phi_beta(z: jnp.ndarray, prm: FlockParams) -> jnp.ndarray:
    """phi_b(z) = rho_h(z / d_b) (sigma1(z - d_b) - 1)."""
    return bump(z / prm.d_b, prm.h_beta) * (sigma1(z - prm.d_b) - 1.0)


def pair_weights(z2: jnp.ndarray, prm: FlockParams) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Weights of the alpha interaction for squared distances ``z2 = ||q_j - q_i||^2``: the term of j in
    u_i is ``w1 (q_j - q_i) + w2 (p_j - p_i)`` with ``w1 = c1a phi_a(||.||_s) / sqrt(1 + eps z2)``
    (so that ``w1 dq = c1a phi_a n_ij``) and ``w2 = c2a a_ij``. Both vanish beyond range r (the bump
    is 0 there), so callers need no cutoff; the agent itself (dq = dp = 0) adds nothing."""
    s = jnp.sqrt(1.0 + prm.eps * z2)
    z = (s - 1.0) / prm.eps
    rho = bump(z / prm.r_alpha, prm.h_alpha)  # = a_ij, shared with phi_a
    phi = 0.5 * ((prm.a + prm.b) * sigma1(z - prm.d_alpha + prm.c_phi) + (prm.a - prm.b))
    return prm.c1_alpha * rho * phi / s, prm.c2_alpha * rho


def pair_terms(dq: jnp.ndarray, dp: jnp.ndarray, prm: FlockParams) -> jnp.ndarray:
    """Alpha interaction ``c1a phi_a(||dq||_s) n_ij + c2a a_ij dp`` (..., d) for dq = q_j - q_i,
    dp = p_j - p_i (..., d). (The hot paths use :func:`pair_weights` on separate components.)"""
    w1, w2 = pair_weights(jnp.sum(dq * dq, axis=-1, keepdims=True), prm)
    return w1 * dq + w2 * dp


def alpha_sum(dqs: list, dps: list, prm: FlockParams, axis: int) -> jnp.ndarray:
    """``sum_j w1 (q_j - q_i) + w2 (p_j - p_i)`` over the partner axis ``axis``, stacked as (B, d), from
    the differences given per component (structure of arrays, no tiny per-pair vectors):
    ``dqs[k] = q_j,k - q_i,k`` and ``dps[k] = p_j,k - p_i,k``, all of one shape."""
    w1, w2 = pair_weights(sum(x * x for x in dqs), prm)
    return jnp.stack([jnp.sum(w1 * dq + w2 * dp, axis=axis) for dq, dp in zip(dqs, dps)], axis=1)


def _alpha_rows(qb, pb, q, p, prm):
    """Sum over all j of the terms for the rows (B, d) against all agents (N, d)."""
    dim = q.shape[1]
    dqs = [q[None, :, k] - qb[:, k, None] for k in range(dim)]
    dps = [p[None, :, k] - pb[:, k, None] for k in range(dim)]
    return alpha_sum(dqs, dps, prm, axis=1)


def alpha_accel_allpairs(q: jnp.ndarray, p: jnp.ndarray, prm: FlockParams, block: int = 1024) -> jnp.ndarray:
    """Alpha-agent control (N, d) by summing over all pairs; rows in blocks of ``block`` to bound memory."""
    n = q.shape[0]
    if n <= block:
        return _alpha_rows(q, p, q, p, prm)
    nb = -(-n // block)
    pad = nb * block - n
    qi = jnp.pad(q, ((0, pad), (0, 0))).reshape(nb, block, -1)
    pi = jnp.pad(p, ((0, pad), (0, 0))).reshape(nb, block, -1)
    return jax.lax.map(lambda a: _alpha_rows(a[0], a[1], q, p, prm), (qi, pi)).reshape(nb * block, -1)[:n]


def beta_accel(q: jnp.ndarray, p: jnp.ndarray, prm: FlockParams, obs: Obstacles) -> jnp.ndarray:
    """Obstacle (beta-agent) control (N, d) for spheres and walls."""
    u = jnp.zeros_like(q)
    if obs.radii.shape[0]:
        y = jnp.asarray(obs.centres)[None]  # (1, S, d)
        rad = jnp.asarray(obs.radii)[None, :, None]
        rel = q[:, None, :] - y  # (N, S, d)
        dist = jnp.maximum(jnp.sqrt(jnp.sum(rel * rel, axis=-1, keepdims=True)), 1e-6)  # finite at a centre
        ahat = rel / dist
        mu = rad / dist
        qh = mu * q[:, None, :] + (1.0 - mu) * y
        pdot = jnp.sum(ahat * p[:, None, :], axis=-1, keepdims=True)
        ph = mu * (p[:, None, :] - pdot * ahat)
        u = u + _beta_sum(qh - q[:, None, :], ph - p[:, None, :], prm)
    if obs.wall_points.shape[0]:
        y = jnp.asarray(obs.wall_points)[None]
        a = jnp.asarray(obs.wall_normals)[None]
        off = jnp.sum((q[:, None, :] - y) * a, axis=-1, keepdims=True)
        qh = q[:, None, :] - off * a  # P q + (I - P) y
        pdot = jnp.sum(p[:, None, :] * a, axis=-1, keepdims=True)
        ph = p[:, None, :] - pdot * a
        u = u + _beta_sum(qh - q[:, None, :], ph - p[:, None, :], prm)
    return u


def _beta_sum(dq: jnp.ndarray, dp: jnp.ndarray, prm: FlockParams) -> jnp.ndarray:
    z2 = jnp.sum(dq * dq, axis=-1, keepdims=True)
    s = jnp.sqrt(1.0 + prm.eps * z2)
    z = (s - 1.0) / prm.eps
    bik = bump(z / prm.d_b, prm.h_beta)
    phib = bik * (sigma1(z - prm.d_b) - 1.0)
    return jnp.sum(prm.c1_beta * phib * dq / s + prm.c2_beta * bik * dp, axis=1)


def gamma_accel(q, p, qr, pr, prm: FlockParams):
    """Navigational feedback ``-c1 (q - q_r) - c2 (p - p_r)`` (N, d)."""
    return -prm.c1 * (q - qr) - prm.c2 * (p - pr)


def accel(q, p, qr, pr, prm: FlockParams, obs: Obstacles, alpha_u) -> jnp.ndarray:
    """Total control of the chosen algorithm given the alpha term ``alpha_u`` (N, d)."""
    u = alpha_u
    if prm.algorithm >= 2:
        u = u + gamma_accel(q, p, qr, pr, prm)
    if prm.algorithm >= 3:
        u = u + beta_accel(q, p, prm, obs)
    return u


class FlockState(NamedTuple):
    """q, p: (N, d) positions and velocities; qr, pr: (d,) the gamma-agent's position and velocity."""

    q: jnp.ndarray
    p: jnp.ndarray
    qr: jnp.ndarray
    pr: jnp.ndarray


def euler_step(state: FlockState, u: jnp.ndarray, dt: float) -> FlockState:
    """Semi-implicit Euler: p += dt u, then q += dt p; the gamma-agent moves at constant velocity."""
    p = state.p + dt * u
    q = state.q + dt * p
    return FlockState(q, p, state.qr + dt * state.pr, state.pr)
