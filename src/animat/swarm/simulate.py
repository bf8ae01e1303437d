"""Flocking rollouts: ``lax.scan`` over steps in chunks, all-pairs or Verlet lists on the cell list.

The grid path runs a chunk with static list sizes (:class:`animat.swarm.verlet.ListSpec`); if any
list build of the chunk lacked room, the chunk's results are discarded and it is recomputed from its
start with sizes that fit what the builds needed (all-pairs once that would cost more). Every such
event is reported in :attr:`FlockRun.events`, so neighbours are never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from animat.config import require
from animat.errors import ConfigError
from animat.swarm.flocking import FlockParams, FlockState, Obstacles, accel, alpha_accel_allpairs, euler_step
from animat.swarm.grid import capacity_bucket
from animat.swarm.verlet import ListSpec, alpha_accel_list, new_list, refresh

__all__ = ["FlockRun", "simulate_flock", "make_chunk", "fitted_spec", "default_max_cells", "DEFAULT_SKIN"]


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
    width: int | None = None
    builds: int = 0
    neighbours: str = "grid"


DEFAULT_SKIN = 0.25  # Verlet skin as a fraction of the interaction range r


def default_max_cells(n: int) -> int:
    return max(64, 4 * n)


@partial(jax.jit, static_argnames=("prm", "obs_key", "spec", "steps", "records"))
def _chunk(state: FlockState, obs_arrays, prm: FlockParams, obs_key, spec: ListSpec | None, steps: int, records: int):
    """``records`` records of ``steps`` steps each (``spec`` None: all-pairs); returns (final state,
    (q, p, qr) per record, list statistics (overflow, max_run, max_count, builds) or None)."""
    obs = Obstacles(*obs_arrays)

    def one(carry, _):
        st, nl = carry
        if spec is None:
            ua = alpha_accel_allpairs(st.q, st.p, prm)
        else:
            nl = refresh(nl, st.q, prm, spec)
            ua = alpha_accel_list(st.q, st.p, nl.idx, prm, spec.shards)
        u = accel(st.q, st.p, st.qr, st.pr, prm, obs, ua)
        return (euler_step(st, u, prm.dt), nl), None

    def record(carry, _):
        carry, _ = jax.lax.scan(one, carry, None, length=steps)
        st = carry[0]
        return carry, (st.q, st.p, st.qr)

    nl = None if spec is None else new_list(state.q, prm, spec)
    (state, nl), frames = jax.lax.scan(record, (state, nl), None, length=records)
    stats = None if nl is None else (nl.overflow, nl.max_run, nl.max_count, nl.builds)
    return state, frames, stats


def make_chunk(prm: FlockParams, obs: Obstacles, spec: ListSpec | None, steps: int, records: int):
    """A callable ``state -> (state, frames, stats)`` (jitted; ``spec`` None: all-pairs; for benchmarks)."""
    arrays = tuple(jnp.asarray(a) for a in obs)
    key = tuple(int(a.shape[0]) for a in obs)
    return lambda st: _chunk(st, arrays, prm, key, spec, steps, records)


def fitted_spec(spec: ListSpec, stats) -> ListSpec | None:
    """None if the chunk's builds had room, else the sizes they needed."""
    overflow, max_run, max_count, _ = (int(x) for x in stats)
    if not overflow:
        return None
    cap = capacity_bucket(max_run) if max_run > spec.capacity else spec.capacity
    width = capacity_bucket(max_count) if max_count > spec.width else spec.width
    return replace(spec, width=width, capacity=cap)


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
    width: int = 8,
    skin: float | None = None,
    max_cells: int | None = None,
    chunk_records: int = 50,
    shards: int = 1,
    on_chunk: Callable[[int], None] | None = None,
) -> FlockRun:
    """Run ``steps`` steps of the flocking algorithm ``prm.algorithm`` from ``q0, p0`` (N, d).

    neighbours: "grid" (Verlet lists built on the cell list, with overflow retry; ``capacity`` and
    ``width`` are the starting sizes, ``skin`` defaults to ``DEFAULT_SKIN * r``) or "allpairs".
    Records every ``record_every`` steps (the last step is always recorded: ``steps`` is rounded up
    to a multiple of it). ``shards`` > 1 splits the grid path's pair forces over that many JAX
    devices (see :mod:`animat.swarm.verlet`; on CPU the process must start with that many host devices).
    """
    q0, p0, qr, pr, obs = _checked_start(q0, p0, prm, steps, neighbours, obstacles, gamma_pos, gamma_vel)
    n, dim = q0.shape
    record_every = max(1, int(record_every))
    total_records = -(-int(steps) // record_every)
    skin = require("the Verlet skin", DEFAULT_SKIN * prm.r if skin is None else float(skin), gt=0)
    require("shards", shards, ge=1)
    spec = ListSpec(
        skin, capacity_bucket(width), capacity_bucket(capacity), max_cells or default_max_cells(n), int(shards)
    )
    state = FlockState(jnp.asarray(q0), jnp.asarray(p0), jnp.asarray(qr), jnp.asarray(pr))
    qs, ps, gs = [q0], [p0], [qr]
    events: list[str] = []
    builds = done = 0
    while done < total_records:
        recs = min(chunk_records, total_records - done)
        state, frames, stats, spec = _fitted_chunk(
            prm, obs, spec if neighbours == "grid" else None, spec, state, n, dim, record_every, recs, done, events
        )
        builds += 0 if stats is None else int(stats[3])
        for store, x in zip((qs, ps, gs), frames):
            store.extend(np.asarray(x))
        done += recs
        if on_chunk is not None:
            on_chunk(done * record_every)
    t = prm.dt * record_every * np.arange(total_records + 1, dtype=np.float64)
    sizes = (spec.capacity, spec.width) if neighbours == "grid" else (None, None)
    return FlockRun(np.stack(qs), np.stack(ps), t, np.stack(gs), events, *sizes, builds, neighbours)


def _checked_start(q0, p0, prm, steps, neighbours, obstacles, gamma_pos, gamma_vel):
    """The start as float32 arrays ``(q0, p0, gamma_pos, gamma_vel, obstacles)``; bad input raises ConfigError."""
    q0 = np.asarray(q0, np.float32)
    p0 = np.asarray(p0, np.float32)
    dim = q0.shape[1]
    require("--dim", dim, choices=(2, 3))
    if p0.shape != q0.shape:
        raise ConfigError(f"velocities {p0.shape} must match positions {q0.shape}")
    require("steps", steps, ge=1)
    require("neighbour search", neighbours, choices=("grid", "allpairs"))
    obs = obstacles if obstacles is not None else Obstacles.empty(dim)
    if prm.algorithm < 3:
        obs = Obstacles.empty(dim)
    qr = np.zeros(dim, np.float32) if gamma_pos is None else np.asarray(gamma_pos, np.float32)
    pr = np.zeros(dim, np.float32) if gamma_vel is None else np.asarray(gamma_vel, np.float32)
    if qr.shape != (dim,) or pr.shape != (dim,):
        raise ConfigError(
            f"the gamma-agent's position and velocity need {dim} coordinates, got {qr.tolist()} and {pr.tolist()}"
        )
    return q0, p0, qr, pr, obs


def _fitted_chunk(prm, obs, use, spec, state, n, dim, record_every, recs, done, events):
    """One chunk of ``recs`` records from ``state`` with the neighbour lists ``use`` (``None``: all-pairs),
    recomputed with larger lists while they overflow; the overflows go to ``events``.

    Returns ``(state, frames, stats, spec)``, ``spec`` the list sizes that fitted (grown or as given)."""
    while True:
        if use is not None and (3 ** (dim - 1) * use.capacity >= n or use.width >= n):
            use = None  # candidates would outnumber the agents: all-pairs is exact and cheaper
            events.append(
                f"record {done}: list sizes (capacity {spec.capacity}, width {spec.width}) reach N = {n}; this "
                "chunk uses all-pairs"
            )
        new_state, frames, stats = make_chunk(prm, obs, use, record_every, recs)(state)
        bigger = None if use is None else fitted_spec(use, stats)
        if bigger is None:
            return new_state, frames, stats, spec
        events.append(
            f"record {done}: neighbour-list overflow (longest cell run {int(stats[1])}, most neighbours "
            f"{int(stats[2])} for capacity {use.capacity}, width {use.width}); recomputed with capacity "
            f"{bigger.capacity}, width {bigger.width}"
        )
        use = spec = bigger
