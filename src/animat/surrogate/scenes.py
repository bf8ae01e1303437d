"""The cloth scenes by name: ``sheet`` (:mod:`animat.surrogate.sheet`), ``flag`` (:mod:`animat.surrogate.flag`)
and ``cape`` (:mod:`animat.surrogate.cape`)."""

from __future__ import annotations

from typing import Any

from animat.config import require
from animat.surrogate.cape import CapeScene
from animat.surrogate.flag import FlagScene
from animat.surrogate.sheet import SheetScene


SCENES = {"sheet": SheetScene, "flag": FlagScene, "cape": CapeScene}


def get_scene(name: str, /, **overrides: Any) -> SheetScene:
    """The scene called ``name`` with option overrides; ConfigError names the choices (and refuses a
    ``name`` among the overrides)."""
    return SCENES[require("scene", name, choices=SCENES)].build(**overrides)


def scene_from_dict(options: dict) -> SheetScene:
    """The scene stored in a dataset's or run's JSON (``name`` plus its options)."""
    options = dict(options)
    return get_scene(options.pop("name"), **options)
