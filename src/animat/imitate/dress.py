"""The simulated character wearing a garment live (``animat imitate play --garment``): after each control step the
garment (:class:`animat.character.wear.Garment`, for example a learned cape of ``animat surrogate``) reads the
character's body frames and steps.

The character steps at the control rate (30 Hz), a garment at its own (the learned garments: 60 frames/s), a whole
multiple of it: the body frames between two control steps are interpolated (positions linearly, rotations by
slerp), a motion of at most a few millimetres from the simulated one over 1/60 s. Before the first step the garment
settles for its warm-up on the character held in its first pose.
"""

from __future__ import annotations

import numpy as np

from animat import quaternions as quat
from animat.character.bones import body_frames, body_ids
from animat.character.model import CONTROL_HZ
from animat.character.wear import Garment
from animat.errors import ConfigError


def frames_between(a: np.ndarray, b: np.ndarray, u: float) -> np.ndarray:
    """Body frames ``(B · 7,)`` a fraction ``u`` (0..1) of the way from ``a`` to ``b``: positions linear, rotations
    by slerp (the shorter way)."""
    a, b = np.asarray(a, np.float64).reshape(-1, 7), np.asarray(b, np.float64).reshape(-1, 7)
    pos = (1.0 - u) * a[:, :3] + u * b[:, :3]
    return np.concatenate([pos, quat.slerp(a[:, 3:], b[:, 3:], u)], axis=1).ravel().astype(np.float32)


class Dresser:
    """Steps ``garment`` beside a character simulated in MuJoCo (``model``, ``data``); ``vertices``: the garment's
    world vertices (V, 3) m now; ``frames``: how many garment frames it has stepped (after the warm-up)."""

    def __init__(self, garment: Garment, model, data):
        ratio = float(garment.fps) / CONTROL_HZ
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise ConfigError(
                f"--garment: it steps at {garment.fps:g} frames/s, not a whole multiple of the "
                f"{CONTROL_HZ:g} Hz control"
            )
        self.garment, self.data, self.per_step = garment, data, int(round(ratio))
        self.bodies = body_ids(model)
        self.last = body_frames(data, self.bodies)
        self.vertices = garment.start(self.last)
        for _ in range(int(garment.warmup_frames)):
            self.vertices = garment.step(self.last)
        self.frames = 0

    def after_step(self) -> np.ndarray:
        """Step the garment to the character's new state (its kinematics current); its world vertices (V, 3) m."""
        now = body_frames(self.data, self.bodies)
        for k in range(1, self.per_step + 1):
            self.vertices = self.garment.step(frames_between(self.last, now, k / self.per_step))
        self.last, self.frames = now, self.frames + self.per_step
        return self.vertices
