"""Cell list on a uniform grid that follows the flock, in JAX, jittable: candidate neighbours.

Each call covers the flock's current bounding box with square/cubic cells of side ``c >= cutoff``,
so every agent within ``cutoff`` of another lies in its own or an adjacent cell. Free space, not a
torus: the box is recomputed from the positions at every call. The number of cells is capped at
``max_cells`` (static); a flock spread wider than that gets larger cells (never smaller than the cutoff).

Sort-based, fixed shapes: agents are sorted by cell id (row-major, x fastest) and a cell-start table
(``max_cells + 1``) is built with one scatter-add and a cumulative sum. For each agent and each of the
``3^(d-1)`` neighbouring rows of cells (offsets in y, z), the three cells ``x-1, x, x+1`` of that row
are one contiguous run of the sorted array; the agent takes ``capacity`` candidates from the start of
each run. Runs longer than ``capacity`` are *overflow*: :class:`Candidates` reports the longest run
and the caller must retry with a larger capacity (:mod:`animat.swarm.verlet`,
:func:`animat.swarm.simulate.simulate_flock`), so neighbours are never dropped silently.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Candidates", "cell_size", "cell_candidates", "capacity_bucket"]


class Candidates(NamedTuple):
    """order: (N,) agent ids sorted by cell; idx: (M, N), M = 3^(d-1) capacity, candidate positions in
    that sorted order for each sorted row (the row itself among them; candidate-major, so that a
    candidate slot of all agents is contiguous); valid: (M, N) which entries are real;
    max_run: int32, the longest run (overflow when > capacity); cell: float32, the cell side used."""

    order: jnp.ndarray
    idx: jnp.ndarray
    valid: jnp.ndarray
    max_run: jnp.ndarray
    cell: jnp.ndarray


def capacity_bucket(n: int) -> int:
    """The capacity to use for runs of up to ``n`` agents: the next of 8, 12, 16, 24, 32, 48, ..."""
    cap = 8
    while cap < n:
        cap = cap * 3 // 2 if cap & (cap - 1) == 0 else cap * 4 // 3
    return cap


def cell_size(extent: jnp.ndarray, r: float, max_cells: int) -> jnp.ndarray:
    """Side of the cells: at least ``r`` (the cutoff) and large enough that
    ``prod(floor(e_k / c) + 1) <= max_cells``."""
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
    fullest cell's count. (XLA's comparison sort on CPU costs several times more:
    RESULTS.md, 'Measurements behind the code'.)"""
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


def cell_candidates(q: jnp.ndarray, cutoff: float, capacity: int, max_cells: int) -> Candidates:
    """Candidates for every agent within ``cutoff`` of agent positions ``q`` (N, d): complete unless
    ``max_run > capacity``."""
    n, dim = q.shape
    lo = jnp.min(q, axis=0)
    ext = jnp.max(q, axis=0) - lo
    c = cell_size(ext, cutoff, max_cells)
    ncell = jnp.floor(ext / c).astype(jnp.int32) + 1  # cells per dimension, prod <= max_cells
    ci = jnp.clip(jnp.floor((q - lo) / c).astype(jnp.int32), 0, ncell - 1)  # (N, d)
    stride = jnp.concatenate([jnp.ones((1,), jnp.int32), jnp.cumprod(ncell)[:-1]])
    order, start, _ = _cell_order(ci @ stride, max_cells)
    cis = ci[order]
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
        idx_all.append(jnp.minimum(a[None, :] + slots[:, None], n - 1))
        valid_all.append(slots[:, None] < run[None, :])
    return Candidates(order, jnp.concatenate(idx_all), jnp.concatenate(valid_all), jnp.max(jnp.stack(runs)), c)
