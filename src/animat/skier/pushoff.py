"""Push-offs of a skier's skis: when each ski pushes the body forward, which leg it is, and the ski's yaw
against the direction of travel while it pushes (a V-skate alternates legs, each ski angled outwards).

Pure NumPy functions over sampled series (frames every ``frame_dt`` s; nothing here simulates):

- the ground's force on each ski ``force (T, 2, 3)`` N in the world frame (ski 0 the left, 1 the right;
  :func:`animat.skier.rollout.trajectory`'s ``ski_forces``),
- each ski's yaw ``yaw (T, 2)`` rad (the heading of its tail-to-tip axis, :func:`ski_yaw`),
- the pelvis's horizontal path ``xy (T, 2)`` m, whose displacement over a window (one keyframe cycle by
  default in the replay) is the direction of travel (:func:`travel_heading`); where that displacement is
  slower than :data:`MIN_TRAVEL_SPEED` the skier has no direction of travel (NaN), so no push-off and no yaw.

A push-off is a stretch of at least ``min_seconds`` (gaps up to ``gap_seconds`` bridged) in which a ski
bears at least ``load_frac`` of the body's weight and the ground pushes it forward along the direction of
travel with at least ``push_frac`` of the weight: the ski pushes on the snow backwards (and, angled,
outwards), which a ski gliding along its length cannot do (its friction only brakes), so the force
comes from the edge's grip across the ski. Yaw "outwards" is positive: the left ski's tip turned left
of the direction of travel, the right ski's tip turned right.
"""

from __future__ import annotations

import numpy as np

LEGS = ("left", "right")
LOAD_FRAC = 0.25  # a pushing ski carries at least this fraction of the body's weight
PUSH_FRAC = 0.05  # ... and is pushed forward with at least this fraction of it
MIN_SECONDS = 0.1  # shortest push-off, s
GAP_SECONDS = 0.06  # shorter dips inside one push-off are bridged, s
MIN_TRAVEL_SPEED = 0.2  # m/s over the window: slower, the direction of travel is noise (a skier that hardly moves)


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles (rad) wrapped to [-pi, pi)."""
    return (np.asarray(angle, dtype=np.float64) + np.pi) % (2 * np.pi) - np.pi


def ski_yaw(tail: np.ndarray, tip: np.ndarray) -> np.ndarray:
    """Heading (rad, from +x towards +y) of the axis from ``tail (..., 3)`` to ``tip (..., 3)`` m -> (...)."""
    d = np.asarray(tip, dtype=np.float64) - np.asarray(tail, dtype=np.float64)
    return np.arctan2(d[..., 1], d[..., 0])


def travel_heading(
    xy: np.ndarray, frame_dt: float, window_seconds: float, min_speed: float = MIN_TRAVEL_SPEED
) -> np.ndarray:
    """Direction of travel (rad) at each frame of the path ``xy (T, 2)`` m: the heading of the displacement
    from ``window_seconds / 2`` before to as long after (cut at the ends of the path) -> (T,); NaN where
    that displacement is slower than ``min_speed`` m/s over its span."""
    xy = np.asarray(xy, dtype=np.float64)
    T = len(xy)
    h = max(1, int(round(window_seconds / 2 / frame_dt)))
    i = np.arange(T)
    hi, lo = np.minimum(i + h, T - 1), np.maximum(i - h, 0)
    d = xy[hi] - xy[lo]
    moving = np.linalg.norm(d, axis=1) >= min_speed * np.maximum(hi - lo, 1) * frame_dt
    return np.where(moving, np.arctan2(d[:, 1], d[:, 0]), np.nan)


def outward_yaw(yaw: np.ndarray, heading: np.ndarray) -> np.ndarray:
    """Each ski's yaw against the direction of travel, outwards positive: ``yaw (T, 2)`` rad (left, right),
    ``heading (T,)`` rad -> (T, 2) rad (left: yaw - heading; right: heading - yaw; wrapped)."""
    rel = wrap(np.asarray(yaw, dtype=np.float64) - np.asarray(heading, dtype=np.float64)[:, None])
    return rel * np.array([1.0, -1.0])


def pushing(
    force: np.ndarray, heading: np.ndarray, weight: float, load_frac: float = LOAD_FRAC, push_frac: float = PUSH_FRAC
) -> np.ndarray:
    """(T, 2) bool: frames where a ski bears ``>= load_frac * weight`` (the force's vertical part) and is
    pushed forward along ``heading (T,)`` rad with ``>= push_frac * weight`` (never where ``heading`` is NaN);
    ``force (T, 2, 3)`` N, ``weight`` N."""
    f = np.asarray(force, dtype=np.float64)
    ahead = np.stack([np.cos(heading), np.sin(heading)], axis=-1)  # (T, 2): unit vector of travel
    forward = np.einsum("tsk,tk->ts", f[..., :2], ahead)
    return (f[..., 2] >= load_frac * weight) & (forward >= push_frac * weight)


def segments(mask: np.ndarray, min_frames: int = 1, gap_frames: int = 0) -> list[tuple[int, int]]:
    """Runs of True in ``mask (T,)`` as ``(start, stop)`` frame indices (stop exclusive): runs separated by
    at most ``gap_frames`` False frames joined, then runs shorter than ``min_frames`` dropped."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    edges = np.flatnonzero(np.diff(m.astype(np.int8)))
    runs: list[list[int]] = []
    for a, b in zip(edges[::2], edges[1::2]):
        if runs and a - runs[-1][1] <= gap_frames:
            runs[-1][1] = int(b)
        else:
            runs.append([int(a), int(b)])
    return [(a, b) for a, b in runs if b - a >= min_frames]


def pushoffs(
    t: np.ndarray,
    force: np.ndarray,
    yaw: np.ndarray,
    xy: np.ndarray,
    weight: float,
    window_seconds: float,
    *,
    load_frac: float = LOAD_FRAC,
    push_frac: float = PUSH_FRAC,
    min_seconds: float = MIN_SECONDS,
    gap_seconds: float = GAP_SECONDS,
) -> list[dict]:
    """The push-offs of a run sampled at times ``t (T,)`` s (evenly, ``t[1] - t[0]`` apart), in order of their
    start: each ``{"leg", "start_s", "end_s", "yaw_deg"}`` (times of its first and last frame, rounded to 1 µs) with
    ``yaw_deg`` the pushing ski's mean outward yaw against the direction of travel over its frames (degrees).
    ``force (T, 2, 3)`` N, ``yaw (T, 2)`` rad, ``xy (T, 2)`` m, ``weight`` N, ``window_seconds``: see
    :func:`travel_heading` (no push-off where the skier has no direction of travel)."""
    t = np.asarray(t, dtype=np.float64)
    dt = float(t[1] - t[0])
    heading = travel_heading(xy, dt, window_seconds)
    out_yaw = np.degrees(outward_yaw(yaw, heading))
    push = pushing(force, heading, weight, load_frac, push_frac)
    found = []
    for s, leg in enumerate(LEGS):
        for a, b in segments(push[:, s], max(1, int(round(min_seconds / dt))), int(round(gap_seconds / dt))):
            found.append(
                {
                    "leg": leg,
                    "start_s": round(float(t[a]), 6),
                    "end_s": round(float(t[b - 1]), 6),
                    "yaw_deg": float(out_yaw[a:b, s].mean()),
                }
            )
    return sorted(found, key=lambda p: (p["start_s"], p["leg"]))


def legs_alternate(found: list[dict]) -> bool:
    """True when there are at least two push-offs (in order of their start), each by the other leg than the one
    before, and each starting after the middle of the one before (pushing with both at once is no alternation)."""
    return len(found) >= 2 and all(follows(a, b) for a, b in zip(found, found[1:]))


def follows(a: dict, b: dict) -> bool:
    """Push-off ``b`` alternates with ``a``, the one before it: the other leg, starting after the middle of ``a``."""
    return b["leg"] != a["leg"] and b["start_s"] > (a["start_s"] + a["end_s"]) / 2


def skating_progress(
    found: list[dict],
    t: np.ndarray,
    x: np.ndarray,
    stroke_seconds: float,
    min_yaw_deg: float = 10.0,
    max_yaw_deg: float = 180.0,
) -> float:
    """Metres skated on good push-offs: for each push-off in ``found`` (in order of their start) that is angled
    outwards by ``min_yaw_deg`` to ``max_yaw_deg`` and alternates with the one before (:func:`follows`; the first
    needs no predecessor), the forward progress (the positive steps of ``x (T,)`` m, sampled at ``t (T,)`` s, as the
    fitness counts it) from its start until the next push-off starts or ``stroke_seconds`` have passed, whichever
    comes first. A skier that pushes every stroke with alternating legs, skis angled outwards, scores all its progress;
    one that pushes with one leg twice, with both at once, with a ski turned in or turned out beyond ``max_yaw_deg``
    scores nothing for that stroke."""
    t, x = np.asarray(t, dtype=np.float64), np.asarray(x, dtype=np.float64)
    step = np.maximum(np.diff(x), 0.0)  # progress from sample k to k + 1
    total = 0.0
    for i, p in enumerate(found):
        if min_yaw_deg <= p["yaw_deg"] <= max_yaw_deg and (i == 0 or follows(found[i - 1], p)):
            end = p["start_s"] + stroke_seconds
            if i + 1 < len(found):
                end = min(end, found[i + 1]["start_s"])
            total += float(step[(t[:-1] >= p["start_s"] - 1e-9) & (t[1:] <= end + 1e-9)].sum())
    return total


def summary(found: list[dict]) -> dict:
    """``pushoffs`` (the list), ``pushoff_legs_alternate`` (:func:`legs_alternate`) and ``mean_pushoff_yaw_deg``
    (the mean of their outward yaws; NaN without push-offs)."""
    return {
        "pushoffs": found,
        "pushoff_legs_alternate": legs_alternate(found),
        "mean_pushoff_yaw_deg": float(np.mean([p["yaw_deg"] for p in found])) if found else float("nan"),
    }
