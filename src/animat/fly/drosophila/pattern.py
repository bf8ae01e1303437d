"""Wingbeat pattern generator: a few parameters per wing -> stroke, deviation and rotation angles.

The parameter vector ``p (11,)`` is ``[f, Φ_R, φ0_R, θ_R, A_R, δ_R, Φ_L, φ0_L, θ_L, A_L, δ_L]``:
wingbeat frequency f (Hz, one for both wings: the thorax drives them together), and per wing (right,
left) the stroke amplitude Φ (peak to peak, rad), stroke offset φ0 (rad, + forward), deviation
amplitude θ (rad), rotation amplitude A (rad; the mid-stroke angle of attack is π/2 − A) and rotation
timing δ (rad of phase; > 0 rotates before stroke reversal, "advanced"). With phase ψ::

    stroke     φ = φ0 − (Φ/2) cos ψ                        (ψ in (0, π): downstroke, wing moving forward)
    deviation  θ = θ sin 2ψ                                 (a figure of eight)
    rotation   η = π/2 − A tanh(C sin(ψ + δ)) / tanh(C)     (η: angle of the chord from the stroke plane)

Continuity: the network sets a new target ``p_to`` once per wingbeat, at the end of each beat. Over the
beat the parameters move from ``p_from`` to ``p_to`` along the smoothstep ``s(τ) = 3τ² − 2τ³`` (τ = t/T),
whose slope is zero at both ends, and the phase is the exact integral of the blended frequency,
``ψ(τ) = ψ0 + 2π T (f_from τ + (f_to − f_from)(τ³ − τ⁴/2))``. The blend lasts exactly one beat: with
``T = 2 / (f_from + f_to)`` the phase advances by ``2π T (f_from + f_to) / 2 = 2π`` (:func:`beat_period`).
Past ``T`` the pattern beats on at ``p_to`` (the rollout checks for the beat's end after every physics
step, so this lasts under one step). A new beat starts from the old one's values with zero parameter
rates, so the angles and their rates are continuous (their second derivatives jump with the
parameters' curvature, which is bounded by 6 |Δp| / T²).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

F_MIN, F_MAX = 50.0, 400.0  # Hz: the frequency range the network can choose from
#: the largest stroke amplitude (peak to peak, rad): 176° ± 7°, wild-type Drosophila at maximum flight force
#: (Barton et al. 2005, J. Exp. Biol. 208, 549–560, table 3); the wing hinge allows no more
STROKE_MAX = math.radians(176.0)
#: per-wing parameters (Φ, φ0, θ, A, δ): the centre and half range of each (Φ in 88–176°, φ0 ±30°, θ ±20°,
#: A in 0–90°, δ ±45°). The stroke amplitude's neutral output is 132°, not the 88° of a 0–176° range: the
#: model lifts its weight all along a ridge of (Φ, f), from a wide stroke at a low frequency to a narrow one
#: at a high frequency, at nearly the same power (aerodynamic + inertial: the quasi-steady rotational and
#: added-mass terms favour a high frequency about as much as the wings' inertia favours a low one), so the
#: power hardly tells the frequency apart, and a network, whose outputs sit near their neutral values where
#: it controls, settled at the neutral 88° stroke and climbed the frequency instead. At 132° the weight is
#: lifted near the thorax's frequency; the frequency is still free over 50–400 Hz (the figures, and the runs
#: from this centre under the fixed control tick of then, whose aliasing drew the frequency up:
#: RESULTS.md, 'Measurements behind the code'; :mod:`animat.fly.drosophila.rollout`).
WING_CENTRE = (0.75 * STROKE_MAX, 0.0, 0.0, math.pi / 4, 0.0)
WING_HALF = (0.25 * STROKE_MAX, math.pi / 6, math.pi / 9, math.pi / 4, math.pi / 4)
#: the network sets the two wings' mean and the right wing's difference from it (the left's is the
#: opposite), the difference within this fraction of the half range (±11° of stroke amplitude): the
#: wings beat alike unless the network steers, as a fly's do
SIDE_FRACTION = 0.25


class PatternState(NamedTuple):
    """Generator state: phase at the beat's start ``psi0 ()`` rad (in [0, 2π)), parameters blended from
    ``p_from (11,)`` to ``p_to (11,)`` over the beat, and the physics steps ``k ()`` taken in it."""

    psi0: jax.Array
    p_from: jax.Array
    p_to: jax.Array
    k: jax.Array


def from_outputs(out) -> jax.Array:
    """Network outputs ``(..., 11)`` (clipped to [−1, 1]) -> pattern parameters ``(..., 11)`` (Hz, rad).

    Outputs ``[f, m (5,), d (5,)]``: the frequency (50–400 Hz), the wings' mean parameters ``m`` over their
    ranges (:data:`WING_CENTRE` ± :data:`WING_HALF`) and the right wing's difference from the mean ``d``
    (± :data:`SIDE_FRACTION` of the half range); right = mean + difference, left = mean − difference,
    each clipped to its range (so Φ stays within 88–176°)."""
    o = jnp.clip(out, -1.0, 1.0)
    centre, half = jnp.asarray(WING_CENTRE, jnp.float32), jnp.asarray(WING_HALF, jnp.float32)
    f = 0.5 * (F_MIN + F_MAX) + 0.5 * (F_MAX - F_MIN) * o[..., :1]
    mean, diff = centre + half * o[..., 1:6], SIDE_FRACTION * half * o[..., 6:11]
    side = lambda p: jnp.clip(p, centre - half, centre + half)
    return jnp.concatenate([f, side(mean + diff), side(mean - diff)], axis=-1)


def start(p) -> PatternState:
    """A generator beating steadily with parameters ``p (11,)`` from phase 0 (the start of a downstroke)."""
    p = jnp.asarray(p, jnp.float32)
    return PatternState(psi0=jnp.zeros((), jnp.float32), p_from=p, p_to=p, k=jnp.zeros((), jnp.int32))


def smoothstep(tau):
    return tau * tau * (3.0 - 2.0 * tau)


def beat_period(state: PatternState):
    """Duration ``T = 2 / (f_from + f_to)`` s of the beat being blended: its phase advances by exactly 2π."""
    return 2.0 / (state.p_from[0] + state.p_to[0])


def phase(state: PatternState, t):
    """Phase ψ (rad) at ``t`` s into the beat (past the beat's end, at the new frequency)."""
    f0, f1 = state.p_from[0], state.p_to[0]
    period = beat_period(state)
    tau = jnp.minimum(t / period, 1.0)
    tau2 = tau * tau
    blend = (2.0 * math.pi * period) * (f0 * tau + (f1 - f0) * (tau2 * tau - 0.5 * tau2 * tau2))
    return state.psi0 + blend + (2.0 * math.pi) * f1 * jnp.maximum(t - period, 0.0)


def angles(state: PatternState, sharpness: float, t):
    """Wing angles ``(2, 3)`` rad — (right, left) × (stroke φ, deviation θ, rotation η) — at time
    ``t`` s into the beat."""
    tau = jnp.minimum(t / beat_period(state), 1.0)
    p = state.p_from + (state.p_to - state.p_from) * smoothstep(tau)
    psi = phase(state, t)
    w = p[1:].reshape(2, 5)
    amp, offset, dev, rot, lead = w[:, 0], w[:, 1], w[:, 2], w[:, 3], w[:, 4]
    stroke = offset - 0.5 * amp * jnp.cos(psi)
    deviation = dev * jnp.sin(2.0 * psi)
    rotation = 0.5 * math.pi - rot * jnp.tanh(sharpness * jnp.sin(psi + lead)) / math.tanh(sharpness)
    return jnp.stack([stroke, deviation, rotation], axis=-1)


def beat_done(state: PatternState, t):
    """Whether the beat has ended by ``t`` s into it."""
    return t >= beat_period(state)


def advance(state: PatternState, t, target) -> PatternState:
    """End the beat at ``t`` s into it (``t`` ≥ its period: the parameters have reached ``p_to``) and start
    the next one towards the new parameters ``target (11,)``."""
    psi = jnp.mod(phase(state, t), 2.0 * math.pi)
    return PatternState(psi0=psi, p_from=state.p_to, p_to=jnp.asarray(target, jnp.float32), k=jnp.zeros_like(state.k))
