"""Timed command scripts (:mod:`animat.scripts`), as the fly's flight commands and the humanoid's skills read them."""

from __future__ import annotations

import pytest

from animat.errors import ConfigError
from animat.fly.steer.commands import parse_script
from animat.imitate.steer import SkillCommand, parse_commands
from animat.scripts import parse_timed

SKILLS = ["walk", "jog"]


def test_both_systems_read_names_and_seconds_alike():
    assert parse_script(" up:1, forward : 2.5,hover:2") == [("up", 1.0), ("forward", 2.5), ("hover", 2.0)]
    assert parse_commands("jog:3, walk:0.5", SKILLS) == [SkillCommand(1, "jog", 3.0), SkillCommand(0, "walk", 0.5)]
    seen = []
    assert parse_timed("a:1,b:2", seen.append, "name", "a:1") == [("a", 1.0), ("b", 2.0)] and seen == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "fly", "imitate"),
    [
        ("up", "malformed command 'up' in 'up'; write name:seconds, e.g. 'up:1,forward:2'", None),
        ("walk", None, "malformed command 'walk' in 'walk'; write skill:seconds, e.g. 'walk:4,jog:3'"),
        ("up:1,,left:1", "malformed command '' in 'up:1,,left:1'", None),
        (":2", "malformed command ':2'", "malformed command ':2'"),
        ("up:soon", "command 'up:soon': 'soon' is not a number of seconds", None),
        ("walk: two", None, "command 'walk: two': 'two' is not a number of seconds"),
        ("up:0", "command 'up:0': the duration must be a finite number of seconds > 0", None),
        ("walk:nan", None, "command 'walk:nan': the duration must be a finite number of seconds > 0"),
        ("walk:-1", None, "the duration must be a finite number of seconds > 0"),
        ("up:inf", "the duration must be a finite number of seconds > 0", None),
        ("sideways:1", "unknown command 'sideways'; choose from hover, forward", "unknown skill 'sideways'"),
        ("walk:1,skip:2", "unknown command 'walk'", "unknown skill 'skip'; this policy's skills are walk, jog"),
    ],
)
def test_bad_scripts_are_one_line_errors(text, fly, imitate):
    for parse, expected in ((parse_script, fly), (lambda t: parse_commands(t, SKILLS), imitate)):
        if expected is None:
            continue
        with pytest.raises(ConfigError) as caught:
            parse(text)
        message = str(caught.value)
        assert expected in message and len(message.splitlines()) == 1, message
