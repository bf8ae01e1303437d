"""A garment the character wears, frame by frame: the meeting point of a system that moves the character (``imitate``
plays a policy) and one that simulates a garment (``surrogate``'s learned cape or skirt), which never import each
other (ARCHITECTURE.md).

The garment reads the character's body frames (:func:`animat.character.bones.body_frames`: the skeleton's 15 bodies,
each position (3,) m and rotation (4,) w, x, y, z, world frame) at its own frame rate ``fps`` and gives the world
positions of its vertices. Who can open one is registered by the command line from the registry
(:func:`set_opener`, :mod:`animat.systems`' ``garment`` entries); a library user may pass any object with these
members to the code that wears it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from animat.errors import ConfigError


class Garment(Protocol):
    """``name``: what it is (for titles); ``fps``: frames per second it steps at; ``triangles (F, 3)`` int: its
    mesh; ``warmup_frames``: frames it needs to settle on a still character before the motion starts."""

    name: str
    fps: float
    triangles: np.ndarray
    warmup_frames: int

    def start(self, frames: np.ndarray) -> np.ndarray:
        """Put on the character standing at body frames ``(105,)``; its vertices ``(V, 3)`` m, world frame."""
        ...

    def step(self, frames: np.ndarray) -> np.ndarray:
        """One frame later, the character at body frames ``(105,)``: its vertices ``(V, 3)`` m, world frame."""
        ...


Opener = Callable[[str], Garment]
_openers: list[Opener] = []


def set_opener(opener: Opener | None) -> None:
    """The function that opens a garment from a user's word (a run directory or ``pretrained:NAME``); None clears."""
    _openers[:] = [] if opener is None else [opener]


def open_garment(source: str) -> Garment:
    """The garment ``source`` names, through the registered opener; a one-line ConfigError without one."""
    if not _openers:
        raise ConfigError(f"--garment {source!r}: no system that simulates garments is registered")
    return _openers[0](str(source))
