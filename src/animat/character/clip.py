"""DeepMimic motion clips: read, validate, write, and sample pose and velocities at any time.

File format (DeepMimic's ``data/motions/*.txt``): JSON ``{"Loop": "wrap" | "none", "Frames": [...]}``;
each frame is 44 numbers for the humanoid3d skeleton::

    duration (s, time to the next frame; the last frame's is ignored)
    root position x y z (m)            root rotation w x y z (world)
    then per joint, in JOINT_NAMES order: a quaternion w x y z (spherical joints, relative to the
    parent) or an angle in rad (revolute joints: knees and elbows, about the joint's z axis)

Axes. DeepMimic is Y-up: x forward (the walk goes along +x), y up, z to the character's right
(the right hip sits at z = +0.085 m). animat is Z-up, x forward, y left. The mapping is the
proper rotation R = +90° about x (det R = +1)::

    x_zup =  x_dm          x_dm =  x_zup
    y_zup = -z_dm          y_dm =  z_zup
    z_zup =  y_dm          z_dm = -y_zup

Positions map as ``p_zup = R p_dm``. Every body frame is mapped the same way, so every rotation
(world root rotation and joint-local rotations alike) maps by conjugation, ``Q_zup = R Q_dm Rᵀ``,
which for a quaternion keeps w and rotates the vector part: (w, x, y, z)_dm → (w, x, −z, y).
A revolute joint's axis z_dm becomes (0, −1, 0); its angle keeps its value and sign.

Sampling. Rotations are slerped between frames and positions interpolated linearly; velocities are
the exact rates of that interpolation on the segment holding ``t`` (right-continuous at frames):
root linear velocity in the world frame (m/s), angular velocities (rad/s) in each joint's own
(child) frame, the root's in the root body frame — MuJoCo's free- and ball-joint conventions.
A ``wrap`` clip repeats; each cycle advances the root by the horizontal (x, y) displacement from
the first to the last frame, as DeepMimic does (heading is not rotated). A ``none`` clip holds its
end poses, with zero velocity, outside [0, cycle].
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from animat import quaternions as quat
from animat.config import is_finite_number
from animat.errors import AnimatError, ConfigError

JOINT_NAMES = (
    "chest",
    "neck",
    "right_hip",
    "right_knee",
    "right_ankle",
    "right_shoulder",
    "right_elbow",
    "left_hip",
    "left_knee",
    "left_ankle",
    "left_shoulder",
    "left_elbow",
)
REVOLUTE = frozenset({"right_knee", "right_elbow", "left_knee", "left_elbow"})
NUM_JOINTS = len(JOINT_NAMES)
HINGE_AXIS = np.array([0.0, -1.0, 0.0])  # DeepMimic's revolute axis z_dm in Z-up coordinates
LOOP_MODES = ("wrap", "none")

R_DM_TO_ZUP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def _fields() -> list[tuple[str, int, int]]:
    """(name, first index, count) of each field of a frame."""
    out = [("duration", 0, 1), ("root position", 1, 3), ("root rotation", 4, 4)]
    i = 8
    for name in JOINT_NAMES:
        n = 1 if name in REVOLUTE else 4
        out.append((name.replace("_", " ") + (" angle" if n == 1 else " rotation"), i, n))
        i += n
    return out


FIELDS = _fields()
FRAME_SIZE = FIELDS[-1][1] + FIELDS[-1][2]  # 44


class ClipError(AnimatError):
    """A motion clip file is malformed, or made for another skeleton."""


def vec_dm_to_zup(v: np.ndarray) -> np.ndarray:
    """DeepMimic Y-up vectors ``(..., 3)`` to Z-up."""
    v = np.asarray(v, dtype=np.float64)
    return np.stack([v[..., 0], -v[..., 2], v[..., 1]], axis=-1)


def vec_zup_to_dm(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return np.stack([v[..., 0], v[..., 2], -v[..., 1]], axis=-1)


def quat_dm_to_zup(q: np.ndarray) -> np.ndarray:
    """Conjugate DeepMimic rotations ``(..., 4)`` (w, x, y, z) by R: (w, x, −z, y)."""
    q = np.asarray(q, dtype=np.float64)
    return np.stack([q[..., 0], q[..., 1], -q[..., 3], q[..., 2]], axis=-1)


def quat_zup_to_dm(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return np.stack([q[..., 0], q[..., 1], q[..., 3], -q[..., 2]], axis=-1)


@dataclass(frozen=True)
class MotionState:
    """A character's pose and velocities, Z-up, joints in ``JOINT_NAMES`` order.

    root_pos: (3,) m, world.            root_quat: (4,) w x y z, world.
    joint_quats: (12, 4) local to the parent; revolute joints as rotations about ``HINGE_AXIS``.
    root_vel: (3,) m/s, world.          root_angvel: (3,) rad/s in the root body frame.
    joint_angvel: (12, 3) rad/s in each joint's child frame (along ``HINGE_AXIS`` for revolutes).
    """

    root_pos: np.ndarray
    root_quat: np.ndarray
    joint_quats: np.ndarray
    root_vel: np.ndarray
    root_angvel: np.ndarray
    joint_angvel: np.ndarray


@dataclass(frozen=True)
class Clip:
    """A validated motion clip in Z-up coordinates.

    times: (N,) s, knot times from 0.   root_pos: (N, 3) m.   root_quat: (N, 4) world.
    joint_quats: (N, 12, 4) local, unit, hemisphere-continuous from frame to frame.
    """

    loop: str
    times: np.ndarray
    root_pos: np.ndarray
    root_quat: np.ndarray
    joint_quats: np.ndarray

    @property
    def num_frames(self) -> int:
        return int(self.times.shape[0])

    @property
    def cycle_seconds(self) -> float:
        return float(self.times[-1])

    @property
    def root_advance(self) -> np.ndarray:
        """(3,) m: horizontal root displacement per cycle (z = 0); zero for a non-looping clip."""
        if self.loop != "wrap":
            return np.zeros(3)
        d = self.root_pos[-1] - self.root_pos[0]
        return np.array([d[0], d[1], 0.0])

    @cached_property
    def segment_rates(self) -> np.ndarray:
        """(N - 1, 13, 3) rad per segment: the rotation vector (child frame) from knot k to k + 1 of the root
        then each joint, ``log(q_k⁻¹ ⊗ q_{k+1})``; computed once, as every sample needs its segment's."""
        q = np.concatenate([self.root_quat[:, None], self.joint_quats], axis=1)  # (N, 13, 4)
        return quat.log(quat.mul(quat.conj(q[:-1]), q[1:]))

    def _segment(self, tau: float) -> tuple[int, float, float]:
        k = int(np.searchsorted(self.times, tau, side="right")) - 1
        k = min(max(k, 0), self.num_frames - 2)
        dt = float(self.times[k + 1] - self.times[k])
        return k, min(max((tau - float(self.times[k])) / dt, 0.0), 1.0), dt

    def sample(self, t: float) -> MotionState:
        """Pose and velocities at time ``t`` (s); see the module docstring for the conventions."""
        T = self.cycle_seconds
        t = float(t)
        cycles, still = 0, False
        if self.loop == "wrap":
            cycles = math.floor(t / T)
            tau = t - cycles * T
            if tau >= T:  # rounding at the cycle boundary
                cycles, tau = cycles + 1, 0.0
        else:
            still = t < 0.0 or t > T
            tau = min(max(t, 0.0), T)
        k, u, dt = self._segment(tau)
        p0, p1 = self.root_pos[k], self.root_pos[k + 1]
        q0 = np.concatenate([self.root_quat[k : k + 1], self.joint_quats[k]], axis=0)  # (13, 4)
        rates = self.segment_rates[k]  # (13, 3) rad per segment, child frame
        q = quat.mul(q0, quat.exp(rates * u))
        q = quat.normalize(q)
        vel = (p1 - p0) / dt
        angvel = rates / dt
        if still:
            vel, angvel = np.zeros(3), np.zeros_like(angvel)
        return MotionState(
            root_pos=p0 + u * (p1 - p0) + cycles * self.root_advance,
            root_quat=q[0],
            joint_quats=q[1:],
            root_vel=vel,
            root_angvel=angvel[0],
            joint_angvel=angvel[1:],
        )

    def sample_batch(self, t: np.ndarray) -> MotionState:
        """:meth:`sample` at each of the times ``t (N,)`` s at once: a MotionState whose arrays have a
        leading axis N (root_pos (N, 3), joint_quats (N, 12, 4), ...), the same numbers as N calls."""
        t = np.asarray(t, dtype=np.float64)
        T = self.cycle_seconds
        if self.loop == "wrap":
            cycles = np.floor(t / T)
            tau = t - cycles * T
            edge = tau >= T  # rounding at the cycle boundary
            cycles, tau = np.where(edge, cycles + 1, cycles), np.where(edge, 0.0, tau)
            still = np.zeros(t.shape, bool)
        else:
            cycles, still, tau = np.zeros(t.shape), (t < 0.0) | (t > T), np.clip(t, 0.0, T)
        k = np.clip(np.searchsorted(self.times, tau, side="right") - 1, 0, self.num_frames - 2)
        dt = self.times[k + 1] - self.times[k]
        u = np.clip((tau - self.times[k]) / dt, 0.0, 1.0)
        p0, p1 = self.root_pos[k], self.root_pos[k + 1]
        q0 = np.concatenate([self.root_quat[k][:, None], self.joint_quats[k]], axis=1)  # (N, 13, 4)
        rates = self.segment_rates[k]  # (N, 13, 3) rad per segment, child frame
        q = quat.normalize(quat.mul(q0, quat.exp(rates * u[:, None, None])))
        vel = np.where(still[:, None], 0.0, (p1 - p0) / dt[:, None])
        angvel = np.where(still[:, None, None], 0.0, rates / dt[:, None, None])
        return MotionState(
            root_pos=p0 + u[:, None] * (p1 - p0) + cycles[:, None] * self.root_advance,
            root_quat=q[:, 0],
            joint_quats=q[:, 1:],
            root_vel=vel,
            root_angvel=angvel[:, 0],
            joint_angvel=angvel[:, 1:],
        )


# --------------------------------------------------------------------------------------------
# reading and writing


def _field_at(i: int) -> tuple[str, int]:
    for name, start, n in FIELDS:
        if start <= i < start + n:
            return name, i - start
    raise IndexError(i)


def parse_clip(obj: object, source: str = "<clip>") -> Clip:
    """Validate a decoded DeepMimic clip and convert it to Z-up. Raises :class:`ClipError`."""
    if not isinstance(obj, dict):
        raise ClipError(f"{source}: expected a JSON object with 'Loop' and 'Frames', got {type(obj).__name__}")
    loop = obj.get("Loop", "none")
    if loop not in LOOP_MODES:
        raise ClipError(f"{source}: field 'Loop' must be one of {list(LOOP_MODES)}, got {loop!r}")
    frames = obj.get("Frames")
    if not isinstance(frames, list):
        raise ClipError(f"{source}: field 'Frames' must be a list of frames, got {type(frames).__name__}")
    if len(frames) < 2:
        raise ClipError(f"{source}: field 'Frames' holds {len(frames)} frame(s); a clip needs at least 2")
    data = np.empty((len(frames), FRAME_SIZE))
    for f, frame in enumerate(frames):
        if not isinstance(frame, list):
            raise ClipError(f"{source}: frame {f}: expected a list of {FRAME_SIZE} numbers, got {type(frame).__name__}")
        if len(frame) != FRAME_SIZE:
            raise ClipError(
                f"{source}: frame {f}: expected {FRAME_SIZE} values (duration, root position 3, root rotation 4, "
                f"then the humanoid3d joints: 8 spherical × 4 + 4 revolute × 1), got {len(frame)}; "
                f"is it a clip for another skeleton?"
            )
        for i, v in enumerate(frame):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                name, j = _field_at(i)
                raise ClipError(
                    f"{source}: frame {f}, field '{name}' (value {i}, component {j}): expected a number, got {v!r}"
                )
            if not is_finite_number(v):
                name, j = _field_at(i)
                raise ClipError(f"{source}: frame {f}, field '{name}' (value {i}, component {j}): not finite ({v})")
        data[f] = frame
    durations = data[:-1, 0]
    for f, d in enumerate(durations):
        if not d > 0:
            raise ClipError(f"{source}: frame {f}, field 'duration': must be > 0 s (every frame but the last), got {d}")
    for name, start, n in FIELDS:
        if n == 4:
            norms = np.linalg.norm(data[:, start : start + 4], axis=1)
            bad = np.nonzero(norms < 1e-6)[0]
            if bad.size:
                raise ClipError(
                    f"{source}: frame {int(bad[0])}, field '{name}': zero quaternion; expected a rotation (w, x, y, z)"
                )
    times = np.concatenate([[0.0], np.cumsum(durations)])
    root_pos = vec_dm_to_zup(data[:, 1:4])
    root_quat = quat.normalize(quat_dm_to_zup(data[:, 4:8]))
    joints = np.empty((len(frames), NUM_JOINTS, 4))
    for j, (_name, start, n) in enumerate(FIELDS[3:]):
        if n == 4:
            joints[:, j] = quat.normalize(quat_dm_to_zup(data[:, start : start + 4]))
        else:
            joints[:, j] = quat.about_axis(HINGE_AXIS, data[:, start])
    return Clip(loop=loop, times=times, root_pos=root_pos, root_quat=root_quat, joint_quats=joints)


def load_clip(path: str | os.PathLike) -> Clip:
    """Read a DeepMimic clip file. Raises :class:`ClipError` naming the frame and field at fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClipError(f"{str(path)!r}: no such clip file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClipError(f"{str(path)!r}: cannot read the clip: {exc}") from None
    try:
        obj = json.loads(text)  # NaN / Infinity decode to floats and are caught per field
    except json.JSONDecodeError as exc:
        raise ClipError(f"{str(path)!r}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise ClipError(f"{str(path)!r}: not a clip: {exc}") from None
    return parse_clip(obj, source=repr(str(path)))


def clip_to_frames(clip: Clip) -> list[list[float]]:
    """The clip as DeepMimic frames (Y-up, 44 numbers each; the last frame's duration is 0)."""
    durations = np.append(np.diff(clip.times), 0.0)
    rows = []
    for f in range(clip.num_frames):
        row = [
            float(durations[f]),
            *vec_zup_to_dm(clip.root_pos[f]).tolist(),
            *quat_zup_to_dm(clip.root_quat[f]).tolist(),
        ]
        for j, name in enumerate(JOINT_NAMES):
            q = clip.joint_quats[f, j]
            if name in REVOLUTE:
                row.append(float(quat.angle_about(q, HINGE_AXIS)))
            else:
                row.extend(quat_zup_to_dm(q).tolist())
        rows.append(row)
    return rows


def clip_to_json(clip: Clip) -> str:
    frames = ",\n".join("[" + ", ".join(repr(float(v)) for v in row) + "]" for row in clip_to_frames(clip))
    return f'{{\n"Loop": "{clip.loop}",\n"Frames":\n[\n{frames}\n]\n}}\n'


def write_clip(clip: Clip, path: str | os.PathLike) -> Path:
    """Write ``clip`` in DeepMimic's format (atomically)."""
    from animat.runs import atomic_write_text

    return atomic_write_text(path, clip_to_json(clip))


# --------------------------------------------------------------------------------------------
# shared data


def find_shared_deepmimic(start: str | os.PathLike | None = None) -> Path | None:
    """The ``shared/data/deepmimic`` folder, or None.

    Looked for in ``$ANIMAT_SHARED_DATA`` (the ``shared/data`` folder, or the ``deepmimic`` folder
    itself), then in ``shared/data/deepmimic`` beside each folder from ``start`` (default: the
    working directory) upwards, then from this package's folder upwards.
    """
    env = os.environ.get("ANIMAT_SHARED_DATA")
    if env:
        for cand in (Path(env) / "deepmimic", Path(env)):
            if (cand / "humanoid3d_walk.txt").is_file():
                return cand
    for origin in (Path(start) if start else Path.cwd(), Path(__file__).resolve().parent):
        for folder in (origin.resolve(), *origin.resolve().parents):
            cand = folder / "shared" / "data" / "deepmimic"
            if cand.is_dir():
                return cand
    return None


def resolve_clip(text: str) -> Path:
    """A clip file path; ``shared:NAME`` means NAME in the shared DeepMimic data folder (``shared/data/deepmimic``)."""
    if str(text).startswith("shared:"):
        folder = find_shared_deepmimic()
        if folder is None:
            raise ConfigError(
                f"clip {text!r}: no shared/data/deepmimic folder found (looked in $ANIMAT_SHARED_DATA, then beside "
                f"{str(Path.cwd())!r} and the animat package and their parents; set ANIMAT_SHARED_DATA or give a "
                "clip file)"
            )
        path = folder / str(text)[len("shared:") :]
        if not path.is_file():
            raise ConfigError(f"clip file {str(text)!r} not found (looked for {str(path)!r})")
    else:
        path = Path(text)
    if not path.is_file():
        raise ConfigError(f"clip file {str(text)!r} not found")
    return path
