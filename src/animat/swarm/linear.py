"""Linear swarm schemes with exact numerics: consensus on a line, second-order agents, Van Loan.

All schemes here are small linear iterations, run in NumPy float64 (the ellipse limit is checked to
1e-8, beyond float32). Each ``simulate_*`` returns positions ``(T, N, 2)`` (T = steps + 1, the
initial state first) and, where they exist, velocities ``(T, N, 2)``. Lengths are dimensionless.

* First-order consensus on a line (endpoints fixed): ``x' = s A x``, explicit Euler. ``A`` is the
  tridiagonal ``(1, -2, 1)`` matrix with zero first and last rows. Its interior block has eigenvalues
  ``s (-2 + 2 cos(k pi / (N - 1)))``, k = 1..N-2, so Euler is stable iff
  ``dt < dt_max = 2 / (s (2 + 2 cos(pi / (N - 1))))`` -- N = 8, s = 1: dt_max = 0.526, so dt = 0.49
  converges and dt = 0.55 diverges.
* Second-order agents: ``x'' = u = A x - alpha B v`` (B = identity with zero first and last rows),
  Euler on ``(x, v)``. Each interior mode lambda of ``s A`` gives ``mu^2 + alpha mu - lambda = 0``;
  Euler is stable iff ``|1 + dt mu| < 1`` for all modes, i.e. ``dt < -2 Re(mu) / |mu|^2``. For a
  complex pair this is ``dt < alpha / |lambda|`` (|mu|^2 = |lambda|), so with every mode complex
  the bound is ``alpha / |lambda|max``.
* Van Loan schemes (A. N. Elmachtoub and C. F. Van Loan, "From random polygon to ellipse: an
  eigenanalysis", SIAM Review 52(1), 2010): the ellipse (cyclic averaging, normalised and re-centred),
  the segment (neighbour averaging between fixed ends) and the circle (averaging of angles plus a
  rotation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from animat.config import require
from animat.errors import ConfigError

__all__ = [
    "line_matrix",
    "consensus_dt_max",
    "consensus_dt_max_eig",
    "second_order_dt_max",
    "second_order_dt_max_eig",
    "simulate_consensus",
    "simulate_second_order",
    "ellipse_step",
    "simulate_ellipse",
    "ellipse_limit_matrix",
    "simulate_segment",
    "simulate_circle",
    "LinearResult",
]


@dataclass
class LinearResult:
    """positions (T, N, 2); velocities (T, N, 2) or None; t (T,) simulated time (dt * step);
    angles (T, N) rad for the circle scheme."""

    positions: np.ndarray
    velocities: np.ndarray | None
    t: np.ndarray
    angles: np.ndarray | None = None


def _check_common(n: int, dt: float, steps: int, *, n_min: int = 3, what: str = "consensus") -> None:
    require(f"{what}: the number of agents (--agents)", n, ge=n_min)
    require("time step dt", dt, gt=0)
    require("steps", steps, ge=1)


def _check_scale(scale: float) -> None:
    require("consensus scale s", scale, gt=0)  # 1 or 0.5 in the original


def check_params(
    scheme: str, *, scale: float = 1.0, alpha: float = 1.0, omega: float = 1.0, radius: float = 1.0, weight: float = 1.0
) -> None:
    """ConfigError (one line) for values the scheme cannot run with: a non-finite value, scale or
    damping alpha <= 0, radius <= 0, an averaging weight outside (0, 1]."""
    for name, v in (("scale", scale), ("alpha", alpha), ("omega", omega), ("radius", radius), ("weight", weight)):
        if not math.isfinite(v):
            raise ConfigError(f"{scheme} parameter {name} must be a finite number, got {v}")
    if scheme in ("consensus", "second-order"):
        _check_scale(scale)
    if scheme == "second-order":
        require("damping alpha", alpha, gt=0)
    if scheme == "circle":
        require("circle radius", radius, gt=0)
    if scheme in ("segment", "circle"):
        require(f"{scheme} weight", weight, gt=0, le=1)


def line_matrix(n: int, scale: float = 1.0) -> np.ndarray:
    """The (n, n) consensus matrix ``s A``: rows 1..n-2 are (1, -2, 1) around the diagonal; rows 0 and
    n-1 are zero (the endpoints do not move)."""
    a = np.zeros((n, n))
    i = np.arange(1, n - 1)
    a[i, i] = -2.0
    a[i, i - 1] = 1.0
    a[i, i + 1] = 1.0
    return scale * a


def consensus_dt_max(n: int, scale: float = 1.0) -> float:
    """Exact Euler stability bound ``2 / |lambda_min|`` of first-order consensus, closed form
    ``2 / (s (2 + 2 cos(pi / (n - 1))))``."""
    _check_scale(scale)
    require("consensus: the number of agents (--agents)", n, ge=3)
    return 2.0 / (scale * (2.0 + 2.0 * math.cos(math.pi / (n - 1))))


def consensus_dt_max_eig(n: int, scale: float = 1.0) -> float:
    """The same bound from the numerical eigenvalues of the interior block (a check of the closed form)."""
    lam = np.linalg.eigvalsh(line_matrix(n, scale)[1:-1, 1:-1])
    return float(2.0 / np.abs(lam).max())


def _interior_eigs(n: int, scale: float) -> np.ndarray:
    k = np.arange(1, n - 1)
    return scale * (-2.0 + 2.0 * np.cos(k * np.pi / (n - 1)))


def _euler_bound(mu: np.ndarray) -> float:
    """Largest dt with |1 + dt mu| < 1 for all continuous eigenvalues mu (Re mu < 0): -2 Re mu / |mu|^2."""
    return float(np.min(-2.0 * mu.real / np.abs(mu) ** 2))


def second_order_dt_max(n: int, alpha: float, scale: float = 1.0) -> float:
    """Exact Euler stability bound of ``x'' = sA x - alpha B v`` from the closed-form modes of ``sA``."""
    check_params("second-order", scale=scale, alpha=alpha)
    lam = _interior_eigs(n, scale).astype(complex)
    disc = np.sqrt(alpha**2 + 4.0 * lam)  # mu = (-alpha +- sqrt(alpha^2 + 4 lambda)) / 2
    mu = np.concatenate([(-alpha + disc) / 2.0, (-alpha - disc) / 2.0])
    return _euler_bound(mu)


def second_order_dt_max_eig(n: int, alpha: float, scale: float = 1.0) -> float:
    """The same bound from the eigenvalues of the interior (x, v) system matrix, computed numerically."""
    a = line_matrix(n, scale)[1:-1, 1:-1]
    m = n - 2
    sys = np.block([[np.zeros((m, m)), np.eye(m)], [a, -alpha * np.eye(m)]])
    return _euler_bound(np.linalg.eigvals(sys))


def _times(steps: int, dt: float) -> np.ndarray:
    return dt * np.arange(steps + 1, dtype=float)


def simulate_consensus(
    x0: np.ndarray, dt: float, steps: int, scale: float = 1.0, record_every: int = 1
) -> LinearResult:
    """Explicit Euler ``x <- x + dt s A x`` from ``x0`` (N, 2); returns every ``record_every``-th state."""
    x = np.array(x0, dtype=float)
    _check_common(x.shape[0], dt, steps)
    _check_scale(scale)
    m = np.eye(x.shape[0]) + dt * line_matrix(x.shape[0], scale)
    out = [x.copy()]
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, steps + 1):
            x = m @ x
            if k % record_every == 0 or k == steps:
                out.append(x.copy())
    idx = _record_index(steps, record_every)
    return LinearResult(np.stack(out), None, dt * idx)


def _record_index(steps: int, every: int) -> np.ndarray:
    idx = list(range(0, steps + 1, every))
    if idx[-1] != steps:
        idx.append(steps)
    return np.asarray(idx, dtype=float)


def simulate_second_order(
    x0: np.ndarray, v0: np.ndarray, dt: float, steps: int, alpha: float, scale: float = 1.0, record_every: int = 1
) -> LinearResult:
    """Euler on ``(x, v)``: ``x <- x + dt v``, ``v <- v + dt (sA x - alpha B v)`` (both from the old state).

    The endpoints' velocities are zeroed first (B and A have zero end rows, so they keep them)."""
    x = np.array(x0, dtype=float)
    v = np.array(v0, dtype=float)
    _check_common(x.shape[0], dt, steps, what="second-order consensus")
    check_params("second-order", scale=scale, alpha=alpha)
    v[0] = v[-1] = 0.0
    n = x.shape[0]
    a = line_matrix(n, scale)
    b = np.eye(n)
    b[0, 0] = b[-1, -1] = 0.0
    xs, vs = [x.copy()], [v.copy()]
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, steps + 1):
            x, v = x + dt * v, v + dt * (a @ x - alpha * (b @ v))
            if k % record_every == 0 or k == steps:
                xs.append(x.copy())
                vs.append(v.copy())
    return LinearResult(np.stack(xs), np.stack(vs), dt * _record_index(steps, record_every))


# --------------------------------------------------------------------------------------------------
# Van Loan schemes


def _cyclic_average(z: np.ndarray) -> np.ndarray:
    """(M z)_i = (z_i + z_{i+1}) / 2 with z_n = z_0."""
    return 0.5 * (z + np.roll(z, -1, axis=0))


def ellipse_step(x: np.ndarray, y: np.ndarray, recentre: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """One step of the random-polygon-to-ellipse iteration: ``x <- Mx / ||Mx||``, ``y <- My / ||My||``,
    then (if ``recentre``) subtract the means. Without re-centring, round-off in the mean -- the
    eigenvalue-1 mode, which outgrows every other after normalisation -- grows and takes over."""
    x, y = _cyclic_average(x), _cyclic_average(y)
    x, y = x / np.linalg.norm(x), y / np.linalg.norm(y)
    if recentre:
        x, y = x - x.mean(), y - y.mean()
    return x, y


def _prepare_polygon(p0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p0 = np.asarray(p0, dtype=float)
    if p0.ndim != 2 or p0.shape[1] != 2 or p0.shape[0] < 3:
        raise ConfigError(f"the ellipse scheme needs a polygon of at least 3 vertices (N, 2), got shape {p0.shape}")
    x, y = p0[:, 0] - p0[:, 0].mean(), p0[:, 1] - p0[:, 1].mean()
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        raise ConfigError("the initial polygon is degenerate (all x or all y equal)")
    return x / nx, y / ny


def simulate_ellipse(p0: np.ndarray, steps: int, recentre: bool = True, record_every: int = 1) -> LinearResult:
    """Iterate :func:`ellipse_step` from the polygon ``p0`` (N, 2), first centred and normalised."""
    require("steps", steps, ge=1)
    x, y = _prepare_polygon(p0)
    out = [np.column_stack([x, y])]
    for k in range(1, steps + 1):
        x, y = ellipse_step(x, y, recentre)
        if k % record_every == 0 or k == steps:
            out.append(np.column_stack([x, y]))
    return LinearResult(np.stack(out), None, _record_index(steps, record_every))


def ellipse_limit_matrix(p0: np.ndarray) -> np.ndarray:
    """The 2x2 matrix S of the limit ellipse ``p^T S^-1 p = 1`` of :func:`simulate_ellipse` from ``p0``.

    With M's Fourier modes (eigenvalues (1 + w^k)/2, w = exp(2 pi i / n)), the centred, normalised
    iterates converge to the dominant pair k = 1, n-1: ``x_j -> sqrt(2/n) cos(theta_j + a)``,
    ``y_j -> sqrt(2/n) cos(theta_j + b)``, where a and b are the phases of the first Fourier
    coefficients of the initial x and y. Such points satisfy
    ``u^2 - 2 u v cos(delta) + v^2 = (2/n) sin^2(delta)`` (delta = a - b), so
    ``S^-1 = n / (2 sin^2 delta) [[1, -cos delta], [-cos delta, 1]]``, whose axes lie at +-45 degrees.
    """
    x, y = _prepare_polygon(p0)
    n = x.size
    f = np.exp(-2j * np.pi * np.arange(n) / n)
    delta = np.angle(x @ f) - np.angle(y @ f)
    s2 = math.sin(delta) ** 2
    if s2 < 1e-12:
        raise ConfigError(
            "the initial polygon's x and y first harmonics are in phase; the limit is a segment, not an ellipse"
        )
    c = math.cos(delta)
    s_inv = n / (2.0 * s2) * np.array([[1.0, -c], [-c, 1.0]])
    return np.linalg.inv(s_inv)


def _segment_matrix(n: int, weight: float) -> np.ndarray:
    """Interior points move ``weight`` of the way to their neighbours' mean; ends fixed."""
    return np.eye(n) + 0.5 * weight * line_matrix(n, 1.0)


def simulate_segment(p0: np.ndarray, steps: int, weight: float = 1.0, record_every: int = 1) -> LinearResult:
    """Neighbour averaging with fixed ends: ``p_i <- (1-w) p_i + w (p_{i-1} + p_{i+1}) / 2``; the points
    end equally spaced on the segment between the two ends. Stable for 0 < w <= 1."""
    p = np.array(p0, dtype=float)
    if p.ndim != 2 or p.shape[0] < 3:
        raise ConfigError(f"the segment scheme needs at least 3 agents, got {p.shape[0] if p.ndim else 0}")
    require("steps", steps, ge=1)
    check_params("segment", weight=weight)
    m = _segment_matrix(p.shape[0], weight)
    out = [p.copy()]
    for k in range(1, steps + 1):
        p = m @ p
        if k % record_every == 0 or k == steps:
            out.append(p.copy())
    return LinearResult(np.stack(out), None, _record_index(steps, record_every))


def simulate_circle(
    theta0: np.ndarray,
    dt: float,
    steps: int,
    omega: float = 1.0,
    alpha: float = 1.0,
    radius: float = 1.0,
    weight: float = 1.0,
    record_every: int = 1,
) -> LinearResult:
    """Angles ``theta <- M theta + alpha omega dt`` and points ``R (cos theta, sin theta)``.

    M averages each interior angle with its neighbours (as in the segment scheme); the first and last
    angles stay at 0 and 2 pi in the co-rotating frame, i.e. they too advance by ``alpha omega dt``
    each step (M's rows sum to 1, so ``phi = theta - alpha omega t`` obeys ``phi <- M phi``). The
    angles spread to equal spacing ``2 pi / (N - 1)`` (the last point closes the ring on the first)
    while the ring turns at ``alpha omega`` rad per unit time. ``theta0`` (N,) with theta0[0] = 0 and
    theta0[-1] = 2 pi (they are set so).
    """
    th = np.array(theta0, dtype=float)
    _check_common(th.shape[0], dt, steps, what="the circle scheme")
    check_params("circle", omega=omega, alpha=alpha, radius=radius, weight=weight)
    th[0], th[-1] = 0.0, 2.0 * np.pi
    m = _segment_matrix(th.shape[0], weight)
    inc = alpha * omega * dt
    thetas = [th.copy()]
    for k in range(1, steps + 1):
        th = m @ th + inc
        if k % record_every == 0 or k == steps:
            thetas.append(th.copy())
    thetas = np.stack(thetas)
    pos = radius * np.stack([np.cos(thetas), np.sin(thetas)], axis=-1)
    return LinearResult(pos, None, dt * _record_index(steps, record_every), angles=thetas)
