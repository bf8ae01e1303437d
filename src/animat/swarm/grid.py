"""Neighbour search on a uniform grid (cell list) that follows the flock, in JAX, jittable.

Each call covers the flock's current bounding box with square/cubic cells of side ``c >= r`` (the
interaction range), so every neighbour of an agent lies in its own or an adjacent cell. Free space,
not a torus: the box is recomputed from the positions every step. The number of cells is capped at
``max_cells`` (static); a flock spread wider than that gets larger cells (never smaller than r).

Sort-based, fixed shapes: agents are sorted by cell id (row-major, x fastest), a cell-start table
(``max_cells + 1``) is built with one scatter-add and a cumulative sum. For each agent and each of the
``3^(d-1)`` neighbouring rows of cells (offsets in y, z), the three cells ``x-1, x, x+1`` of that row
are one contiguous run of the sorted array; the agent takes ``capacity`` candidates from the start of
each run. Runs longer than ``capacity`` are *overflow*: the function reports it (``overflow`` and the
longest run ``max_run``) and the caller must recompute with a larger capacity -- see
:func:`animat.swarm.simulate` -- so neighbours are never dropped silently. Candidates beyond range
contribute exactly zero (the bump function vanishes at r), as does the agent itself.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from animat.swarm.flocking import FlockParams, pair_weights

__all__ = ["GridInfo", "cell_size", "alpha_accel_grid", "capacity_bucket"]


class GridInfo(NamedTuple):
    """overflow: bool, some run exceeded ``capacity``; max_run: int32, the longest run seen;
    cell: float32, the cell side used."""

    overflow: jnp.ndarray
    max_run: jnp.ndarray
    cell: jnp.ndarray


def capacity_bucket(n: int) -> int:
    """The capacity to use for runs of up to ``n`` agents: the next of 8, 12, 16, 24, 32, 48, ..."""
    cap = 8
    while cap < n:
        cap = cap * 3 // 2 if cap & (cap - 1) == 0 else cap * 4 // 3
    return cap


def cell_size(extent: jnp.ndarray, r: float, max_cells: int) -> jnp.ndarray:
    """Side of the cells: at least ``r`` and large enough that ``prod(floor(e_k / c) + 1) <= max_cells``."""
    dim = extent.shape[0]
    if dim == 2:
        ex, ey = extent[0], extent[1]
        m1 = max_cells - 1.0  # (ex/c + 1)(ey/c + 1) <= M  <=>  (M-1)c^2 - (ex+ey)c - ex ey >= 0
        s = ex + ey
        c_min = (s + jnp.sqrt(s * s + 4.0 * m1 * ex * ey)) / (2.0 * m1)
    else:
        per_dim = float(max_cells) ** (1.0 / dim) - 1.0
        c_min = jnp.max(extent) / per_dim
    return jnp.maximum(jnp.float32(r), c_min * (1.0 + 1e-5) + 1e-6)


def _cell_order(cid: jnp.ndarray, max_cells: int) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Counting sort of agents by cell id without comparisons: returns (order (N,), start
    (max_cells + 1,), rounds). Ranks within a cell come from rounds of scatter-max: in each round
    every cell elects its highest pending agent, which takes the next slot; the rounds equal the
    fullest cell's count. (XLA's comparison sort on CPU costs ~5x more at N = 1e4.)"""
    n = cid.shape[0]
    ids = jnp.arange(n, dtype=jnp.int32)

    def body(carry):
        k, slot = carry
        pending = slot < 0
        key = jnp.where(pending, cid, max_cells)  # placed agents vote in a dummy row
        winner = jnp.full((max_cells + 1,), -1, jnp.int32).at[key].max(ids)
        won = pending & (winner[cid] == ids)
        return k + 1, jnp.where(won, k, slot)

    rounds, slot = jax.lax.while_loop(lambda c: jnp.any(c[1] < 0), body, (jnp.int32(0), jnp.full((n,), -1, jnp.int32)))
    counts = jnp.zeros((max_cells,), jnp.int32).at[cid].add(1)
    start = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(counts)])
    order = jnp.zeros((n,), jnp.int32).at[start[cid] + slot].set(ids)
    return order, start, rounds


@partial(jax.jit, static_argnames=("prm", "capacity", "max_cells"))
def alpha_accel_grid(q: jnp.ndarray, p: jnp.ndarray, prm: FlockParams, capacity: int, max_cells: int) -> tuple[jnp.ndarray, GridInfo]:
    """Alpha-agent control (N, d) -- :func:`animat.swarm.flocking.pair_weights` summed over the
    neighbours found on the cell list -- and :class:`GridInfo`. Exact when ``not info.overflow``."""
    n, dim = q.shape
    lo = jnp.min(q, axis=0)
    ext = jnp.max(q, axis=0) - lo
    c = cell_size(ext, prm.r, max_cells)
    ncell = jnp.floor(ext / c).astype(jnp.int32) + 1  # cells per dimension, prod <= max_cells
    ci = jnp.clip(jnp.floor((q - lo) / c).astype(jnp.int32), 0, ncell - 1)  # (N, d)
    stride = jnp.concatenate([jnp.ones((1,), jnp.int32), jnp.cumprod(ncell)[:-1]])
    cid = ci @ stride
    order, start, _ = _cell_order(cid, max_cells)
    cis = ci[order]
    qs, ps = q[order], p[order]  # cell order
    x = cis[:, 0]
    x_lo = jnp.maximum(x - 1, 0)
    x_hi = jnp.minimum(x + 1, ncell[0] - 1)
    slots = jnp.arange(capacity, dtype=jnp.int32)
    idx_all, valid_all, runs = [], [], []
    for off in itertools.product((-1, 0, 1), repeat=dim - 1):
        rows = cis[:, 1:] + jnp.asarray(off, jnp.int32)
        ok = jnp.all((rows >= 0) & (rows < ncell[1:]), axis=1)
        base = jnp.where(ok, rows @ stride[1:], 0)
        a = start[base + x_lo]
        run = jnp.where(ok, start[base + x_hi + 1] - a, 0)
        runs.append(run)
        idx_all.append(jnp.minimum(a[:, None] + slots, n - 1))
        valid_all.append(slots < run[:, None])
    idx = jnp.concatenate(idx_all, axis=1)  # (N, K) candidate rows in cell order
    valid = jnp.concatenate(valid_all, axis=1)
    dqs = [jnp.where(valid, qs[:, k][idx] - qs[:, k, None], 0.0) for k in range(dim)]
    w1, w2 = pair_weights(sum(x * x for x in dqs), prm)
    u_sorted = jnp.stack(
        [jnp.sum(w1 * dqs[k] + jnp.where(valid, w2 * (ps[:, k][idx] - ps[:, k, None]), 0.0), axis=1) for k in range(dim)], axis=1
    )
    u = jnp.zeros_like(u_sorted).at[order].set(u_sorted)
    max_run = jnp.max(jnp.stack(runs))
    return u, GridInfo(max_run > capacity, max_run, c)
