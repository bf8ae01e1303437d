"""Flocking rollouts: ``lax.scan`` over steps in chunks, all-pairs or cell-list neighbours.

The grid path runs a chunk with a static candidate ``capacity``; if any step of the chunk overflowed,
the chunk's results are discarded and it is recomputed from its start with a capacity that fits
the longest run seen (all-pairs once that would cost more). Every such event is reported in
:attr:`FlockRun.events`, so neighbours are never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from animat.errors import ConfigError
from animat.swarm.flocking import FlockParams, FlockState, Obstacles, accel, alpha_accel_allpairs, euler_step
from animat.swarm.grid import alpha_accel_grid, capacity_bucket

__all__ = ["FlockRun", "simulate_flock", "make_chunk"]


@dataclass
class FlockRun:
    """positions, velocities: (T, N, d) float32 recorded every ``record_every`` steps (initial state
    first); t: (T,) s; gamma: (T, d) gamma-agent position; events: overflow/fallback notes."""

    positions: np.ndarray
    velocities: np.ndarray
    t: np.ndarray
    gamma: np.ndarray
    events: list[str] = field(default_factory=list)
    capacity: int | None = None
    neighbours: str = "grid"


def default_max_cells(n: int) -> int:
    return max(64, 4 * n)


@partial(jax.jit, static_argnames=("prm", "obs_key", "method", "capacity", "max_cells", "steps", "records"))
def _chunk(state: FlockState, obs_arrays, prm: FlockParams, obs_key, method: str, capacity: int, max_cells: int, steps: int, records: int):
    """``records`` records of ``steps`` steps each; returns (final state, (q, p, qr) per record, overflow, max_run)."""
    obs = Obstacles(*obs_arrays)

    def one(carry, _):
        st, ovf, mrun = carry
        if method == "grid":
            ua, info = alpha_accel_grid(st.q, st.p, prm, capacity, max_cells)
            ovf, mrun = ovf | info.overflow, jnp.maximum(mrun, info.max_run)
        else:
            ua = alpha_accel_allpairs(st.q, st.p, prm)
        u = accel(st.q, st.p, st.qr, st.pr, prm, obs, ua)
        return (euler_step(st, u, prm.dt), ovf, mrun), None

    def record(carry, _):
        carry, _ = jax.lax.scan(one, carry, None, length=steps)
        st = carry[0]
        return carry, (st.q, st.p, st.qr)

    init = (state, jnp.bool_(False), jnp.int32(0))
    (state, ovf, mrun), frames = jax.lax.scan(record, init, None, length=records)
    return state, frames, ovf, mrun


def make_chunk(prm: FlockParams, obs: Obstacles, method: str, capacity: int, max_cells: int, steps: int, records: int):
    """A callable ``state -> (state, frames, overflow, max_run)`` (jitted; for benchmarks)."""
    arrays = tuple(jnp.asarray(a) for a in obs)
    key = tuple(int(a.shape[0]) for a in obs)
    return lambda st: _chunk(st, arrays, prm, key, method, capacity, max_cells, steps, records)


def simulate_flock(
    q0: np.ndarray,
    p0: np.ndarray,
    prm: FlockParams,
    steps: int,
    *,
    obstacles: Obstacles | None = None,
    gamma_pos: np.ndarray | None = None,
    gamma_vel: np.ndarray | None = None,
    record_every: int = 10,
    neighbours: str = "grid",
    capacity: int = 8,
    max_cells: int | None = None,
    chunk_records: int = 50,
    on_chunk: Callable[[int], None] | None = None,
) -> FlockRun:
    """Run ``steps`` steps of the flocking algorithm ``prm.algorithm`` from ``q0, p0`` (N, d).

    neighbours: "grid" (cell list with overflow retry) or "allpairs". Records every ``record_every``
    steps (the last step is always recorded: ``steps`` is rounded up to a multiple of it).
    """
    q0 = np.asarray(q0, np.float32)
    p0 = np.asarray(p0, np.float32)
    n, dim = q0.shape
    if dim not in (2, 3):
        raise ConfigError(f"--dim must be 2 or 3, got {dim}")
    if p0.shape != q0.shape:
        raise ConfigError(f"velocities {p0.shape} must match positions {q0.shape}")
    if int(steps) < 1:
        raise ConfigError(f"steps must be >= 1, got {steps}")
    if neighbours not in ("grid", "allpairs"):
        raise ConfigError(f"neighbour search must be 'grid' or 'allpairs', got {neighbours!r}")
    obs = obstacles if obstacles is not None else Obstacles.empty(dim)
    if prm.algorithm < 3:
        obs = Obstacles.empty(dim)
    qr = np.zeros(dim, np.float32) if gamma_pos is None else np.asarray(gamma_pos, np.float32)
    pr = np.zeros(dim, np.float32) if gamma_vel is None else np.asarray(gamma_vel, np.float32)
    if qr.shape != (dim,) or pr.shape != (dim,):
        raise ConfigError(f"the gamma-agent's position and velocity need {dim} coordinates, got {qr.tolist()} and {pr.tolist()}")
    record_every = max(1, int(record_every))
    total_records = -(-int(steps) // record_every)
    max_cells = max_cells or default_max_cells(n)
    state = FlockState(jnp.asarray(q0), jnp.asarray(p0), jnp.asarray(qr), jnp.asarray(pr))
    qs, ps, gs = [q0], [p0], [qr]
    events: list[str] = []
    cap = capacity_bucket(capacity)
    done = 0
    while done < total_records:
        recs = min(chunk_records, total_records - done)
        method = neighbours
        while True:
            if method == "grid" and 3 ** (dim - 1) * cap >= n:
                method = "allpairs"  # candidates would outnumber the agents: all-pairs is exact and cheaper
                events.append(f"record {done}: capacity {cap} x {3 ** (dim - 1)} runs >= N = {n}; this chunk uses all-pairs")
            chunk = make_chunk(prm, obs, method, cap, max_cells, record_every, recs)
            new_state, frames, ovf, mrun = chunk(state)
            if method != "grid" or not bool(ovf):
                break
            new_cap = capacity_bucket(max(int(mrun), cap + 1))
            events.append(f"record {done}: cell-list overflow (longest run {int(mrun)} > capacity {cap}); recomputed with capacity {new_cap}")
            cap = new_cap
        state = new_state
        fq, fp, fg = (np.asarray(x) for x in frames)
        qs.extend(fq)
        ps.extend(fp)
        gs.extend(fg)
        done += recs
        if on_chunk is not None:
            on_chunk(done * record_every)
    t = prm.dt * record_every * np.arange(total_records + 1, dtype=np.float64)
    return FlockRun(np.stack(qs), np.stack(ps), t, np.stack(gs), events, cap if neighbours == "grid" else None, neighbours)
