"""Motion clips: the shared DeepMimic walk, sampling, wrap, bad input, the demo clip and the writer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from animat import quaternions as quat
from animat.character.clip import (
    FRAME_SIZE,
    R_DM_TO_ZUP,
    ClipError,
    find_shared_deepmimic,
    load_clip,
    parse_clip,
    quat_dm_to_zup,
    vec_dm_to_zup,
    write_clip,
)
from animat.character.demo import demo_clip, demo_frames

SHARED = find_shared_deepmimic()
needs_shared = pytest.mark.deepmimic  # skipped without the data, failed under CI=true (tests/conftest.py)


def same_rotation(a, b, tol=1e-9):
    return np.all(quat.angle_between(a, b) < tol)


@needs_shared
def test_shared_walk_cycle_and_advance():
    clip = load_clip(SHARED / "humanoid3d_walk.txt")
    assert clip.num_frames == 39 and clip.loop == "wrap"
    assert clip.cycle_seconds == pytest.approx(1.266616, abs=1e-9)
    assert np.allclose(np.diff(clip.times), 0.033332)
    assert clip.root_advance == pytest.approx([1.23859, 0.0, 0.0], abs=1e-9)
    assert clip.root_pos[0, 2] == pytest.approx(0.847532)  # DeepMimic's y (height) became z
    # a walk: the root moves forward at roughly 1 m/s throughout
    speeds = [clip.sample(t).root_vel[0] for t in np.linspace(0, clip.cycle_seconds, 20, endpoint=False)]
    assert 0.6 < min(speeds) and max(speeds) < 1.6


def test_axis_mapping_is_a_proper_rotation():
    assert np.linalg.det(R_DM_TO_ZUP) == pytest.approx(1.0)
    v = np.array([0.3, -0.2, 0.7])
    assert vec_dm_to_zup(v) == pytest.approx(R_DM_TO_ZUP @ v)
    assert vec_dm_to_zup([0, 1, 0]) == pytest.approx([0, 0, 1])  # up is up
    assert vec_dm_to_zup([0, 0, 1]) == pytest.approx([0, -1, 0])  # DeepMimic's right is −y
    # rotations conjugate: rotating then mapping equals mapping then rotating
    q = quat.normalize(np.array([0.9, 0.1, -0.3, 0.2]))
    assert quat.rotate(quat_dm_to_zup(q), vec_dm_to_zup(v)) == pytest.approx(vec_dm_to_zup(quat.rotate(q, v)))


def test_sampling_exact_at_knots_and_continuous():
    clip = demo_clip()
    for k in (0, 5, 17, clip.num_frames - 2):
        s = clip.sample(clip.times[k])
        assert s.root_pos == pytest.approx(clip.root_pos[k], abs=1e-12)
        assert same_rotation(s.root_quat, clip.root_quat[k]) and same_rotation(s.joint_quats, clip.joint_quats[k])
    # continuity of the pose across a knot and inside a segment
    t_knot = clip.times[7]
    for t in (t_knot, 0.5 * (clip.times[3] + clip.times[4])):
        a, b = clip.sample(t - 1e-7), clip.sample(t + 1e-7)
        assert np.abs(a.root_pos - b.root_pos).max() < 1e-5
        assert quat.angle_between(a.joint_quats, b.joint_quats).max() < 1e-5
    # midway between two knots lies on the slerp arc: equal angles to both ends
    mid = clip.sample(0.5 * (clip.times[10] + clip.times[11]))
    d0 = quat.angle_between(mid.joint_quats, clip.joint_quats[10])
    d1 = quat.angle_between(mid.joint_quats, clip.joint_quats[11])
    assert d0 == pytest.approx(d1, abs=1e-9)


def test_velocities_match_finite_differences():
    clip = demo_clip()
    t, h = 0.41, 1e-6
    s, s1 = clip.sample(t), clip.sample(t + h)
    assert s.root_vel == pytest.approx((s1.root_pos - s.root_pos) / h, abs=1e-4)
    # joint angular velocity in the child frame: q(t+h) ≈ q(t) ⊗ exp(ω h)
    w = quat.log(quat.mul(quat.conj(s.joint_quats), s1.joint_quats)) / h
    assert s.joint_angvel == pytest.approx(w, abs=1e-4)
    assert np.abs(s.joint_angvel).max() > 0.1  # the demo actually moves


def test_wrap_advances_root_horizontally():
    clip = demo_clip()
    T, adv = clip.cycle_seconds, clip.root_advance
    assert adv[2] == 0.0 and adv[0] == pytest.approx(1.0)
    for t in (0.0, 0.37):
        a, b = clip.sample(t), clip.sample(t + 2 * T)
        assert b.root_pos == pytest.approx(a.root_pos + 2 * adv, abs=1e-9)
        assert same_rotation(a.joint_quats, b.joint_quats, 1e-7)
    # and negative times wrap too
    assert clip.sample(-T + 0.2).root_pos == pytest.approx(clip.sample(0.2).root_pos - adv, abs=1e-9)


def test_none_loop_holds_end_poses():
    frames = demo_frames()
    clip = parse_clip({"Loop": "none", "Frames": frames})
    end = clip.sample(clip.cycle_seconds + 5.0)
    assert end.root_pos == pytest.approx(clip.root_pos[-1]) and np.all(end.root_vel == 0)
    assert np.all(clip.root_advance == 0)


def _write(tmp_path, text):
    p = tmp_path / "clip.txt"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda f: f[3].__setitem__(26, float("nan")), ["frame 3", "right shoulder rotation", "not finite"]),
        (lambda f: f[2].pop(), ["frame 2", "expected 44 values", "got 43", "another skeleton"]),
        (lambda f: f[5].__setitem__(0, -0.1), ["frame 5", "duration"]),
        (lambda f: f[1].__setitem__(40, "x"), ["frame 1", "left shoulder rotation", "expected a number"]),
        (lambda f: f[4].__setitem__(slice(4, 8), [0, 0, 0, 0]), ["frame 4", "root rotation", "zero quaternion"]),
    ],
)
def test_bad_frames_name_frame_and_field(tmp_path, mutate, expected):
    frames = demo_frames()
    mutate(frames)
    text = json.dumps({"Loop": "wrap", "Frames": frames})  # json writes NaN as NaN, as a careless tool would
    with pytest.raises(ClipError) as info:
        load_clip(_write(tmp_path, text))
    msg = str(info.value)
    assert "\n" not in msg
    for part in expected:
        assert part in msg


def test_malformed_json_and_bad_fields(tmp_path):
    with pytest.raises(ClipError, match=r"not valid JSON: .* line 1, column"):
        load_clip(_write(tmp_path, '{"Loop": "wrap", "Frames": [[0.1, 2,'))
    with pytest.raises(ClipError, match="field 'Loop'"):
        parse_clip({"Loop": "mirror", "Frames": demo_frames()})
    with pytest.raises(ClipError, match="field 'Frames'"):
        parse_clip({"Loop": "wrap"})
    with pytest.raises(ClipError, match="no such clip file"):
        load_clip(tmp_path / "missing.txt")


def test_demo_clip_round_trips_through_writer(tmp_path):
    clip = demo_clip()
    assert clip.num_frames == 31 and clip.loop == "wrap" and clip.cycle_seconds == pytest.approx(1.0)
    path = write_clip(clip, tmp_path / "demo.txt")
    raw = json.loads(path.read_text())
    assert raw["Loop"] == "wrap" and all(len(f) == FRAME_SIZE for f in raw["Frames"])
    back = load_clip(path)
    assert back.times == pytest.approx(clip.times, abs=1e-12)
    assert back.root_pos == pytest.approx(clip.root_pos, abs=1e-12)
    assert same_rotation(back.root_quat, clip.root_quat) and same_rotation(back.joint_quats, clip.joint_quats)
    # and the DeepMimic-format frames are the ones the demo was made from
    assert np.allclose(np.array(raw["Frames"]), np.array(demo_frames()), atol=1e-12)


@needs_shared
def test_shared_walk_round_trips(tmp_path):
    src = SHARED / "humanoid3d_walk.txt"
    clip = load_clip(src)
    back = load_clip(write_clip(clip, tmp_path / "walk.txt"))
    assert back.root_pos == pytest.approx(clip.root_pos, abs=1e-12)
    assert same_rotation(back.joint_quats, clip.joint_quats, 1e-7)
    orig = np.array(json.loads(src.read_text())["Frames"])
    again = np.array(json.loads((tmp_path / "walk.txt").read_text())["Frames"])
    assert np.abs(orig[:, 1:4] - again[:, 1:4]).max() < 1e-12  # positions come back exactly


def test_the_walk_clip_stands_and_walks_the_right_way_up():
    """Axis mapping and joint layout on real motion capture (the shared walk clip; skipped without it):
    over a cycle the ankles stay near the ground, the wrists at hip height, the right side at -y and the
    left at +y (Z up, walking along +x), and the root moves forward."""
    import mujoco

    from animat.character.clip import find_shared_deepmimic, load_clip
    from animat.character.model import build_model, pose_kinematics

    folder = find_shared_deepmimic()
    if folder is None:
        pytest.skip("shared/data/deepmimic is absent")
    clip = load_clip(folder / "humanoid3d_walk.txt")
    model = build_model()
    starts = []
    for t in np.linspace(0.0, clip.cycle_seconds, 12, endpoint=False):
        k = pose_kinematics(model, mujoco.MjData(model), clip.sample(t))
        (ra, rw, la, lw), root = k.end_effectors, k.state.root_pos  # right ankle, right wrist, left ankle, left wrist
        assert (
            0.0 < ra[2] < 0.3 and 0.0 < la[2] < 0.3 and 0.6 < rw[2] < 1.1 and 0.6 < lw[2] < 1.1 and 0.75 < root[2] < 1.0
        )
        assert ra[1] < root[1] < la[1] and rw[1] < root[1] < lw[1]
        starts.append(root[0])
    assert starts[-1] - starts[0] > 0.3


def test_absurd_numbers_in_a_clip_file_are_one_line_errors(tmp_path):
    from animat.character.clip import ClipError, clip_to_frames, load_clip

    frames = clip_to_frames(demo_clip())
    for bad in ("1" + "0" * 400, "1" + "0" * 5000):  # isfinite overflows on the first; json refuses the second
        text = json.dumps({"Loop": "wrap", "Frames": frames}).replace(str(frames[0][1]), bad, 1)
        (tmp_path / "c.txt").write_text(text)
        with pytest.raises(ClipError):
            load_clip(tmp_path / "c.txt")
