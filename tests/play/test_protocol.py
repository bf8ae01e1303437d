"""The page's messages (animat.play.protocol) and the wall-clock pacing (animat.play.pacing). Cost: < 1 s."""

from __future__ import annotations

import json

import pytest

from animat.play.pacing import Pacer
from animat.play.protocol import parse_message, rounded


@pytest.mark.parametrize(
    "msg",
    [
        {"type": "command", "name": "forward", "id": 3},
        {"type": "target", "x": 1.5, "y": -2, "id": 0},
        {"type": "pause", "paused": True},
        {"type": "reset"},
        {"type": "quit"},
        {"type": "stats", "rtf": 0.99, "lag_ms": None},
    ],
)
def test_well_formed_messages_are_read_as_sent(msg):
    assert parse_message(json.dumps(msg)) == msg


@pytest.mark.parametrize(
    "text",
    [
        b'{"type": "quit"}',  # bytes, not text
        "not json",
        "[1, 2]",
        '{"type": "fly away"}',
        '{"type": "command", "name": "forward"}',  # no id
        '{"type": "command", "name": "forward", "id": 1, "extra": 0}',
        '{"type": "command", "name": 7, "id": 1}',
        '{"type": "command", "name": "", "id": 1}',
        '{"type": "command", "name": "' + "x" * 41 + '", "id": 1}',
        '{"type": "command", "name": "up", "id": true}',
        '{"type": "target", "x": NaN, "y": 0, "id": 1}',
        '{"type": "target", "x": 1e999, "y": 0, "id": 1}',
        '{"type": "pause", "paused": 1}',
        '{"type": "quit", "pad": "' + "x" * 5000 + '"}',
    ],
)
def test_malformed_messages_are_none(text):
    assert parse_message(text) is None


def test_rounded_keeps_five_digits_and_nan_as_none():
    assert rounded([1.23456789, float("nan"), -2e-7]) == [1.2346, None, -2e-7]


def test_pacer_keeps_wall_time_then_slows_down_instead_of_racing():
    p = Pacer(0.01, now=0.0, most=10)
    assert p.due(0.0) == 1  # the first step is due at once
    assert p.due(0.005) == 0 and p.wait(0.005) == pytest.approx(0.005)
    assert p.due(0.0301) == 3  # steps at 0.01, 0.02, 0.03
    assert p.due(1.005) == 10 and p.forgiven == 87  # 0.04 .. 1.00 were due: 97 steps, 10 taken
    assert p.due(1.005) == 0 and p.due(1.0151) == 1  # and from then on real time again


def test_pacer_pause_owes_nothing():
    p = Pacer(0.01, now=0.0)
    p.due(0.0)
    p.pause(True, 0.005)
    assert p.due(5.0) == 0
    p.pause(False, 5.0)
    assert p.due(5.0) == 1 and p.forgiven == 0
