"""How well a flight followed its commands: issue 21's steering score, per command segment (pure NumPy).

A trajectory is sampled every ``dt`` s after each control tick: sample ``i`` at time ``t[i]`` is the
state reached under ``command[i]``. A *segment* is a maximal run of samples with the same command name
and the same ``command_direction`` (a new command, or the same one given again at another heading).
It begins when its command was given: at the sample before its first (the start for the first
segment), whose position is where a hover began.

Direction commands are scored after a hand-over of :data:`HAND_OVER_S` on the mean velocity of each
whole :data:`WINDOW_S` window that follows (a shorter remainder at the segment's end is left out):
``direction_ok_fraction`` is the fraction of windows whose mean velocity is within
:data:`MAX_ANGLE_DEG` of the commanded direction, ``mean_speed_along`` the mean over those windows of
the velocity's component along it (u/s). A hover is scored by ``max_hover_distance_body_lengths``,
the largest distance from where it began over the whole segment, hand-over included. A segment
passes (``ok``) at ≥ :data:`MIN_OK_FRACTION` of windows, ≥ :data:`MIN_SPEED_FRACTION` of the target
speed and, for a hover, ≤ :data:`MAX_HOVER_BODY_LENGTHS`, without a crash; a direction segment too
short for one window is not scored (``ok`` None). ``fell``: the height went more than
:data:`FALL_BODY_LENGTHS` below where the command asked it to be (the start height, or for ``down``
the commanded descent at the target speed).
"""

from __future__ import annotations

import math

import numpy as np

from animat.errors import ConfigError

HAND_OVER_S = 0.5  # s after a command starts before it is scored
WINDOW_S = 0.5  # s of mean velocity per scored window
MAX_ANGLE_DEG = 30.0  # a window is on course when its mean velocity is this close to the commanded direction
MIN_OK_FRACTION = 0.8  # of a segment's windows that must be on course
MIN_SPEED_FRACTION = 0.5  # of the target speed that the mean speed along the direction must reach
MAX_HOVER_BODY_LENGTHS = 2.0  # a hover's largest distance from where it began
FALL_BODY_LENGTHS = 2.0  # below the commanded height: a fall
HEADLINE = (
    "all_ok",
    "segments_ok",
    "segments_scored",
    "min_direction_ok_fraction",
    "max_hover_distance_body_lengths",
    "crashed",
    "fell",
)  # the figures of :func:`steer_score` that a run's summary shows first


def segment_bounds(command: np.ndarray, command_direction: np.ndarray) -> list[tuple[int, int]]:
    """``[(first, end), ...]`` sample ranges of the segments of ``command (T,)`` names and
    ``command_direction (T, 3)`` (see the module's docstring)."""
    command = np.asarray(command).astype(str)
    d = np.asarray(command_direction, float)
    if len(command) == 0:
        return []
    change = (command[1:] != command[:-1]) | (np.abs(d[1:] - d[:-1]).max(axis=1) > 1e-9)
    edges = [0, *(np.flatnonzero(change) + 1).tolist(), len(command)]
    return list(zip(edges[:-1], edges[1:]))


def sample_interval(t: np.ndarray) -> float:
    """The (uniform) time between samples ``t (T,)`` s; ConfigError for fewer than 2 samples or uneven steps."""
    t = np.asarray(t, float)
    if t.ndim != 1 or len(t) < 2:
        raise ConfigError(f"a steering score needs at least 2 samples in time, got {t.shape}")
    steps = np.diff(t)
    dt = float(np.median(steps))
    if not (dt > 0 and np.allclose(steps, dt, rtol=1e-3, atol=1e-6)):
        raise ConfigError("a steering score needs samples evenly spaced in time")
    return dt


def score_segment(
    t: np.ndarray,
    position: np.ndarray,
    velocity: np.ndarray,
    name: str,
    direction: np.ndarray,
    crashed: np.ndarray,
    anchor: np.ndarray,
    *,
    speed: float,
    body_length: float,
    dt: float,
) -> dict:
    """The score of one segment's samples: ``t (n,)`` s, ``position (n, 3)`` u, ``velocity (n, 3)`` u/s,
    ``crashed (n,)``, its command ``name`` and world-frame unit ``direction (3,)`` (zeros for hover),
    ``anchor (3,)`` u: the position when the command was given; target ``speed`` u/s."""
    n = len(t)
    hand_over, window = int(round(HAND_OVER_S / dt)), int(round(WINDOW_S / dt))
    windows = max(0, (n - hand_over) // window)
    d = np.asarray(direction, float)
    ok_fraction = speed_along = hover_distance = None
    if name == "hover":
        hover_distance = float(np.linalg.norm(position - anchor, axis=1).max() / body_length)
        passed = hover_distance <= MAX_HOVER_BODY_LENGTHS
    elif windows:
        means = velocity[hand_over : hand_over + windows * window].reshape(windows, window, 3).mean(axis=1)
        along = means @ d
        ok = along >= math.cos(math.radians(MAX_ANGLE_DEG)) * np.linalg.norm(means, axis=1)
        ok &= along > 0  # a window at rest is not on course
        ok_fraction, speed_along = float(ok.mean()), float(along.mean())
        passed = ok_fraction >= MIN_OK_FRACTION and speed_along >= MIN_SPEED_FRACTION * speed
    else:
        passed = None
    elapsed = t - (t[0] - dt)
    floor = anchor[2] + speed * min(float(d[2]), 0.0) * elapsed - FALL_BODY_LENGTHS * body_length
    crash = bool(np.asarray(crashed).any())
    return {
        "command": name,
        "direction": d.tolist(),
        "start_s": float(t[0] - dt),
        "end_s": float(t[-1]),
        "windows": int(windows),
        "direction_ok_fraction": ok_fraction,
        "mean_speed_along": speed_along,
        "max_hover_distance_body_lengths": hover_distance,
        "crashed": crash,
        "fell": bool((position[:, 2] < floor).any()),
        "ok": None if passed is None else bool(passed and not crash),
    }


def steer_score(
    t, position, velocity, command, command_direction, crashed=None, *, speed: float, body_length: float, start=None
) -> dict:
    """Issue 21's steering score of one flight: ``t (T,)`` s, ``position (T, 3)`` u, ``velocity (T, 3)``
    u/s, ``command (T,)`` names, ``command_direction (T, 3)`` world-frame unit vectors (zeros for hover),
    ``crashed (T,)`` (default none), target ``speed`` u/s, ``body_length`` u, ``start (3,)`` u: the
    position before the first sample (default ``position[0]``).

    Returns ``{"segments": [per-segment dicts, see :func:`score_segment`], "all_ok", "segments_ok",
    "segments_scored", ...}``: ``all_ok`` when at least one segment is scored and none fails."""
    t = np.asarray(t, float)
    position, velocity = np.asarray(position, float), np.asarray(velocity, float)
    command_direction = np.asarray(command_direction, float)
    crashed = np.zeros(len(t), bool) if crashed is None else np.asarray(crashed, bool)
    if not (
        position.shape == velocity.shape == command_direction.shape == (len(t), 3)
        and len(command) == len(crashed) == len(t)
    ):
        raise ConfigError(
            "a steering score needs t (T,), position, velocity and command_direction (T, 3), command and crashed (T,)"
        )
    if not (speed > 0 and body_length > 0):
        raise ConfigError(f"a steering score needs a target speed and a body length > 0, got {speed} and {body_length}")
    dt = sample_interval(t)
    names = np.asarray(command).astype(str)
    segments = []
    for a, b in segment_bounds(names, command_direction):
        anchor = position[a - 1] if a > 0 else (position[0] if start is None else np.asarray(start, float).reshape(3))
        seg = score_segment(
            t[a:b],
            position[a:b],
            velocity[a:b],
            str(names[a]),
            command_direction[a],
            crashed[a:b],
            anchor,
            speed=speed,
            body_length=body_length,
            dt=dt,
        )
        segments.append({"index": len(segments), **seg})
    verdicts = [s["ok"] for s in segments if s["ok"] is not None]
    fractions = [s["direction_ok_fraction"] for s in segments if s["direction_ok_fraction"] is not None]
    hovers = [
        s["max_hover_distance_body_lengths"] for s in segments if s["max_hover_distance_body_lengths"] is not None
    ]
    return {
        "all_ok": bool(verdicts) and all(verdicts),
        "segments_ok": int(sum(verdicts)),
        "segments_scored": len(verdicts),
        "min_direction_ok_fraction": min(fractions) if fractions else None,
        "max_hover_distance_body_lengths": max(hovers) if hovers else None,
        "crashed": bool(crashed.any()),
        "fell": any(s["fell"] for s in segments),
        "target_speed": float(speed),
        "body_length": float(body_length),
        "hand_over_s": HAND_OVER_S,
        "window_s": WINDOW_S,
        "segments": segments,
    }
