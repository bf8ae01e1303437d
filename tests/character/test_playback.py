"""Chained playback (animat.character.playback): closed forms of speed and turn, continuity across segments, the
sampled velocities against finite differences of the sampled poses, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from animat import quaternions as quat
from animat.character.clip import load_clip, resolve_clip
from animat.character.demo import demo_clip
from animat.character.playback import Playback, Segment, random_playback
from animat.errors import ConfigError

Z = np.array([0.0, 0.0, 1.0])


def states(pb: Playback, times):
    return [pb.sample(t) for t in times]


def test_one_segment_at_speed_one_is_the_clip_itself():
    clip = demo_clip()
    pb = Playback([Segment(clip, 3.0)])
    for t in (0.0, 0.37, 1.0, 2.9):
        a, b = pb.sample(t), clip.sample(t)
        for name in ("root_pos", "root_quat", "joint_quats", "root_vel", "root_angvel", "joint_angvel"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-12, err_msg=name)


def test_speed_plays_clip_time_faster_and_scales_every_velocity():
    clip = demo_clip()
    pb = Playback([Segment(clip, 2.0, speed=1.5, offset=0.25)])
    a, b = pb.sample(0.6), clip.sample(0.25 + 1.5 * 0.6)
    np.testing.assert_allclose(a.joint_quats, b.joint_quats, atol=1e-12)
    np.testing.assert_allclose(a.root_vel, 1.5 * b.root_vel, atol=1e-12)
    np.testing.assert_allclose(a.joint_angvel, 1.5 * b.joint_angvel, atol=1e-12)


def test_a_turn_rotates_the_path_about_the_hand_over_point_and_the_heading_by_the_turn():
    clip = demo_clip()
    turn = np.deg2rad(60.0)
    pb = Playback([Segment(clip, 1.0), Segment(clip, 2.0, turn=turn, offset=1.0)], blend=0.0)
    straight = Playback([Segment(clip, 3.0)])
    joint = pb.sample(1.0).root_pos
    for t in (1.4, 2.2, 2.9):
        got = pb.sample(t).root_pos - joint
        want = quat.rotate(quat.about_axis(Z, turn), straight.sample(t).root_pos - straight.sample(1.0).root_pos)
        np.testing.assert_allclose(got[:2], want[:2], atol=1e-9)
        dh = quat.angle_about(quat.heading(pb.sample(t).root_quat), Z) - quat.angle_about(
            quat.heading(straight.sample(t).root_quat), Z
        )
        assert np.isclose(np.angle(np.exp(1j * dh)), turn, atol=1e-9)


def test_root_is_continuous_at_every_cut_and_blend():
    clip = demo_clip()
    segs = [
        Segment(clip, 1.3),
        Segment(clip, 0.9, speed=1.3, turn=1.0, offset=0.2),
        Segment(clip, 1.1, speed=0.7, turn=-2.0),
    ]
    for blend in (0.0, 0.3):
        pb = Playback(segs, blend=blend)
        for t in (1.3, 2.2):
            before, after = pb.sample(t - 1e-7).root_pos, pb.sample(t).root_pos
            assert np.linalg.norm((before - after)[:2]) < 1e-5, (blend, t)


def test_sampled_velocities_are_the_rates_of_the_sampled_poses_through_blends():
    """Central differences of positions and rotations (h = 0.1 ms) against the velocities sampled, over a chain
    whose blend turns and changes speed: the root's linear velocity is exact, the angular ones first order. The
    times avoid the clip's knots (there the piecewise-linear clip's velocities jump)."""
    clip = demo_clip()
    pb = Playback([Segment(clip, 1.0), Segment(clip, 1.0, speed=1.25, turn=0.8, offset=0.4)], blend=0.4)
    h = 1e-4
    for t in np.arange(0.05, 1.95, 0.05) + 0.0071:
        a, m, b = states(pb, (t - h, t, t + h))
        np.testing.assert_allclose((b.root_pos - a.root_pos) / (2 * h), m.root_vel, atol=2e-3)
        qa = np.concatenate([a.root_quat[None], a.joint_quats])
        qb = np.concatenate([b.root_quat[None], b.joint_quats])
        omega = quat.log(quat.mul(quat.conj(qa), qb)) / (2 * h)  # child frames
        sampled = np.concatenate([m.root_angvel[None], m.joint_angvel])
        assert np.abs(omega - sampled).max() < 0.05 * max(1.0, np.abs(sampled).max()), t


def test_one_shot_clips_hold_their_last_pose_when_continued_into_a_blend():
    clip = demo_clip()
    held = type(clip)(
        loop="none", times=clip.times, root_pos=clip.root_pos, root_quat=clip.root_quat, joint_quats=clip.joint_quats
    )
    pb = Playback([Segment(held, held.cycle_seconds), Segment(clip, 1.0)], blend=0.5)
    end = held.sample(held.cycle_seconds)
    start = pb.sample(held.cycle_seconds)  # w = 0: the held last pose
    np.testing.assert_allclose(start.joint_quats, end.joint_quats, atol=1e-9)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(seconds=0.0), "segment 0 seconds must be > 0"),
        (dict(speed=-1.0), "segment 0 speed must be > 0"),
        (dict(offset=-0.1), "segment 0 offset"),
    ],
)
def test_bad_segments_are_one_line_errors(bad, match):
    with pytest.raises(ConfigError, match=match) as err:
        Playback([Segment(demo_clip(), **{"seconds": 1.0, **bad})])
    assert "\n" not in str(err.value)


def test_a_blend_longer_than_a_segment_and_an_empty_chain_are_errors():
    with pytest.raises(ConfigError, match="blend"):
        Playback([Segment(demo_clip(), 1.0), Segment(demo_clip(), 0.2)], blend=0.5)
    with pytest.raises(ConfigError, match="at least one segment"):
        Playback([])


def test_random_playback_is_long_enough_seeded_and_finite():
    clips = {"demo": demo_clip()}
    pb, names = random_playback(clips, 30.0, np.random.default_rng(4))
    again, names_again = random_playback(clips, 30.0, np.random.default_rng(4))
    assert pb.seconds >= 30.0 and names == names_again and set(names) == {"demo"}
    for t in np.linspace(0, pb.seconds, 301):
        s, s2 = pb.sample(t), again.sample(t)
        assert np.isfinite(s.root_pos).all() and np.isfinite(s.joint_angvel).all()
        np.testing.assert_array_equal(s.root_pos, s2.root_pos)


@pytest.mark.deepmimic
def test_the_shared_clips_chain_with_blends_and_turns():
    """Walk, jog, run (looping) and kick (one-shot): a 60 s random chain stays on its feet's height range."""
    clips = {n: load_clip(resolve_clip(f"shared:humanoid3d_{n}.txt")) for n in ("walk", "jog", "run", "kick")}
    pb, names = random_playback(clips, 60.0, np.random.default_rng(0))
    heights = np.array([pb.sample(t).root_pos[2] for t in np.arange(0, pb.seconds, 1 / 30)])
    assert len(set(names)) >= 3 and np.isfinite(heights).all()
    assert 0.5 < heights.min() and heights.max() < 1.2  # the root (pelvis) of a standing character, m
