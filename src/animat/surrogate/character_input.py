"""The garment scenes' external input: the character's motion seen from its root frame (Holden et al. 2019,
section 6: the character's joint positions and velocities, and the root's motion, in the frame the cloth is
recorded in, :mod:`animat.surrogate.root_frame`).

Y (T, 105) holds the world frames of the character's 15 bodies (position m and quaternion, the root first, in
skeleton order). Per frame ``t``, with ``p_t`` the root's position, ``R_t`` its rotation and ``x_{j,t}`` body
``j``'s origin (its joint), the input is (T, 99) float32:

    [v_t, omega_t, g_t, v_t - v_{t-1}, omega_t - omega_{t-1}]   the root's motion (15, as the capsule cape's
                                                                 :func:`animat.surrogate.cape.cape_input`)
    R_t^T (x_{j,t} - p_t)          j = 1..14                    the joints' positions in the root frame (42), m
    R_t^T (x_{j,t} - x_{j,t-1})    j = 1..14                    their world velocities in the root frame (42), m/frame

The velocities are world motions seen from the root frame (not changes of the root-frame positions), so that a
limb swept along by the turning body counts as moving, as the cloth feels it. The first frame has zero velocity
and change.
"""

from __future__ import annotations

import numpy as np

from animat import quaternions as quat
from animat.surrogate.cape import cape_input
from animat.surrogate.root_frame import BODY_FIELDS

CHARACTER_INPUT_SIZE = 15 + 2 * 14 * 3


def character_input(Y: np.ndarray) -> np.ndarray:
    """Y (T, 15 * 7) body frames -> the network input (T, 99) float32 (see the module docstring)."""
    Y = np.asarray(Y, np.float64)
    frames = Y.reshape(len(Y), -1, BODY_FIELDS)
    joints, root_pos = frames[:, 1:, :3], frames[:, :1, :3]
    to_root = quat.conj(quat.normalize(frames[:, :1, 3:]))  # (T, 1, 4)
    local = quat.rotate(to_root, joints - root_pos)
    moved = np.concatenate([np.zeros_like(joints[:1]), np.diff(joints, axis=0)])
    velocity = quat.rotate(to_root, moved)
    flat = [a.reshape(len(Y), -1) for a in (local, velocity)]
    return np.concatenate([cape_input(Y[:, :BODY_FIELDS]), *flat], axis=-1).astype(np.float32)
