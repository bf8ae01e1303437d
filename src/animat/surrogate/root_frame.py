"""The character's root frame, in which the garment scenes record their cloth (Holden et al. 2019, section 6:
the cloth in the frame of the character it hangs from).

The root frame is the pelvis body's full frame (position and rotation, not only its heading): the skirt, pinned
to the pelvis, then has constant pinned vertices, and the direction of gravity in the frame, an input of the
surrogate, says how the character leans or lies. A point ``x`` (..., 3) m in the world is ``R^T (x - p)`` in the
root frame of a root at ``p`` (3,) m with rotation ``R`` (quaternion ``q``, (4,) w x y z).

A garment scene's external state Y (B * 7,) holds the world frames of the character's B = 15 bodies
(:mod:`animat.character.bones`), each its position (3,) m then its quaternion (4,); the root is the first.
"""

from __future__ import annotations

import numpy as np

from animat import quaternions as quat

BODY_FIELDS = 7  # position (3) + quaternion (4) per body in Y


def to_root(x: np.ndarray, root_pos: np.ndarray, root_quat: np.ndarray) -> np.ndarray:
    """World points ``x`` (..., 3) m -> the root frame of a root at ``root_pos`` (3,) m, ``root_quat`` (4,)."""
    q = quat.normalize(np.asarray(root_quat, np.float64))
    return quat.rotate(quat.conj(q), np.asarray(x, np.float64) - np.asarray(root_pos, np.float64))


def from_root(x: np.ndarray, root_pos: np.ndarray, root_quat: np.ndarray) -> np.ndarray:
    """Root-frame points ``x`` (..., 3) m -> the world: the inverse of :func:`to_root`."""
    q = quat.normalize(np.asarray(root_quat, np.float64))
    return quat.rotate(q, np.asarray(x, np.float64)) + np.asarray(root_pos, np.float64)


def body_frames(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A garment scene's Y (B * 7,) -> the bodies' world positions (B, 3) m and quaternions (B, 4)."""
    frames = np.asarray(y, np.float64).reshape(-1, BODY_FIELDS)
    return frames[:, :3], quat.normalize(frames[:, 3:])


def bodies_in_root(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The body frames of Y (B * 7,) in the root's frame: positions (B, 3) m, quaternions (B, 4) (the root's
    own is the origin and the identity)."""
    pos, rot = body_frames(y)
    return to_root(pos, pos[0], rot[0]), quat.mul(quat.conj(rot[0]), rot)
