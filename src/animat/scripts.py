"""Timed command scripts, ``"name:seconds,name:seconds,..."``: what every system's steering reads (the fly's flight
commands, :mod:`animat.fly.steer.commands`; the humanoid's skills, :mod:`animat.imitate.steer`)."""

from __future__ import annotations

import math
from collections.abc import Callable

from animat.errors import ConfigError


def parse_timed(text: str, check_name: Callable[[str], object], noun: str, example: str) -> list[tuple[str, float]]:
    """``"up:1, forward:2.5"`` -> ``[("up", 1.0), ("forward", 2.5)]``: names (stripped) and durations (s, finite, > 0).
    ``check_name(name)`` raises a one-line error for a name the caller does not know; it is called before the
    duration is read. Other faults are one-line ConfigErrors: an item without ``noun:seconds`` (the message shows
    ``example``), a duration that is not a number or not a finite number of seconds > 0."""
    segments = []
    for part in str(text).split(","):
        item = part.strip()
        name, sep, seconds = item.partition(":")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"malformed command {item!r} in {text!r}; write {noun}:seconds, e.g. {example!r}")
        check_name(name)
        try:
            duration = float(seconds)
        except ValueError:
            raise ConfigError(f"command {item!r}: {seconds.strip()!r} is not a number of seconds") from None
        if not (math.isfinite(duration) and duration > 0):
            raise ConfigError(f"command {item!r}: the duration must be a finite number of seconds > 0")
        segments.append((name, duration))
    return segments
