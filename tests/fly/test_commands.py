"""Flight commands: directions relative to the heading, and command scripts."""

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.fly.steer.commands import COMMANDS, direction, heading, parse_script


@pytest.mark.parametrize("yaw", [0.0, 0.7, -2.5])
def test_directions_follow_the_heading_and_are_orthonormal(yaw):
    q = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])  # a yaw of `yaw` rad about +z
    assert heading(q) == pytest.approx(yaw)
    fwd, left, up = direction("forward", yaw), direction("left", yaw), direction("up", yaw)
    np.testing.assert_allclose(fwd, [-np.sin(yaw), np.cos(yaw), 0], atol=1e-12)  # body +y in the world
    np.testing.assert_allclose(np.cross(fwd, left), up, atol=1e-12)  # left is 90° counter-clockwise
    np.testing.assert_allclose(direction("back", yaw) + fwd, 0, atol=1e-12)
    np.testing.assert_allclose(direction("right", yaw) + left, 0, atol=1e-12)
    np.testing.assert_allclose(direction("down", yaw), -up)
    assert not direction("hover", yaw).any()


def test_heading_ignores_pitch_and_roll():
    yaw, pitch = 0.4, 0.6
    qz = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])
    qx = np.array([np.cos(pitch / 2), np.sin(pitch / 2), 0, 0])
    w1, x1, y1, z1 = qz
    w2, x2, y2, z2 = qx
    q = np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )
    assert heading(q) == pytest.approx(yaw)


def test_command_input_is_the_command_frame_velocity_per_10_units():
    from animat.fly.steer.tracking import command_input, command_velocity

    np.testing.assert_allclose(command_input(command_velocity("up", 2.0)), [0, 0, 0.2], atol=1e-7)
    np.testing.assert_allclose(command_input(command_velocity("left", 2.0)), [-0.2, 0, 0], atol=1e-7)
    assert set(COMMANDS) == {"hover", "forward", "back", "left", "right", "up", "down"}


def test_scripts_parse_and_bad_scripts_are_one_line_errors():
    assert parse_script("up:1, forward:2.5,hover:2") == [("up", 1.0), ("forward", 2.5), ("hover", 2.0)]
    for bad, words in [
        ("sideways:1", "unknown command"),
        ("up:0", "> 0"),
        ("up:-1", "> 0"),
        ("up", "malformed"),
        ("up:1,,left:1", "malformed"),
        ("up:soon", "not a number"),
        ("up:inf", "> 0"),
    ]:
        with pytest.raises(ConfigError, match=words) as err:
            parse_script(bad)
        assert "\n" not in str(err.value)
