"""The linear formation schemes of ``animat swarm run`` (consensus, second-order, ellipse, segment, circle): each
draws its start from the run's generator, simulates it (:mod:`animat.swarm.linear`), adds its figures to the
summary and returns ``(result, metrics rows)``; ``cfg`` is the run's :class:`animat.swarm.run.SwarmConfig` (its
``linear_param``). :data:`LINEAR_RUNS` maps a scheme's name to its function."""

from __future__ import annotations

from typing import Any

import numpy as np

from animat.swarm import linear
from animat.swarm.options import SwarmOptions


def _rows(t: np.ndarray, **columns: np.ndarray) -> list[dict]:
    """metrics.csv rows: the frame, its time, and one float per named column."""
    return [{"frame": i, "t": float(ti), **{k: float(v[i]) for k, v in columns.items()}} for i, ti in enumerate(t)]


def _consensus(cfg: SwarmOptions, rng: np.random.Generator, summary: dict) -> tuple[Any, list[dict]]:
    """First- or second-order consensus to evenly spaced points between two fixed ends; error to that line."""
    n = cfg.agents
    ends = np.array([[0.0, 0.0], [n - 1.0, 0.0]])
    x0 = rng.normal(0.0, 0.25 * n, (n, 2))
    x0[0], x0[-1] = ends
    target = np.linspace(ends[0], ends[1], n)
    if cfg.scheme == "consensus":
        bound = linear.consensus_dt_max(n, cfg.scale)
        res = linear.simulate_consensus(x0, cfg.dt, cfg.steps, cfg.scale, cfg.record_every)
        summary.update(scale=cfg.scale, dt_max=bound, dt_over_dt_max=cfg.dt / bound)
    else:
        alpha = cfg.linear_param("alpha")
        bound = linear.second_order_dt_max(n, alpha, cfg.scale)
        v0 = rng.normal(0.0, 1.0, (n, 2))
        res = linear.simulate_second_order(x0, v0, cfg.dt, cfg.steps, alpha, cfg.scale, cfg.record_every)
        summary.update(scale=cfg.scale, alpha=alpha, dt_max=bound, dt_over_dt_max=cfg.dt / bound)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.max(np.linalg.norm(res.positions - target[None], axis=2), axis=1)
    summary.update(
        final_error=float(err[-1]),
        initial_error=float(err[0]),
        converged=bool(np.isfinite(err[-1]) and err[-1] < 1e-3 * max(err[0], 1e-12)),
    )
    return res, _rows(res.t, error=err)


def _ellipse(cfg: SwarmOptions, rng: np.random.Generator, summary: dict) -> tuple[Any, list[dict]]:
    """Van Loan's ellipse: residual of every agent from the limit ellipse, and its axes."""
    p0 = rng.normal(size=(cfg.agents, 2))
    res = linear.simulate_ellipse(p0, cfg.steps, record_every=cfg.record_every)
    s_inv = np.linalg.inv(linear.ellipse_limit_matrix(p0))
    resid = np.abs(np.einsum("tni,ij,tnj->tn", res.positions, s_inv, res.positions) - 1.0).max(axis=1)
    evals, evecs = np.linalg.eigh(np.linalg.inv(s_inv))
    summary.update(
        final_ellipse_residual=float(resid[-1]),
        axis_angles_deg=np.degrees(np.arctan2(evecs[1], evecs[0])).tolist(),
        semi_axes=np.sqrt(evals).tolist(),
    )
    return res, _rows(res.t, ellipse_residual=resid)


def _segment(cfg: SwarmOptions, rng: np.random.Generator, summary: dict) -> tuple[Any, list[dict]]:
    """Even spacing on the segment between two fixed ends: the spread of the gaps."""
    n = cfg.agents
    p0 = rng.normal(0.0, 0.3 * n, (n, 2))
    p0[0], p0[-1] = (0.0, 0.0), (n - 1.0, 0.0)
    res = linear.simulate_segment(p0, cfg.steps, cfg.linear_param("weight"), cfg.record_every)
    gaps = np.linalg.norm(np.diff(res.positions, axis=1), axis=2)
    spread = (gaps.max(1) - gaps.min(1)) / gaps.mean(1)
    summary.update(final_spacing_spread=float(spread[-1]))
    return res, _rows(res.t, spacing_spread=spread)


def _circle(cfg: SwarmOptions, rng: np.random.Generator, summary: dict) -> tuple[Any, list[dict]]:
    """Even spacing on a rotating circle: the spread of the angular gaps and the rotation rate."""
    n = cfg.agents
    th0 = np.sort(rng.uniform(0.0, 2 * np.pi, n))
    omega, alpha = cfg.linear_param("omega"), cfg.linear_param("alpha")
    res = linear.simulate_circle(
        th0, cfg.dt, cfg.steps, omega, alpha, cfg.linear_param("radius"), cfg.linear_param("weight"), cfg.record_every
    )
    gaps = np.diff(res.angles, axis=1)
    spread = (gaps.max(1) - gaps.min(1)) / (2 * np.pi / (n - 1))
    rate = (res.angles[-1, 0] - res.angles[-2, 0]) / (res.t[-1] - res.t[-2]) if len(res.t) > 1 else float("nan")
    summary.update(final_spacing_spread=float(spread[-1]), rotation_rate=float(rate), set_rotation_rate=alpha * omega)
    return res, _rows(res.t, spacing_spread=spread, theta0=res.angles[:, 0])


LINEAR_RUNS = {
    "consensus": _consensus,
    "second-order": _consensus,
    "ellipse": _ellipse,
    "segment": _segment,
    "circle": _circle,
}
