"""Verlet neighbour lists with a skin, built on the cell list, in JAX, jittable.

L. Verlet, Phys. Rev. 159, 98 (1967); the displacement criterion as in M. P. Allen and D. J.
Tildesley, *Computer Simulation of Liquids* (2nd ed. 2017), Sec. 5.3. A list holds, for every agent,
the ids of all agents within ``r + skin`` at the time it was built (``width`` slots, padded with the
agent's own id, whose term is exactly zero: dq = dp = 0). It is stored in blocks of ``BLOCK``
agents, slot-major within a block, ``(blocks, width, BLOCK)``: the per-step gathers and the sum over
slots then run along contiguous agents, and a block's temporaries stay in cache (at N = 1e5 a single
(width, N) pass costs 3x more per agent than blocks of 2048, on the 2-core machine of BENCHMARKS.md). It stays complete
for the interaction range ``r`` until some agent has moved by ``skin / 2`` relative to a common shift ``c`` (the mean
displacement): then ``| |q_i - q_j| - |q_i0 - q_j0| | <= |dq_i - c| + |dq_j - c| < skin`` for every pair, so no pair can
come within ``r`` that was not within ``r + skin`` at the build. Subtracting the common shift keeps a flock that
translates as a whole from forcing rebuilds. :func:`refresh` checks this every step and rebuilds under ``lax.cond``;
between builds the forces cost ``width`` gathered partners per agent instead of a cell search.

With ``ListSpec.shards = k > 1`` the force evaluation is split over the first k JAX devices
(``jax.shard_map`` over the blocks; positions and velocities replicated, each device summing the
forces of its share of the agents from the shared list). On CPU, start the process with
``XLA_FLAGS=--xla_force_host_platform_device_count=k`` (read when jax initialises). XLA already spreads
one device's step over its two intra-op threads on the 2-core machine of BENCHMARKS.md, but at N = 1e5
the same steps split over two host devices run faster, and at 1e3 and 1e4 agents slower
(``benchmarks/flocking.py``; the figures in BENCHMARKS.md). Each block's arithmetic is unchanged, so
the forces equal those of k = 1 (rollouts differ by float32 rounding of the update).

A build whose cell runs exceed ``capacity`` or which finds more than ``width`` neighbours sets the
sticky ``overflow`` flag (with the sizes it needed); :func:`animat.swarm.simulate.simulate_flock`
then recomputes the whole chunk with larger sizes, so neighbours are never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

from animat.errors import ConfigError
from animat.swarm.flocking import FlockParams, alpha_sum
from animat.swarm.grid import cell_candidates

__all__ = ["BLOCK", "ListSpec", "NeighbourList", "new_list", "refresh", "alpha_accel_list", "list_ids"]

BLOCK = 2048  # agents per block of the force evaluation


@dataclass(frozen=True)
class ListSpec:
    """Static sizes (hashable): skin (length units), width (neighbour slots per agent), capacity
    (candidates per run of three cells), max_cells (cap on the grid's cell count), shards (devices
    that share the force evaluation; 1: the default device only)."""

    skin: float
    width: int
    capacity: int
    max_cells: int
    shards: int = 1


class NeighbourList(NamedTuple):
    """idx: (blocks, width, B) int32 neighbour ids of agents ``b B + k`` (own id in unused slots; the
    agents are padded to ``blocks * B`` with ids that gather zeros), B = min(BLOCK, ceil(N / shards)); ref: (N, d)
    positions at the last build; overflow: bool, some build since :func:`new_list` lacked room; max_run, max_count:
    int32, the longest cell run and the most neighbours any build needed; builds: int32, builds so far."""

    idx: jnp.ndarray
    ref: jnp.ndarray
    overflow: jnp.ndarray
    max_run: jnp.ndarray
    max_count: jnp.ndarray
    builds: jnp.ndarray


def _blocked(idx: jnp.ndarray, shards: int) -> jnp.ndarray:
    """(width, N) ids -> (blocks, width, B), B = min(BLOCK, ceil(N / shards)), blocks a multiple of
    ``shards``, the padding agents listing only themselves."""
    width, n = idx.shape
    size = min(BLOCK, -(-n // shards))
    nb = -(-n // (size * shards)) * shards
    pad = jnp.broadcast_to(jnp.arange(n, nb * size, dtype=jnp.int32), (width, nb * size - n))
    return jnp.concatenate([idx, pad], axis=1).reshape(width, nb, size).transpose(1, 0, 2)


def list_ids(nl: NeighbourList, n: int) -> jnp.ndarray:
    """The listed ids as (N, width) for agents 0..N-1 (inspection and tests)."""
    nb, width, size = nl.idx.shape
    return nl.idx.transpose(1, 0, 2).reshape(width, nb * size)[:, :n].T


def _build(q: jnp.ndarray, cutoff: float, spec: ListSpec) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """(idx (blocks, width, B), longest run, most neighbours) for the pairs closer than ``cutoff``."""
    n, dim = q.shape
    width = spec.width
    cand = cell_candidates(q, cutoff, spec.capacity, spec.max_cells)
    qs = q[cand.order]
    rows = jnp.arange(n, dtype=jnp.int32)
    d2 = sum((qs[:, k][cand.idx] - qs[None, :, k]) ** 2 for k in range(dim))
    keep = cand.valid & (d2 < cutoff * cutoff) & (cand.idx != rows[None])  # (M, N)
    # slot s of a row takes its (s+1)-th kept candidate, else the row itself: a sweep over the
    # candidates with a running count (XLA's CPU cumsum along an axis and scatters cost far more:
    # RESULTS.md, 'Measurements behind the code')
    slots = jnp.arange(width, dtype=jnp.int32)[:, None]

    def take(m, carry):
        lst, seen = carry
        return jnp.where(keep[m] & (seen == slots), cand.idx[m], lst), seen + keep[m]

    init = (jnp.broadcast_to(rows, (width, n)), jnp.zeros((n,), jnp.int32))
    lst, seen = jax.lax.fori_loop(0, cand.idx.shape[0], take, init, unroll=4)
    inv = jnp.zeros((n,), jnp.int32).at[cand.order].set(rows)  # agent id -> sorted row
    return _blocked(cand.order[lst][:, inv], spec.shards), cand.max_run, jnp.max(seen)


def _with_build(nl: NeighbourList, q: jnp.ndarray, cutoff: float, spec: ListSpec) -> NeighbourList:
    idx, run, count = _build(q, cutoff, spec)
    over = nl.overflow | (run > spec.capacity) | (count > spec.width)
    return NeighbourList(idx, q, over, jnp.maximum(nl.max_run, run), jnp.maximum(nl.max_count, count), nl.builds + 1)


def new_list(q: jnp.ndarray, prm: FlockParams, spec: ListSpec) -> NeighbourList:
    """A fresh list for positions ``q`` (N, d) with clear overflow statistics."""
    n = q.shape[0]
    empty = NeighbourList(
        _blocked(jnp.zeros((spec.width, n), jnp.int32), spec.shards),
        q,
        jnp.bool_(False),
        jnp.int32(0),
        jnp.int32(0),
        jnp.int32(0),
    )
    return _with_build(empty, q, prm.r + spec.skin, spec)


def refresh(nl: NeighbourList, q: jnp.ndarray, prm: FlockParams, spec: ListSpec) -> NeighbourList:
    """``nl`` if it is still complete for range r at positions ``q``, else a rebuilt one."""
    disp = q - nl.ref
    disp = disp - jnp.mean(disp, axis=0)
    stale = jnp.max(jnp.sum(disp * disp, axis=1)) >= (0.5 * spec.skin) ** 2
    return jax.lax.cond(stale, lambda: _with_build(nl, q, prm.r + spec.skin, spec), lambda: nl)


def alpha_accel_list(
    q: jnp.ndarray, p: jnp.ndarray, idx: jnp.ndarray, prm: FlockParams, shards: int = 1
) -> jnp.ndarray:
    """Alpha-agent control (N, d) summed over the listed partners ``idx`` (blocks, width, B); exact
    when the list holds every agent within r. Block by block (``lax.map``), one component at a time
    (structure of arrays), gathers with in-bounds indices promised (no clamping on XLA's CPU path).
    ``shards`` > 1 splits the blocks (a multiple of it) over that many devices."""
    n, dim = q.shape
    nb, _, size = idx.shape
    cols = tuple(jnp.pad(a[:, k], (0, nb * size - n)) for a in (q, p) for k in range(dim))

    def blocks(cols, own, ids):
        def block(args):
            own, ids = args
            diff = [c.at[ids].get(mode="promise_in_bounds") - o[None] for c, o in zip(cols, own)]
            return alpha_sum(diff[:dim], diff[dim:], prm, axis=0)

        return jax.lax.map(block, (own, ids))

    own = tuple(c.reshape(nb, size) for c in cols)
    if shards > 1:
        if jax.device_count() < shards:
            raise ConfigError(
                f"the force evaluation was asked to use {shards} devices but jax has {jax.device_count()}; "
                f"on CPU start the process with XLA_FLAGS=--xla_force_host_platform_device_count={shards}"
            )
        mesh = jax.sharding.Mesh(jax.devices()[:shards], ("agents",))
        part = jax.sharding.PartitionSpec("agents")
        blocks = jax.shard_map(blocks, mesh=mesh, in_specs=(jax.sharding.PartitionSpec(), part, part), out_specs=part)
    return blocks(cols, own, idx).reshape(nb * size, dim)[:n]
