"""Measures of a flight: stroke cycles, drift, heights — the numbers a replay's summary reports."""

from __future__ import annotations

import numpy as np

from animat.fly.model import FlyParams

STROKE_HYSTERESIS = 0.15  # rad either side of the median flap angle that a full stroke must cross


def stroke_cycles(flap: np.ndarray, band: float = STROKE_HYSTERESIS) -> int:
    """Full flap cycles in ``flap (T,)`` rad: a cycle is a swing from above ``median + band`` to below
    ``median − band`` and back (Schmitt-trigger counting, so jitter is not counted)."""
    mid = float(np.median(flap))
    hi, lo = mid + band, mid - band
    state, cycles = None, 0
    for a in flap:
        if a > hi:
            if state == "low":
                cycles += 1
            state = "high"
        elif a < lo:
            state = "low"
    return cycles


def flight_summary(
    params: FlyParams, t: np.ndarray, pos: np.ndarray, wing: np.ndarray, crashed: np.ndarray, start_height: float = 0.0
) -> dict:
    """Headline numbers of one flight. ``t (T,)`` s, ``pos (T, 3)`` u, ``wing (T, 2, 3)`` rad, ``crashed (T,)``.

    Heights are absolute (z up) in simulation units; ``*_body_lengths`` values are relative to the start.
    """
    L = params.body_length
    seconds = float(t[-1]) if len(t) else 0.0
    cycles = stroke_cycles(wing[:, 0, 0])
    horiz = np.hypot(pos[:, 0], pos[:, 1])
    return {
        "seconds": seconds,
        "body_length": L,
        "start_height": float(start_height),
        "min_height": float(pos[:, 2].min()),
        "final_height": float(pos[-1, 2]),
        "mean_height": float(pos[:, 2].mean()),
        "mean_abs_x": float(np.abs(pos[:, 0]).mean()),
        "mean_abs_y": float(np.abs(pos[:, 1]).mean()),
        "stroke_cycles": int(cycles),
        "stroke_cycles_per_3s": float(cycles * 3.0 / seconds) if seconds > 0 else 0.0,
        "crashed": bool(crashed.any()),
        "min_height_change_body_lengths": float((pos[:, 2].min() - start_height) / L),
        "final_height_change_body_lengths": float((pos[-1, 2] - start_height) / L),
        "mean_lateral_drift_body_lengths": float(horiz.mean() / L),
        "max_lateral_drift_body_lengths": float(horiz.max() / L),
    }


def acceptance(summary: dict) -> dict[str, bool]:
    """The main job's three checks on a replayed best fly: it flaps (≥ 5 full strokes per 3 s), never
    drops below start − 2 body lengths, and drifts ≤ 5 body lengths on average; and it did not crash."""
    return {
        "flaps_5_per_3s": summary["stroke_cycles_per_3s"] >= 5.0,
        "min_height_above_start_minus_2_body_lengths": summary["min_height_change_body_lengths"] >= -2.0,
        "mean_lateral_drift_within_5_body_lengths": summary["mean_lateral_drift_body_lengths"] <= 5.0,
        "no_crash": not summary["crashed"],
    }
