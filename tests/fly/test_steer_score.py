"""Issue 21's steering score on synthetic flights whose scores are known in closed form."""

import math

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.fly.steer.score import segment_bounds, steer_score

DT = 0.01
L = 4.0  # body length, u


def flight(segments):
    """Stack ``[(name, direction (3,), velocity (n, 3))]`` into a trajectory sampled every DT (t = DT, 2 DT, ...),
    positions integrated from the origin."""
    names, dirs, vel = [], [], []
    for name, d, v in segments:
        names += [name] * len(v)
        dirs.append(np.tile(np.asarray(d, float), (len(v), 1)))
        vel.append(v)
    vel, dirs = np.concatenate(vel), np.concatenate(dirs)
    t = DT * np.arange(1, len(vel) + 1)
    return t, np.cumsum(vel * DT, axis=0), vel, np.array(names), dirs


def constant(v, seconds):
    return np.tile(np.asarray(v, float), (int(round(seconds / DT)), 1))


def at_angle(deg, speed, seconds):
    """Horizontal velocity ``deg`` degrees from +y."""
    a = math.radians(deg)
    return constant([-speed * math.sin(a), speed * math.cos(a), 0.0], seconds)


FORWARD = [0.0, 1.0, 0.0]


@pytest.mark.parametrize("deg,ok", [(0.0, True), (29.9, True), (30.1, False), (-60.0, False)])
def test_straight_line_at_a_known_angle(deg, ok):
    t, p, v, c, d = flight([("forward", FORWARD, at_angle(deg, 2.0, 2.0))])
    s = steer_score(t, p, v, c, d, speed=2.0, body_length=L)
    (seg,) = s["segments"]
    assert seg["windows"] == 3  # (2 s - 0.5 s hand-over) / 0.5 s
    assert seg["direction_ok_fraction"] == (1.0 if ok else 0.0)
    assert seg["mean_speed_along"] == pytest.approx(2.0 * math.cos(math.radians(deg)))
    assert seg["max_hover_distance_body_lengths"] is None
    assert seg["ok"] is ok and s["all_ok"] is ok
    assert seg["start_s"] == pytest.approx(0.0) and seg["end_s"] == pytest.approx(2.0)


def test_speed_threshold_is_half_the_target():
    for speed, ok in ((0.99, False), (1.01, True)):
        t, p, v, c, d = flight([("forward", FORWARD, at_angle(0.0, speed, 1.5))])
        seg = steer_score(t, p, v, c, d, speed=2.0, body_length=L)["segments"][0]
        assert seg["direction_ok_fraction"] == 1.0 and seg["mean_speed_along"] == pytest.approx(speed)
        assert seg["ok"] is ok


def test_circle_is_on_course_in_one_window_of_eight():
    """A turn of 45° per window, window k's mean velocity pointing 45 k° from the command: only window 0 is
    within 30°, and the components along it cancel over the full turn."""
    n_hand, n_win, windows = 50, 50, 8
    i = np.arange(n_hand + windows * n_win)
    centre0 = n_hand + (n_win - 1) / 2  # mean sample index of window 0
    phase = (i - centre0) * (math.pi / 4) / n_win
    v = 3.0 * np.stack([-np.sin(phase), np.cos(phase), 0 * phase], axis=1)
    t, p, v, c, d = flight([("forward", FORWARD, v)])
    seg = steer_score(t, p, v, c, d, speed=3.0, body_length=L)["segments"][0]
    assert seg["windows"] == 8
    assert seg["direction_ok_fraction"] == 1 / 8
    assert seg["mean_speed_along"] == pytest.approx(0.0, abs=1e-12)
    assert seg["ok"] is False


def test_hover_drift_is_measured_from_where_the_hover_began():
    """Up at 2 u/s for 1 s, then a hover drifting 6 u along x in 2 s: 1.5 body lengths from the last sample
    of the climb."""
    t, p, v, c, d = flight(
        [("up", [0, 0, 1], constant([0, 0, 2.0], 1.0)), ("hover", [0, 0, 0], constant([3.0, 0, 0], 2.0))]
    )
    s = steer_score(t, p, v, c, d, speed=2.0, body_length=L)
    up, hover = s["segments"]
    assert up["direction_ok_fraction"] == 1.0 and up["mean_speed_along"] == pytest.approx(2.0) and up["windows"] == 1
    assert hover["max_hover_distance_body_lengths"] == pytest.approx(6.0 / L)
    assert hover["direction_ok_fraction"] is None and hover["mean_speed_along"] is None
    assert hover["start_s"] == pytest.approx(1.0) and hover["ok"] is True
    assert s["all_ok"] and s["segments_ok"] == 2 and s["max_hover_distance_body_lengths"] == pytest.approx(1.5)
    t, p, v, c, d = flight([("hover", [0, 0, 0], constant([4.5, 0, 0], 2.0))])  # 9 u: 2.25 body lengths
    hover = steer_score(t, p, v, c, d, speed=2.0, body_length=L, start=[0, 0, 0])["segments"][0]
    assert hover["max_hover_distance_body_lengths"] == pytest.approx(2.25) and hover["ok"] is False


def test_hand_over_and_the_remainder_after_the_last_window_are_not_scored():
    """Flying backwards during the 0.5 s hand-over and during the 0.49 s after the last whole window costs nothing;
    one sample more of it does."""
    good, bad = at_angle(0.0, 2.0, 1.0), at_angle(180.0, 2.0, 0.49)
    t, p, v, c, d = flight([("forward", FORWARD, np.concatenate([at_angle(180.0, 2.0, 0.5), good, bad]))])
    seg = steer_score(t, p, v, c, d, speed=2.0, body_length=L)["segments"][0]
    assert seg["windows"] == 2 and seg["direction_ok_fraction"] == 1.0 and seg["mean_speed_along"] == pytest.approx(2.0)
    t, p, v, c, d = flight([("forward", FORWARD, np.concatenate([at_angle(180.0, 2.0, 0.49), good, bad]))])
    seg = steer_score(t, p, v, c, d, speed=2.0, body_length=L)["segments"][0]
    assert seg["windows"] == 2  # 0.49 + 1.0 + 0.49 s: the first window starts one sample into the good part ...
    assert seg["mean_speed_along"] < 2.0  # ... so the second holds one backward sample: (49 * 2 - 2) / 50
    assert seg["mean_speed_along"] == pytest.approx((2.0 + (49 * 2.0 - 2.0) / 50) / 2)


def test_a_segment_shorter_than_hand_over_and_one_window_is_not_scored():
    t, p, v, c, d = flight(
        [("forward", FORWARD, at_angle(0.0, 2.0, 0.99)), ("left", [-1, 0, 0], at_angle(90.0, 2.0, 1.0))]
    )
    s = steer_score(t, p, v, c, d, speed=2.0, body_length=L)
    short, left = s["segments"]
    assert short["windows"] == 0 and short["ok"] is None and short["direction_ok_fraction"] is None
    assert left["windows"] == 1 and left["ok"] is True
    assert s["all_ok"] and s["segments_scored"] == 1
    t, p, v, c, d = flight([("forward", FORWARD, at_angle(0.0, 2.0, 0.99))])
    assert steer_score(t, p, v, c, d, speed=2.0, body_length=L)["all_ok"] is False  # nothing scored: not a pass


def test_crash_fails_the_segment_and_a_fall_is_reported():
    t, p, v, c, d = flight([("forward", FORWARD, at_angle(0.0, 2.0, 2.0))])
    crashed = np.zeros(len(t), bool)
    crashed[-1] = True
    s = steer_score(t, p, v, c, d, crashed, speed=2.0, body_length=L)
    assert s["segments"][0]["crashed"] and s["segments"][0]["ok"] is False and s["crashed"] and not s["all_ok"]
    # descending along "down" at the target speed is no fall; at twice it, 2 body lengths below the track after 4 s is
    t, p, v, c, d = flight([("down", [0, 0, -1], constant([0, 0, -2.0], 6.0))])
    assert not steer_score(t, p, v, c, d, speed=2.0, body_length=L)["fell"]
    for seconds, fell in ((3.9, False), (4.1, True)):
        t, p, v, c, d = flight([("down", [0, 0, -1], constant([0, 0, -4.0], seconds))])
        assert steer_score(t, p, v, c, d, speed=2.0, body_length=L, start=[0, 0, 0])["fell"] is fell
    t, p, v, c, d = flight([("forward", FORWARD, constant([0, 1.0, -2.5], 3.3))])  # 8.25 u below the start height
    s = steer_score(t, p, v, c, d, speed=2.0, body_length=L)
    assert s["fell"] and s["segments"][0]["fell"]


def test_segments_split_on_a_new_command_or_a_new_heading():
    names = np.array(["up", "up", "forward", "forward", "forward", "hover"])
    dirs = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0]], float)
    assert segment_bounds(names, dirs) == [(0, 2), (2, 4), (4, 5), (5, 6)]
    assert segment_bounds(names[:0], dirs[:0]) == []


def test_bad_input_is_a_one_line_error():
    t, p, v, c, d = flight([("forward", FORWARD, at_angle(0.0, 2.0, 1.0))])
    bad = (
        ((t**2, p, v, c, d), 2.0, "evenly spaced"),
        ((t, p, v, c, d), 0.0, "speed"),
        ((t, p[:-1], v, c, d), 2.0, r"\(T, 3\)"),
        ((t[:1], p[:1], v[:1], c[:1], d[:1]), 2.0, "2 samples"),
    )
    for args, speed, match in bad:
        with pytest.raises(ConfigError, match=match) as caught:
            steer_score(*args, speed=speed, body_length=L)
        assert len(str(caught.value).splitlines()) == 1, caught.value
