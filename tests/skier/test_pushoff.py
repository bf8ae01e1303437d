"""Push-off detection (animat.skier.pushoff) on constructed contact-force and yaw series with known answers,
and its report in a replay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from animat.skier import pushoff as P

W = 500.0  # N, the constructed skier's weight
DT = 0.02


def _gait(
    theta_deg: float = 0.0, yaw_out_deg: float = 15.0, seconds: float = 4.0, stroke: float = 1.0, both: bool = False
):
    """An alternating V-skate travelling at 3 m/s along ``theta_deg``: the left ski pushes during [0, 1) s,
    [2, 3) s, ..., the right during the others (``both``: both at once); a pushing ski carries 0.6 W and is pushed
    0.1 W forward (and 0.2 W inwards), the other carries 0.4 W and brakes with 0.02 W; each ski is yawed
    ``yaw_out_deg`` outwards from the direction of travel."""
    th = math.radians(theta_deg)
    t = np.arange(round(seconds / DT)) * DT
    ahead, left = np.array([math.cos(th), math.sin(th)]), np.array([-math.sin(th), math.cos(th)])
    xy = 3.0 * t[:, None] * ahead
    stroke_no = np.floor(t / stroke + 1e-9).astype(int)
    push = np.stack([stroke_no % 2 == 0, stroke_no % 2 == 1], axis=1)  # (T, 2): left, right
    if both:
        push[:] = True
    force = np.zeros((len(t), 2, 3))
    for s, inward in ((0, -left), (1, left)):
        p = push[:, s][:, None]
        force[:, s, :2] = np.where(p, 0.1 * W * ahead + 0.2 * W * inward, -0.02 * W * ahead)
        force[:, s, 2] = np.where(push[:, s], 0.6 * W, 0.4 * W)
    out = math.radians(yaw_out_deg)
    yaw = np.stack([np.full(len(t), th + out), np.full(len(t), th - out)], axis=1)
    return t, force, yaw, xy


@pytest.mark.parametrize("theta", [0.0, 37.0, -150.0])
def test_an_alternating_v_skate_gives_its_legs_and_yaws_exactly(theta):
    t, force, yaw, xy = _gait(theta, 15.0)
    found = P.pushoffs(t, force, yaw, xy, W, window_seconds=2.0)
    assert [p["leg"] for p in found] == ["left", "right", "left", "right"]
    assert [p["start_s"] for p in found] == pytest.approx([0.0, 1.0, 2.0, 3.0])
    assert [p["end_s"] for p in found] == pytest.approx([0.98, 1.98, 2.98, 3.98])
    assert [p["yaw_deg"] for p in found] == pytest.approx([15.0] * 4, abs=1e-9)
    s = P.summary(found)
    assert s["pushoff_legs_alternate"] is True
    assert s["mean_pushoff_yaw_deg"] == pytest.approx(15.0, abs=1e-9)


def test_skis_turned_inwards_give_negative_yaw():
    t, force, yaw, xy = _gait(10.0, -8.0)
    s = P.summary(P.pushoffs(t, force, yaw, xy, W, window_seconds=2.0))
    assert s["mean_pushoff_yaw_deg"] == pytest.approx(-8.0, abs=1e-9)


def test_pushing_with_both_legs_at_once_does_not_alternate():
    t, force, yaw, xy = _gait(both=True)
    found = P.pushoffs(t, force, yaw, xy, W, window_seconds=2.0)
    assert [p["leg"] for p in found] == ["left", "right"]  # one long push-off each, at the same time
    assert P.legs_alternate(found) is False


def test_the_same_leg_twice_or_a_single_push_off_is_no_alternation():
    one = {"start_s": 0.0, "end_s": 1.0, "yaw_deg": 10.0}
    assert not P.legs_alternate([{"leg": "left", **one}])
    assert not P.legs_alternate(
        [{"leg": "left", **one}, {"leg": "left", "start_s": 2.0, "end_s": 3.0, "yaw_deg": 10.0}]
    )
    assert P.legs_alternate([{"leg": "left", **one}, {"leg": "right", "start_s": 0.6, "end_s": 1.5, "yaw_deg": 10.0}])
    assert not P.legs_alternate(
        [{"leg": "left", **one}, {"leg": "right", "start_s": 0.4, "end_s": 1.5, "yaw_deg": 10.0}]
    )
    assert math.isnan(P.summary([])["mean_pushoff_yaw_deg"]) and P.summary([])["pushoff_legs_alternate"] is False


def test_a_light_or_braking_ski_is_no_push_off():
    t, force, yaw, xy = _gait()
    light = force.copy()
    light[..., 2] = 0.2 * W  # below a quarter of the weight
    assert P.pushoffs(t, light, yaw, xy, W, 2.0) == []
    braking = force.copy()
    braking[..., :2] *= -1  # the ground pushes both skis backwards
    assert P.pushoffs(t, braking, yaw, xy, W, 2.0) == []


def test_segments_bridge_short_gaps_and_drop_short_runs():
    m = np.array([1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1], dtype=bool)
    assert P.segments(m) == [(0, 2), (3, 6), (9, 10), (11, 15)]
    assert P.segments(m, min_frames=3) == [(3, 6), (11, 15)]
    assert P.segments(m, gap_frames=1) == [(0, 6), (9, 15)]
    assert P.segments(np.zeros(5, bool)) == []


def test_the_direction_of_travel_of_a_zigzag_is_its_mean_heading():
    """A path zigzagging with period 2 s about a line at 30 deg: over a 2-s window the sideways part cancels."""
    t = np.arange(500) * DT
    th = math.radians(30.0)
    along, side = 2.0 * t, 0.4 * np.sin(2 * np.pi * t / 2.0)
    xy = np.stack([along * math.cos(th) - side * math.sin(th), along * math.sin(th) + side * math.cos(th)], axis=1)
    h = P.travel_heading(xy, DT, 2.0)
    assert np.degrees(h[50:-50]) == pytest.approx(30.0, abs=1e-9)


def test_a_skier_that_hardly_moves_has_no_direction_of_travel_and_no_push_offs():
    """The V-skate's forces and yaws on a path that only jitters (1 cm, so < MIN_TRAVEL_SPEED over a window): its
    heading is noise, so there is no heading, no push-off and no yaw; at 3 m/s the same forces push off."""
    t, force, yaw, xy = _gait(20.0, 15.0)
    still = 0.01 * np.stack([np.sin(7.0 * t), np.cos(11.0 * t)], axis=1)
    assert np.isnan(P.travel_heading(still, DT, 2.0)).all()
    s = P.summary(P.pushoffs(t, force, yaw, still, W, window_seconds=2.0))
    assert s["pushoffs"] == [] and math.isnan(s["mean_pushoff_yaw_deg"])
    slow = xy * (1.5 * P.MIN_TRAVEL_SPEED / 3.0)  # the same path at 1.5 x the threshold speed
    assert len(P.pushoffs(t, force, yaw, slow, W, window_seconds=2.0)) == 4


def test_ski_yaw_and_wrap():
    assert np.degrees(P.ski_yaw(np.array([[0.0, 0, 0]]), np.array([[1.0, 1, 0]]))) == pytest.approx([45.0])
    assert np.degrees(P.wrap(np.radians([190.0, -181.0, 30.0]))) == pytest.approx([-170.0, 179.0, 30.0])
    yaw = np.radians([[175.0, -175.0]])
    assert np.degrees(P.outward_yaw(yaw, np.radians([-175.0])))[0] == pytest.approx([-10.0, 0.0])


def test_a_replay_reports_the_push_offs_of_a_skier_from_its_contact_forces():
    """The standing pose pushes nowhere; the simulated ski forces carry the weight (563 N) between them."""
    from animat.skier.model import TOTAL_MASS, G, SkierParams
    from animat.skier.replay import pushoff_report, ski_yaw
    from animat.skier.rollout import trajectory

    traj = trajectory(SkierParams(), np.zeros((10, 12), dtype=np.int64), 1.0)
    assert traj["ski_forces"][-1, :, 2].sum() == pytest.approx(TOTAL_MASS * G, rel=1e-3)
    assert np.degrees(ski_yaw(traj)[-1]) == pytest.approx([0.0, 0.0], abs=1e-3)
    rep = pushoff_report(traj, ski_yaw(traj), 5.0)
    assert rep["pushoffs"] == [] and rep["pushoff_legs_alternate"] is False


def _push(leg, start, end, yaw):
    return {"leg": leg, "start_s": start, "end_s": end, "yaw_deg": yaw}


def test_skating_progress_counts_the_strokes_of_alternating_outward_push_offs():
    t = np.arange(0, 6.0001, 0.5)  # samples every 0.5 s; the pelvis gains 1 m per sample, but 0.5 m from 4.0 to 4.5 s
    x = np.cumsum(np.r_[0.0, np.ones(12)])
    x[9:] -= 0.5
    alternating = [_push("left", 0.0, 0.2, 15.0), _push("right", 1.0, 1.2, 12.0), _push("left", 2.0, 2.2, 20.0)]
    assert (
        P.skating_progress(alternating, t, x, 1.5) == 2.0 + 2.0 + 3.0
    )  # 0-1 s and 1-2 s (the next one starts), 2-3.5 s
    assert (
        P.skating_progress(alternating, t, x, 5.0) == 2.0 + 2.0 + 7.5
    )  # the last stroke runs to the end (0.5 m in 4-4.5 s)
    assert P.skating_progress(alternating, t, x, 1.5, min_yaw_deg=13.0) == 2.0 + 3.0  # the 12-degree one skates nothing
    again = alternating + [
        _push("left", 3.0, 3.2, 15.0)
    ]  # the same leg twice: its stroke is not skating, and it cuts the one before
    assert P.skating_progress(again, t, x, 1.5) == 2.0 + 2.0 + 2.0 and not P.legs_alternate(again)
    inward = [_push("left", 0.0, 0.2, -15.0), _push("right", 1.0, 1.2, 15.0)]  # the first pushes with its ski turned in
    assert P.skating_progress(inward, t, x, 1.5) == 3.0
    both = [_push("left", 0.0, 0.4, 15.0), _push("right", 0.1, 0.5, 15.0)]  # the right starts before the left's middle
    assert P.skating_progress(both, t, x, 1.5) == 0.0 and not P.legs_alternate(both)
    assert P.skating_progress([], t, x, 1.5) == 0.0
    tg, force, yaw, xy = _gait(yaw_out_deg=15.0)  # the constructed V-skate at 3 m/s: every stroke skated
    assert P.skating_progress(P.pushoffs(tg, force, yaw, xy, W, 2.0), tg, xy[:, 0], 1.0) == pytest.approx(xy[-1, 0])


def test_skating_progress_counts_only_push_offs_inside_its_yaw_band():
    """The band's ends count (15 and 35 degrees); a push-off outside it skates nothing, yet the next one still
    alternates with it; the default band (10-180 degrees) counts the 48-degree V-skate of configs/skier_vskate.toml."""
    t = np.arange(0, 4.0001, 0.5)  # the pelvis gains 1 m every 0.5 s
    x = np.arange(len(t), dtype=float)
    found = [_push("left", 0.0, 0.2, 15.0), _push("right", 1.0, 1.2, 48.0), _push("left", 2.0, 2.2, 35.0)]
    assert P.skating_progress(found, t, x, 1.0) == 6.0
    assert P.skating_progress(found, t, x, 1.0, 15.0, 35.0) == 2.0 + 2.0  # the 48-degree stroke skates nothing
    assert P.skating_progress(found, t, x, 1.0, 15.1, 34.9) == 0.0
    assert P.skating_progress(found, t, x, 1.0, 40.0, 50.0) == 2.0
