"""Mechanical power of the fruit fly's wingbeat, per kg of body (W/kg).

- aerodynamic: the work the wings do on the air per second, from the blade forces
  (:func:`animat.fly.drosophila.aero.blade_forces`), averaged over each ``sample_dt`` by the rollout;
- inertial: accelerating the wings' own mass with no elastic storage (every stroke reversal's kinetic
  energy lost, Lehmann & Dickinson 1997's 0 %-storage case). For the sinusoidal stroke
  ``φ = φ0 − (Φ/2) cos 2πft`` of a wing of moment of inertia ``I`` the kinetic energy ``½ I φ̇²`` peaks at
  ``½ I (π f Φ)²`` twice a beat, so the positive work per second is ``I π² f³ Φ²`` per wing (the
  deviation's and rotation's inertia are left out).
- induced (off unless ``params.induced_power_factor`` k > 0): the power of the downwash that carries the
  weight, which the quasi-steady blade forces leave out (they hold no wake). Rankine–Froude momentum theory
  of the partial actuator disc the two wings sweep, area ``A0 = Φ R²`` for stroke amplitude Φ (rad) and
  wing length R, in a horizontal stroke plane: induced velocity ``w = √(W / (2 ρ A0))`` and power
  ``k W w``, with k ≈ 1.2 for the wake's unevenness in time and space (Ellington 1984, Phil. Trans. R. Soc.
  B 305, 145–181, "VI. Lift and power requirements"; applied to Drosophila by Lehmann & Dickinson 1997).
  It is the term that falls with the stroke amplitude: a wider stroke moves more air more slowly.

With translational forces alone, at a fixed lift (∝ f² Φ²) the aerodynamic power (∝ f³ Φ³) is the same for
any split of f and Φ, while the inertial power grows with f. The rotational and added-mass terms favour a
high frequency about as much, so with every term on the power of lifting the weight in the hover posture
hardly selects the frequency (see :data:`animat.fly.drosophila.pattern.WING_CENTRE`). The induced power tips
the balance: with k = 1.2 and the elastic thorax near 218 Hz, the cheapest hover along the weight-support
ridge is at a wide stroke near the thorax's frequency (the figures: RESULTS.md, 'Measurements behind the code').
"""

from __future__ import annotations

import math

import numpy as np

from animat.fly.drosophila.model import DrosophilaParams


def inertial_power(params: DrosophilaParams, p: np.ndarray) -> np.ndarray:
    """Inertial power of both wings, W, from pattern parameters ``p (..., 11)`` (Hz, rad; see
    :mod:`animat.fly.drosophila.pattern`) -> ``(...)``: the positive work of the reactive torque
    ``I φ̈ + k (φ − φ0)`` on the sinusoidal stroke, ``I π² f Φ² |f² − f_r²|`` per wing, with the elastic
    stiffness ``k = I (2π f_r)²`` of ``params.thorax_resonance_hz`` = f_r (0: ``I π² f³ Φ²``)."""
    f, amps = p[..., 0], p[..., [1, 6]]
    fr = params.thorax_resonance_hz
    return params.wing_inertia * math.pi**2 * f * np.abs(f * f - fr * fr) * (amps**2).sum(axis=-1)


def induced_power(params: DrosophilaParams, p: np.ndarray) -> np.ndarray:
    """Induced power of both wings holding the body's weight W, W, from pattern parameters ``p (..., 11)``
    -> ``(...)``: ``k W √(W / (2 ρ A0))`` with the disc ``A0 = ½ (Φ_R + Φ_L) R²`` and
    k = ``params.induced_power_factor`` (0: none)."""
    k = params.induced_power_factor
    disc = 0.5 * (p[..., 1] + p[..., 6]) * params.wing_length**2
    weight = params.weight
    return k * weight * np.sqrt(weight / (2.0 * params.rho * disc)) if k else np.zeros(np.shape(disc))


def mechanical_power_per_kg(params: DrosophilaParams, aero_power: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Aerodynamic (blade-element plus induced) and inertial power per kg of body, W/kg: the blade forces'
    power ``aero_power (...)`` W (per sample) and the samples' pattern parameters ``p (..., 11)`` -> ``(...)``."""
    return (aero_power + induced_power(params, p) + inertial_power(params, p)) / params.mass
