"""Kinematic playback of chained clips: any clip after any other, at its own speed, turned, blended.

A :class:`Playback` is a list of :class:`Segment`\\ s played one after the other. Segment ``i`` starts at
``t_i`` (the sum of the earlier ``seconds``) and plays its clip from clip time ``offset`` at ``speed`` clip
seconds per second. It is placed in the world by a yaw ``ψ_i`` about +z and a horizontal shift ``d_i`` chosen
so that, at ``t_i``, its root stands where the previous segment's root stands (x, y; the clip keeps its own
height) and faces the previous heading turned by ``turn`` rad: with ``h(q)`` the heading of a root rotation
(:func:`animat.quaternions.heading`, the yaw of its x axis),

    ψ_i = h(prev root at t_i) − h(clip root at offset) + turn,
    d_i = p_prev(t_i) − R_z(ψ_i) p_clip(offset)  (x, y).

A placed pose: root position ``R_z(ψ) p + d``, root rotation ``q_z(ψ) ⊗ q``, joints unchanged; world root
velocity ``speed · R_z(ψ) v``; angular velocities (body and child frames) ``speed · ω``.

Blending (Kovar and Gleicher's linear blends, in the manner of DeepMimic's clip transitions): over the first
``blend`` seconds of a segment its placed pose is mixed with the previous segment's, continued past its end (a
looping clip goes on, a one-shot clip holds its last pose), with the weight ``w = 3s² − 2s³`` of ``s`` the
fraction of the blend elapsed. Positions mix linearly, rotations by slerp (root and joints); velocities are
the derivative of the root's mixed position (exact) and, for rotations, the mixed angular velocities plus
``ẇ`` times the rotation vector from the previous rotation to the new one (exact for joints that do not move
during the blend, first order in their difference otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat import quaternions as quat
from animat.character.clip import Clip, MotionState
from animat.config import require
from animat.errors import ConfigError

Z = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class Segment:
    """``clip`` played for ``seconds`` s from clip time ``offset`` s at ``speed`` (clip s per s), turned by
    ``turn`` rad (about +z, counter-clockwise seen from above) from the previous segment's heading."""

    clip: Clip
    seconds: float
    speed: float = 1.0
    turn: float = 0.0
    offset: float = 0.0


@dataclass(frozen=True)
class _Placed:
    segment: Segment
    start: float  # s, when it starts
    yaw: float  # rad, ψ
    shift: np.ndarray  # (3,) m, d (z = 0)


def heading_angle(q: np.ndarray) -> float:
    return float(quat.angle_about(quat.heading(q), Z))


def place_state(state: MotionState, yaw: float, shift: np.ndarray, speed: float) -> MotionState:
    """``state`` turned by ``yaw`` about +z, shifted by ``shift`` and played at ``speed`` (see the module docstring)."""
    qz = quat.about_axis(Z, yaw)
    return MotionState(
        root_pos=quat.rotate(qz, state.root_pos) + shift,
        root_quat=quat.normalize(quat.mul(qz, state.root_quat)),
        joint_quats=state.joint_quats,
        root_vel=speed * quat.rotate(qz, state.root_vel),
        root_angvel=speed * state.root_angvel,
        joint_angvel=speed * state.joint_angvel,
    )


def mix_states(a: MotionState, b: MotionState, w: float, w_rate: float) -> MotionState:
    """``a`` blended into ``b`` by weight ``w`` (0: a, 1: b) changing at ``w_rate`` per s."""
    qa = np.concatenate([a.root_quat[None], a.joint_quats])  # (13, 4)
    qb = np.concatenate([b.root_quat[None], b.joint_quats])
    qb = np.where((qa * qb).sum(-1, keepdims=True) < 0.0, -qb, qb)  # the short way round
    q = quat.normalize(quat.slerp(qa, qb, w))
    diff = quat.log(quat.mul(quat.conj(qa), qb))  # (13, 3) rad, from a to b in a's child frames
    omega_a = np.concatenate([a.root_angvel[None], a.joint_angvel])
    omega_b = np.concatenate([b.root_angvel[None], b.joint_angvel])
    omega = (1.0 - w) * omega_a + w * omega_b + w_rate * diff
    return MotionState(
        root_pos=(1.0 - w) * a.root_pos + w * b.root_pos,
        root_quat=q[0],
        joint_quats=q[1:],
        root_vel=(1.0 - w) * a.root_vel + w * b.root_vel + w_rate * (b.root_pos - a.root_pos),
        root_angvel=omega[0],
        joint_angvel=omega[1:],
    )


def blend_weight(into: float, blend: float) -> tuple[float, float]:
    """``(w, ẇ per s)``: the blend weight ``w = 3s² − 2s³`` at ``into`` s of a ``blend`` s blend (s = into / blend,
    clamped to [0, 1]) and its rate."""
    s = min(max(float(into), 0.0) / blend, 1.0)
    return 3 * s**2 - 2 * s**3, (6 * s - 6 * s**2) / blend


class Playback:
    """``segments`` played one after the other from t = 0, each blended in over ``blend`` s (0: cut)."""

    def __init__(self, segments: list[Segment], blend: float = 0.2):
        if not segments:
            raise ConfigError("a playback needs at least one segment")
        for i, seg in enumerate(segments):
            require(f"segment {i} seconds", seg.seconds, gt=0)
            require(f"segment {i} speed", seg.speed, gt=0)
            require(f"segment {i} turn (rad)", seg.turn, ge=-2 * np.pi, le=2 * np.pi)
            require(f"segment {i} offset (s)", seg.offset, ge=0)
        require("blend (s)", blend, ge=0, le=min(s.seconds for s in segments))
        self.blend = float(blend)
        first = segments[0]
        self._placed = [_Placed(first, 0.0, 0.0, np.zeros(3))]
        for seg in segments[1:]:
            prev = self._placed[-1]
            start = prev.start + prev.segment.seconds
            end_state = self._state(prev, start)
            clip_start = seg.clip.sample(seg.offset)
            yaw = heading_angle(end_state.root_quat) - heading_angle(clip_start.root_quat) + seg.turn
            shift = end_state.root_pos - quat.rotate(quat.about_axis(Z, yaw), clip_start.root_pos)
            self._placed.append(_Placed(seg, start, yaw, shift * [1.0, 1.0, 0.0]))

    @property
    def seconds(self) -> float:
        """The whole playback's length, s."""
        last = self._placed[-1]
        return last.start + last.segment.seconds

    def _state(self, placed: _Placed, t: float) -> MotionState:
        seg = placed.segment
        return place_state(
            seg.clip.sample(seg.offset + seg.speed * (t - placed.start)), placed.yaw, placed.shift, seg.speed
        )

    def segment_at(self, t: float) -> int:
        """Index of the segment playing at ``t`` s (the last one past the end)."""
        starts = [p.start for p in self._placed]
        return max(0, int(np.searchsorted(starts, float(t), side="right")) - 1)

    def sample(self, t: float) -> MotionState:
        """Pose and velocities at ``t`` s (held past the end as each clip holds or loops)."""
        i = self.segment_at(t)
        placed = self._placed[i]
        state = self._state(placed, t)
        into = float(t) - placed.start
        if i == 0 or self.blend == 0.0 or into >= self.blend:
            return state
        w, w_rate = blend_weight(into, self.blend)
        return mix_states(self._state(self._placed[i - 1], t), state, w, w_rate)


def random_segments(
    clips: dict[str, Clip],
    seconds: float,
    rng: np.random.Generator,
    *,
    segment_seconds=(2.0, 5.0),
    speeds=(0.8, 1.2),
    max_turn_deg: float = 90.0,
    blend: float = 0.2,
) -> tuple[list[Segment], list[str]]:
    """Segments of at least ``seconds`` s in all chaining clips drawn uniformly from ``clips`` (name -> clip), each
    for a uniform ``segment_seconds`` s (a one-shot clip at most its own length at its speed, and at least the
    blend), at a uniform speed in ``speeds``, turned by a uniform angle within ± ``max_turn_deg`` (the first one
    not turned); returns them and the names played."""
    require("seconds", seconds, gt=0)
    if not clips:
        raise ConfigError("random_playback needs at least one clip")
    names, segments, total = sorted(clips), [], 0.0
    played = []
    while total < seconds:
        name = names[int(rng.integers(len(names)))]
        clip, speed = clips[name], float(rng.uniform(*speeds))
        length = float(rng.uniform(*segment_seconds))
        if clip.loop != "wrap":
            length = max(min(length, clip.cycle_seconds / speed), blend + 1e-3)
        turn = float(np.deg2rad(rng.uniform(-max_turn_deg, max_turn_deg))) if segments else 0.0
        segments.append(Segment(clip, length, speed, turn))
        played.append(name)
        total += length
    return segments, played


def random_playback(
    clips: dict[str, Clip],
    seconds: float,
    rng: np.random.Generator,
    *,
    segment_seconds=(2.0, 5.0),
    speeds=(0.8, 1.2),
    max_turn_deg: float = 90.0,
    blend: float = 0.2,
) -> tuple[Playback, list[str]]:
    """A playback of :func:`random_segments` (the same arguments) blended over ``blend`` s (at most the shortest
    segment); returns it and the names played."""
    segments, played = random_segments(
        clips, seconds, rng, segment_seconds=segment_seconds, speeds=speeds, max_turn_deg=max_turn_deg, blend=blend
    )
    return Playback(segments, blend=min(blend, min(s.seconds for s in segments))), played
