"""Closed-loop flight of the fruit fly: at the end of every wingbeat the network observes the fly and
sets the wingbeat pattern generator's parameters for the next beat (:mod:`animat.fly.drosophila.pattern`).

A beat's length is the network's choice (1/400 to 1/50 s), so the rollout checks for the beat's end after
every physics step. With ``params.control_dt`` > 0 the network acts only at the first beat end in each
``control_dt`` (a fixed sensorimotor pace: at every beat below ``1 / control_dt`` Hz, at about every other
one above twice that); a beat it skips repeats the last pattern. The flight is recorded every
``sample_dt`` (5 ms): ``lax.scan`` over samples with an inner ``lax.scan`` over physics steps of the whole
population (every network from every start: one jitted call), the step under ``vmap``. The networks run
only for the flies whose beat has just ended (about one in 45 a step at 220 Hz), gathered in chunks, and not
at all on a step where none has: evaluating every network at every step under ``vmap``, as before issue 50,
cost a large part of the rollout (BENCHMARKS.md, issue 50).

The observation averages the velocity and angular velocity over exactly the beats since the network last
acted, and reads the position and attitude at the same phase of every beat, so the within-beat
oscillation of the body does not reach the network. (An earlier fixed 5 ms control tick, 1.1 beats at
220 Hz, left part of a beat's oscillation in each average, aliased to a slow ripple that shrinks as the
frequency rises: networks evolved under it beat at a frequency the tick set, not the flight;
RESULTS.md, 'Measurements behind the code'.)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.evolve.network import activate
from animat.fly.drosophila import pattern
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import (
    DrosophilaState,
    beat_done,
    initial_state,
    pitch_quat,
    set_pattern,
    step_with_power,
    stroke_plane_quat,
    wing_angles,
)
from animat.rotations import euler_xyz, quat_mul

N_INPUTS = 12
N_OUTPUTS = N_PATTERN
VEL_SCALE = 0.1  # m/s per unit of network input
OMEGA_SCALE = 10.0  # rad/s per unit of network input
REFERENCE_REACH = 10.0  # body lengths: a moving reference point's offset is observed clipped to this, per axis


class Trajectory(NamedTuple):
    """Recorded every ``sample_dt``: pos (T, 3) m, quat (T, 4), crashed (T,), the wings' mean aerodynamic
    power over the sample interval power (T,) W, the pattern parameters the network last set pattern
    (T, 11) (Hz, rad), the network updates (= wingbeats begun) so far updates (T,), and the wing angles
    wing (T, M, 2, 3) rad, body positions fine_pos (T, M, 3) m and orientations fine_quat (T, M, 4) every
    ``wing_every`` steps, at the start of each (M = 0 when not recorded)."""

    pos: jax.Array
    quat: jax.Array
    crashed: jax.Array
    power: jax.Array
    pattern: jax.Array
    updates: jax.Array
    wing: jax.Array
    fine_pos: jax.Array
    fine_quat: jax.Array


def observe(params: DrosophilaParams, state: DrosophilaState, start, vel, omega) -> jax.Array:
    """Network input ``(12,)``: position relative to ``start`` in body lengths, the stroke plane's
    orientation (ZYX Euler angles, rad; zero in the hover posture), and the velocity (world, per 0.1 m/s)
    and body angular velocity (per 10 rad/s) averaged over the beats since the last update (``vel``, ``omega``)."""
    return jnp.concatenate(
        [
            (state.pos - start) / params.body_length,
            euler_xyz(stroke_plane_quat(params, state.quat)),
            vel / VEL_SCALE,
            omega / OMEGA_SCALE,
        ]
    )


def n_updates_for(seconds: float) -> int:
    """The most network updates ``seconds`` of flight can take (one at the start, one per beat at up to
    :data:`pattern.F_MAX`): the length of the sensor-noise sequence."""
    return int(np.ceil(seconds * pattern.F_MAX)) + 2


def chunk_size(flies: int) -> int:
    """How many flies' networks one evaluation takes: about a 16th of the population (at 220 Hz a beat is 45
    steps, so one step ends about a 45th of the flies' beats); more beat ends in one step take more chunks."""
    return min(flies, max(4, -(-flies // 16)))


def decide(policy, acts, default, chunk: int):
    """Pattern targets ``(F, 11)``: ``policy(idx (chunk,)) -> (chunk, 11)`` for the flies where ``acts (F,)``,
    ``default (F, 11)`` elsewhere. The networks run only for the flies that act, ``chunk`` at a time, and not
    at all on a step where none does (most steps: a fly acts once a beat)."""
    flies = acts.shape[0]
    rank = jnp.cumsum(acts) - 1
    count = rank[-1] + 1

    def one_chunk(carry):
        c, target = carry
        idx = jnp.nonzero(acts & (rank // chunk == c), size=chunk, fill_value=flies)[0]
        out = policy(jnp.minimum(idx, flies - 1))
        return c + 1, target.at[idx].set(out, mode="drop")

    return jax.lax.while_loop(lambda carry: carry[0] * chunk < count, one_chunk, (jnp.int32(0), default))[1]


def choose(params: DrosophilaParams, nets, activations, owner, start, noise, state, vel, omega, updates, idx):
    """Pattern targets ``(K, 11)`` (Hz, rad) that the networks set for flies ``idx (K,)`` of the population in
    ``state``: fly ``i`` observes (:func:`observe`) relative to ``start[i]`` with its velocity and angular
    velocity averaged since its last update ``vel[i]``, ``omega[i]`` and ``noise[i, updates[i]]`` added (the
    last row of ``noise`` once ``updates[i]`` passes it), and network ``owner[i]`` of ``nets`` answers."""
    pick = lambda a: a[idx]
    net = jax.tree_util.tree_map(lambda a: a[owner[idx]], nets)
    obs_noise = noise[idx, jnp.minimum(updates[idx], noise.shape[1] - 1)]
    obs = jax.vmap(functools.partial(observe, params))(
        jax.tree_util.tree_map(pick, state), start[idx], vel[idx], omega[idx]
    )
    outputs = jax.vmap(lambda n, o: activate(n, o[:, None], activations)[:, 0])(net, obs + obs_noise)
    return jax.vmap(pattern.from_outputs)(outputs)


def rollout(
    params: DrosophilaParams,
    nets,
    activations: Sequence[str],
    n_ticks: int,
    state0,
    noise,
    owner,
    wing_every=0,
    ref_vel=None,
):
    """Fly ``F`` flies for ``n_ticks`` samples of ``sample_dt`` from ``state0`` (a :class:`DrosophilaState`
    with leading axis F; its pattern is replaced by the network's first choice, so each fly starts beating as
    it means to go on); fly ``i`` is flown by network ``owner[i]`` of the stacked tree ``nets``. Returns
    (final state, Trajectory with axes (T, F, ...), the fine records (T, M, F, ...)). ``noise (F, U, 12)``:
    sensor noise added to each fly's successive observations (U ≥ :func:`n_updates_for` the flight's seconds;
    the first observation gets ``noise[:, 0]``). The step runs for every fly under ``vmap``; the networks
    only for the flies whose beat has just ended (:func:`decide`). ``ref_vel (F, 3)`` m/s: the flies' reference
    points move so (:func:`reference_origin`); None: they stay at the start."""
    if wing_every and params.steps_per_sample % wing_every:
        raise ValueError(f"wing_every ({wing_every}) must divide the {params.steps_per_sample} steps of a sample")
    policy = functools.partial(choose, params, nets, activations, owner)
    origin = reference_origin(params, state0.pos, ref_vel)
    carry = start_carry(policy, noise, state0)
    sample = functools.partial(flight_sample, params, policy, origin, noise, wing_every)
    (state, *_), traj = jax.lax.scan(lambda c, _: sample(c), carry, None, length=n_ticks)
    return state, traj


def start_carry(policy, noise, state0):
    """The carry of :func:`flight_sample` at the start of a flight from ``state0`` (leading axis F): each fly's
    pattern set from its network's first choice (``policy``, :func:`choose` with the nets bound), the velocity
    and angular velocity sums empty, one update made, step 0."""
    flies = state0.pos.shape[0]
    zero, updates = jnp.zeros((flies, 3), jnp.float32), jnp.zeros(flies, jnp.int32)
    first = policy(state0.pos, noise, state0, state0.vel, state0.omega, updates, jnp.arange(flies))
    state0 = state0._replace(pattern=jax.vmap(pattern.start)(first)._replace(psi0=state0.pattern.psi0))
    return (state0, zero, zero, updates + 1, jnp.int32(0), jnp.zeros(flies, jnp.int32))


def flight_sample(params: DrosophilaParams, policy, origin, noise, wing_every: int, carry):
    """One sample of ``sample_dt`` of ``F`` flies: ``carry`` = (state, the velocity and angular velocity sums since
    each fly's network last acted, the updates so far, the step count g, each fly's step of its last update);
    ``policy``: :func:`choose` with the nets bound; ``origin(g, state) -> (F, 3)``: the points the flies observe
    their position from (:func:`reference_origin`). Returns (the next carry, the sample's :class:`Trajectory`)."""
    n_steps, per_control = params.steps_per_sample, params.steps_per_control
    flies = carry[0].pos.shape[0]

    def physics_step(carry, _):
        # vel, omega: sums since each fly's network last acted, at step g_last (so over g - g_last steps)
        state, vel, omega, updates, g, g_last, power = carry
        new, p = jax.vmap(functools.partial(step_with_power, params))(state)
        vel, omega, g = vel + new.vel, omega + new.omega, g + 1
        n = (g - g_last).astype(jnp.float32)[:, None]
        done = jax.vmap(functools.partial(beat_done, params))(new)
        acts = done & ((g // per_control > g_last // per_control) if per_control else True)
        act = lambda idx: policy(origin(g, new), noise, new, vel / n, omega / n, updates, idx)
        target = decide(act, acts, new.pattern.p_to, chunk_size(flies))
        ended = jax.vmap(functools.partial(set_pattern, params))(new, target)
        new = jax.tree_util.tree_map(
            lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b), ended, new
        )
        keep, g_last = jnp.where(acts, 0.0, 1.0)[:, None], jnp.where(acts, g, g_last)
        carry = (new, vel * keep, omega * keep, updates + acts.astype(updates.dtype), g, g_last, power + p)
        fine = (jax.vmap(functools.partial(wing_angles, params))(state), state.pos, state.quat) if wing_every else None
        return carry, fine

    (state, vel, omega, updates, g, g_last, power), fine = jax.lax.scan(
        physics_step, (*carry, jnp.zeros(flies, jnp.float32)), None, length=n_steps
    )
    fine = tuple(x[::wing_every] for x in fine) if wing_every else empty_fine(flies)
    record = Trajectory(state.pos, state.quat, state.crashed, power / n_steps, state.pattern.p_to, updates, *fine)
    return (state, vel, omega, updates, g, g_last), record


def reference_origin(params: DrosophilaParams, start, ref_vel, g0=0):
    """``origin(g, state) -> (F, 3)`` m: the points the flies observe their position from (:func:`observe`'s
    ``start``) after ``g`` steps in ``state``: ``start (F, 3)`` where ``ref_vel`` is None; else each fly's reference
    point, moving from ``start`` at step ``g0`` at ``ref_vel (F, 3)`` m/s (a direction task's,
    :mod:`animat.fly.drosophila.tasks`; a steered command's, :mod:`animat.fly.drosophila.pilot`),
    its offset from the fly seen clipped to ±:data:`REFERENCE_REACH` body lengths per axis: at 0.3 m/s the point
    moves 120 body lengths a second, and a network observing the whole lag would see inputs far outside those it
    evolved on."""
    if ref_vel is None:
        return lambda g, state: start
    reach = REFERENCE_REACH * params.body_length
    return lambda g, state: state.pos - jnp.clip(state.pos - (start + ref_vel * ((g - g0) * params.dt)), -reach, reach)


def empty_fine(flies: int):
    """The fine records of a sample when none are kept: wing angles, positions, orientations with M = 0."""
    return tuple(jnp.zeros((0, flies) + shape, jnp.float32) for shape in ((2, 3), (3,), (4,)))


@functools.lru_cache(maxsize=32)
def population_rollout(params: DrosophilaParams, activations: tuple[str, ...], n_ticks: int, wing_every: int = 0):
    """Jitted ``(nets (P, ...) stacked tree, starts: DrosophilaState (S, ...), noise (S, U, 12)[, ref_vel (S, 3)])
    -> Trajectory (P, S, T, ...)``: every network flies from every start with that start's sensor noise (and
    moving reference point, :func:`rollout`), the P × S flies in one :func:`rollout`."""

    def run(nets, starts, noise, ref_vel=None):
        n_nets, n_starts = jax.tree_util.tree_leaves(nets)[0].shape[0], starts.pos.shape[0]
        tile = lambda a: jnp.broadcast_to(a, (n_nets,) + a.shape).reshape((n_nets * n_starts,) + a.shape[1:])
        owner = jnp.repeat(jnp.arange(n_nets), n_starts)
        flies = jax.tree_util.tree_map(tile, starts), tile(noise), owner
        _, traj = rollout(
            params, nets, activations, n_ticks, *flies, wing_every, None if ref_vel is None else tile(ref_vel)
        )
        fly_first = lambda a, axis: jnp.moveaxis(a, axis, 0).reshape(
            (n_nets, n_starts) + a.shape[:axis] + a.shape[axis + 1 :]
        )
        return Trajectory(*(fly_first(x, 1) for x in traj[:6]), *(fly_first(x, 2) for x in traj[6:]))

    return jax.jit(run)


def start_states(params: DrosophilaParams, n: int, seed: int = 0, scale: float = 1.0) -> DrosophilaState:
    """``n`` start states (leading axis ``n``) in the hover posture at the origin. Start 0 at rest; the
    others perturbed: velocity uniform ±0.05 m/s per axis, roll and pitch ±0.1 rad, angular velocity
    ±1 rad/s per axis, times ``scale``. The pattern is a placeholder: the rollout sets it from the network."""
    rng = np.random.default_rng(seed)
    base = initial_state(params, pattern.from_outputs(jnp.zeros(N_PATTERN)))
    vel = np.zeros((n, 3), np.float32)
    vel[1:] = rng.uniform(-0.05, 0.05, (n - 1, 3)) * scale
    omega = np.zeros((n, 3), np.float32)
    omega[1:] = rng.uniform(-1.0, 1.0, (n - 1, 3)) * scale
    tilt = np.zeros((n, 3), np.float32)
    tilt[1:, :2] = rng.uniform(-0.1, 0.1, (n - 1, 2)) * scale
    half = np.linalg.norm(tilt, axis=1, keepdims=True) / 2
    dq = np.concatenate([np.cos(half), np.sinc(half / np.pi) * tilt / 2], axis=1).astype(np.float32)
    quat = np.asarray(quat_mul(jnp.asarray(dq), jnp.asarray(pitch_quat(params.stroke_plane_angle))))
    tile = lambda a: np.broadcast_to(np.asarray(a), (n,) + np.shape(a)).copy()
    return DrosophilaState(
        pos=np.zeros((n, 3), np.float32),
        vel=vel,
        quat=quat,
        omega=omega,
        pattern=jax.tree_util.tree_map(tile, base.pattern),
        crashed=np.zeros(n, bool),
    )


def pool_start_states(params: DrosophilaParams, n: int, seed: int, pool: dict[str, np.ndarray]) -> DrosophilaState:
    """``n`` start states: start 0 at rest in the hover posture (:func:`start_states`), the others states of a start
    pool (:func:`animat.fly.steer.tracking.read_start_pool`: the velocity, orientation and angular velocity of a
    steered fly at its hand-overs, :func:`animat.fly.steer.pilot.handover_states`) drawn by ``seed`` (without
    repeats while the pool has enough), at the origin. The wings start a new beat from the network's first choice
    (:func:`start_carry`), as a network taking over at a wingbeat's end does."""
    base = start_states(params, n, seed)
    size = len(pool["vel"])
    idx = np.random.default_rng(seed).choice(size, n - 1, replace=size < n - 1)
    pick = lambda start, key: np.concatenate([start[:1], pool[key][idx]]).astype(np.float32)
    return base._replace(vel=pick(base.vel, "vel"), quat=pick(base.quat, "quat"), omega=pick(base.omega, "omega"))


def n_ticks_for(params: DrosophilaParams, seconds: float) -> int:
    """Number of samples of ``sample_dt`` in ``seconds`` (at least 1)."""
    return max(1, int(round(seconds / params.sample_dt)))


def cores() -> int:
    """The CPU cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return max(1, os.cpu_count() or 1)


def simulate_population(
    params: DrosophilaParams,
    nets,
    activations: Sequence[str],
    seconds: float,
    starts: DrosophilaState | None = None,
    noise=None,
    wing_every: int = 0,
    threads: int | None = None,
    ref_vel=None,
) -> Trajectory:
    """Simulate every network of the stacked tree ``nets`` for ``seconds``: arrays ``(P, T, ...)`` from
    start 0 without ``starts``, ``(P, S, T, ...)`` with ``starts`` (leading axis S, :func:`start_states`).
    ``noise (S, U, 12)``: sensor noise per start and network update (U ≥ :func:`n_updates_for`; default none).
    ``ref_vel (S, 3)`` m/s: each start's reference point moves at that velocity (:func:`rollout`; default still).

    XLA runs one call of the jitted rollout on one core. The networks are split into ``threads`` equal parts
    (default :func:`cores`; at least two networks a part), padded with copies of the last network, each part flown
    by the same compiled program from its own thread at once (JAX releases the GIL while it runs): a fly's flight is
    the same number for number whatever the split (the step's rounding does not depend on the batch, except a batch
    of one, which is flown doubled)."""
    n_ticks = n_ticks_for(params, seconds)
    s0 = start_states(params, 1) if starts is None else starts
    if noise is None:
        noise = np.zeros((s0.pos.shape[0], n_updates_for(seconds), N_INPUTS), np.float32)
    nets = jax.tree_util.tree_map(np.asarray, nets)
    size = jax.tree_util.tree_leaves(nets)[0].shape[0]
    parts = max(1, min(cores() if threads is None else int(threads), size // 2))
    each = max(2, -(-size // parts))  # a batch of one compiles to scalar code that rounds differently
    nets = jax.tree_util.tree_map(lambda a: np.concatenate([a, np.repeat(a[-1:], each * parts - size, 0)]), nets)
    fn = population_rollout(params, tuple(activations), n_ticks, wing_every)
    shared = (jax.tree_util.tree_map(jnp.asarray, s0), jnp.asarray(noise))
    shared += () if ref_vel is None else (jnp.asarray(ref_vel, jnp.float32),)

    def fly(k: int) -> list[np.ndarray]:
        part = jax.tree_util.tree_map(lambda a: a[k * each : (k + 1) * each], nets)
        return [np.asarray(x) for x in fn(part, *shared)]

    if parts == 1:
        flown = [fly(0)]
    else:
        with ThreadPoolExecutor(parts, thread_name_prefix="drosophila") as pool:
            flown = list(pool.map(fly, range(parts)))
    traj = Trajectory(*(np.concatenate([f[k] for f in flown])[:size] for k in range(len(Trajectory._fields))))
    return Trajectory(*(x[:, 0] for x in traj)) if starts is None else traj
