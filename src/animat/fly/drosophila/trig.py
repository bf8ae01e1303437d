"""The first quadrant's arctangent in float32 as a polynomial (Cephes' ``atanf``: Moshier, *Methods and Programs
for Mathematical Functions*, 1989), for the blade elements' angle of attack.

XLA on CPU evaluates ``atan2`` one element at a time (15–45 ns on the project's machine, against about 0.3 ns
for a multiply); this is multiplies, adds, two divisions and selects, which it vectorises, and agrees with it
to float32 rounding (``tests/fly/drosophila/test_drosophila_aero.py``).
"""

from __future__ import annotations

import math

import jax.numpy as jnp


def atan2_first_quadrant(y, x):
    """``atan2(y, x)`` rad for ``y, x >= 0`` (0 where both are 0): in ``[0, π/2]``, by Cephes' ``atanf`` of the
    smaller over the larger, reduced to ``[0, tan π/8]``."""
    lo, hi = jnp.minimum(y, x), jnp.maximum(y, x)
    t = lo / jnp.where(hi > 0, hi, 1.0)
    big = t > 0.4142135623730950  # tan π/8: atan t = π/4 + atan((t − 1) / (t + 1))
    z = jnp.where(big, (t - 1.0) / (t + 1.0), t)
    zz = z * z
    a = (((8.05374449538e-2 * zz - 1.38776856032e-1) * zz + 1.99777106478e-1) * zz - 3.33329491539e-1) * zz * z + z
    a = a + jnp.where(big, math.pi / 4, 0.0)
    return jnp.where(y > x, math.pi / 2 - a, a)
