"""The project's own demo clip: a keyframed walk cycle built from a few sinusoids.

Made here in code (no motion-capture data): 1 s cycle, frames every 1/30 s, 1.0 m/s along +x.
Angles are set in DeepMimic's Y-up frame — a rotation about +z_dm (the character's right) by a
positive angle swings a hanging limb forward; knees bend with negative angles, elbows positive —
and the frames go through the same reader as any file, so the demo is a valid DeepMimic clip.
"""

from __future__ import annotations

import numpy as np

from animat import quaternions as quat
from animat.character.clip import JOINT_NAMES, REVOLUTE, Clip, parse_clip

X, Y, Z = np.eye(3)


def _q(axis: np.ndarray, angle: float) -> list[float]:
    return quat.about_axis(axis, angle).tolist()


def demo_frames(cycle_seconds: float = 1.0, fps: int = 30, speed: float = 1.0) -> list[list[float]]:
    """DeepMimic frames (44 numbers each) of one walk cycle; the last frame repeats the first, moved on."""
    n = int(round(cycle_seconds * fps))
    dt = cycle_seconds / n
    frames = []
    for i in range(n + 1):
        t = i * dt
        w = 2.0 * np.pi * t / cycle_seconds  # gait phase (rad); the left side runs half a cycle behind
        root_pos = [speed * t, 0.85 + 0.015 * np.cos(2 * w), 0.02 * np.sin(w)]
        root_rot = quat.mul(quat.about_axis(Y, 0.05 * np.sin(w)), quat.about_axis(X, 0.03 * np.sin(w))).tolist()
        joint = {
            "chest": quat.mul(quat.about_axis(Y, -0.08 * np.sin(w)), quat.about_axis(Z, -0.05)).tolist(),
            "neck": _q(Y, 0.05 * np.sin(w)),
        }
        for side, shift in (("right", 0.0), ("left", np.pi)):
            s = w + shift
            joint[f"{side}_hip"] = _q(Z, 0.1 + 0.4 * np.sin(s))
            joint[f"{side}_knee"] = -(0.45 - 0.35 * np.cos(s + 0.9))
            joint[f"{side}_ankle"] = _q(Z, 0.1 * np.sin(s - 0.6))
            joint[f"{side}_shoulder"] = quat.mul(
                quat.about_axis(X, (1 if side == "left" else -1) * 0.1), quat.about_axis(Z, -0.35 * np.sin(s))
            ).tolist()
            joint[f"{side}_elbow"] = 0.4 + 0.2 * np.sin(s + np.pi)
        row = [dt if i < n else 0.0, *root_pos, *root_rot]
        for name in JOINT_NAMES:
            row.extend([float(joint[name])] if name in REVOLUTE else joint[name])
        frames.append([float(v) for v in row])
    return frames


def demo_clip() -> Clip:
    """The demo walk as a :class:`Clip` (looping, ``wrap``)."""
    return parse_clip({"Loop": "wrap", "Frames": demo_frames()}, source="demo clip")
