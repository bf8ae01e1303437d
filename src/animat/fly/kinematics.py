"""Wing kinematics: hinge rotations, the rate-limited wing servo, element positions and velocities.

The right wing's frame is ``R_w = R_z(sweep) · R_y(−flap) · R_x(feather)`` about its hinge; the left
wing is the mirror image of a right wing (reflection ``x → −x`` of the body frame), so equal angles
on both wings give a left–right symmetric stroke.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from animat.fly.model import FlyParams, wing_elements
from animat.rotations import mat_vec

MIRROR = np.diag([-1.0, 1.0, 1.0]).astype(np.float32)  # body-frame reflection for the left wing


def _trig(angles):
    """cos and sin of (flap, feather, sweep) ``(..., 3)``."""
    return jnp.cos(angles), jnp.sin(angles)


def wing_rotation(angles):
    """Rotation ``(..., 3, 3)`` wing frame -> body frame for ``angles (..., 3)`` = (flap, feather, sweep):
    ``R_z(sweep) · R_y(−flap) · R_x(feather)``, multiplied out in closed form (elementwise, so fast)."""
    c, s = _trig(angles)
    cy, sy = c[..., 0], -s[..., 0]  # R_y(−flap)
    cx, sx = c[..., 1], s[..., 1]
    cz, sz = c[..., 2], s[..., 2]
    col0 = jnp.stack([cz * cy, sz * cy, -sy], -1)
    col1 = jnp.stack([-sz * cx + cz * sy * sx, cz * cx + sz * sy * sx, cy * sx], -1)
    col2 = jnp.stack([sz * sx + cz * sy * cx, -cz * sx + sz * sy * cx, cy * cx], -1)
    return jnp.stack([col0, col1, col2], -1)


def wing_angular_velocity(angles, rates):
    """Body-frame angular velocity ``(..., 3)`` rad/s of a right wing moving at ``rates (..., 3)`` rad/s.

    Exact for the composition R_z(s) R_y(−f) R_x(φ): ω = ṡ ẑ − ḟ R_z(s) ŷ + φ̇ R_z(s) R_y(−f) x̂.
    """
    c, s = _trig(angles)
    cy, sy = c[..., 0], -s[..., 0]
    cz, sz = c[..., 2], s[..., 2]
    df, dphi, ds = rates[..., 0], rates[..., 1], rates[..., 2]
    return jnp.stack([df * sz + dphi * cz * cy, -df * cz + dphi * sz * cy, ds - dphi * sy], -1)


def servo(params: FlyParams, angles, target):
    """Move wing angles towards ``target`` no faster than the speed limits, within the angle limits.

    ``angles, target: (..., 3)`` rad. Returns ``(rates, new_angles)``; ``rates`` is the wing's constant
    angular rate over this step (rad/s), so the motion is continuous whatever ``dt`` is.
    """
    lim = jnp.asarray(params.angle_limits, dtype=jnp.float32)
    vmax = jnp.asarray(params.speed_limits, dtype=jnp.float32)
    target = jnp.clip(target, -lim, lim)
    rates = jnp.clip((target - angles) / params.dt, -vmax, vmax)
    new = jnp.clip(angles + rates * params.dt, -lim, lim)
    return (new - angles) / params.dt, new


def wing_points_body(params: FlyParams, angles, rates):
    """Element centroids, their velocities relative to the body, and unit normals, for both wings.

    ``angles, rates: (2, 3)`` (right, left). Returns body-frame ``points (2K, 3)`` u,
    ``velocities (2K, 3)`` u/s (from the wings' own rotation, not from the body's motion) and
    ``normals (2K, 3)``; ``K = wing_elements²``.
    """
    cents, _ = wing_elements(params)
    hinge = jnp.asarray(params.hinge, dtype=jnp.float32)
    R = wing_rotation(angles)  # (2, 3, 3)
    omega = wing_angular_velocity(angles, rates)  # (2, 3)
    arm = mat_vec(R[:, None], jnp.asarray(cents)[None])  # (2, K, 3), from the hinge
    vel = jnp.cross(omega[:, None, :], arm)
    pts = hinge + arm
    nrm = jnp.broadcast_to(R[:, None, :, 2], arm.shape)
    sign = jnp.asarray(np.stack([np.ones(3), np.diag(MIRROR)]), jnp.float32)[:, None, :]  # left wing mirrored
    flip = lambda a: (sign * a).reshape(-1, 3)
    return flip(pts), flip(vel), flip(nrm)


def feathering_stroke(params: FlyParams, t, down_speed=None, up_speed=None):
    """A hand-written rowing stroke, ``t (T,)`` s -> wing angles and rates ``(T, 3)``.

    Downstroke: wing flat (feather 0), flap from +limit to −limit at ``down_speed`` (default: the
    flap speed limit). At the bottom the wing feathers to the limit, returns at ``up_speed``
    (default 40% of it: a slow, feathered upstroke pushes less air down than the fast, flat downstroke
    pushes up, since drag grows as v²), then un-feathers at the top. Continuous and within every limit.
    """
    t = np.asarray(t, dtype=np.float64)
    amp = params.angle_limits[0]
    fmax, fspeed = params.angle_limits[1], params.speed_limits[1]
    vd = params.speed_limits[0] if down_speed is None else down_speed
    vu = 0.4 * params.speed_limits[0] if up_speed is None else up_speed
    t_down, t_up, t_f = 2 * amp / vd, 2 * amp / vu, fmax / fspeed
    period = t_down + t_up + 2 * t_f
    s = np.mod(t, period)
    flap = np.empty_like(s)
    feather = np.empty_like(s)
    dflap = np.zeros_like(s)
    dfeather = np.zeros_like(s)
    a = s < t_down  # downstroke
    flap[a], feather[a], dflap[a] = amp - vd * s[a], 0.0, -vd
    b = (s >= t_down) & (s < t_down + t_f)  # feather at the bottom
    flap[b], feather[b], dfeather[b] = -amp, fspeed * (s[b] - t_down), fspeed
    c = (s >= t_down + t_f) & (s < t_down + t_f + t_up)  # upstroke, feathered
    flap[c], feather[c], dflap[c] = -amp + vu * (s[c] - t_down - t_f), fmax, vu
    d = s >= t_down + t_f + t_up  # un-feather at the top
    flap[d], feather[d], dfeather[d] = amp, fmax - fspeed * (s[d] - t_down - t_f - t_up), -fspeed
    angles = np.stack([flap, feather, np.zeros_like(s)], axis=-1)
    rates = np.stack([dflap, dfeather, np.zeros_like(s)], axis=-1)
    return angles.astype(np.float32), rates.astype(np.float32), period
