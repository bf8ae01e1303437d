"""The cloth scenes by name: ``sheet`` (:mod:`animat.surrogate.sheet`), ``flag`` (:mod:`animat.surrogate.flag`),
``cape`` (:mod:`animat.surrogate.cape`), and the garments on the moving character, ``cape-character`` and
``skirt-character`` (:mod:`animat.surrogate.garment`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from animat.config import require
from animat.surrogate.cape import CapeScene
from animat.surrogate.flag import FlagScene
from animat.surrogate.garment import CapeCharacterScene, SkirtCharacterScene
from animat.surrogate.sheet import SheetScene

SCENES = {
    "sheet": SheetScene,
    "flag": FlagScene,
    "cape": CapeScene,
    "cape-character": CapeCharacterScene,
    "skirt-character": SkirtCharacterScene,
}


def get_scene(name: str, /, **overrides: Any) -> SheetScene:
    """The scene called ``name`` with option overrides; ConfigError names the choices (and refuses a
    ``name`` among the overrides)."""
    return SCENES[require("scene", name, choices=SCENES)].build(**overrides)


def scene_from_dict(options: dict) -> SheetScene:
    """The scene stored in a dataset's or run's JSON (``name`` plus its options)."""
    options = dict(options)
    return get_scene(options.pop("name"), **options)


def rest_frame(scene) -> tuple[np.ndarray, np.ndarray]:
    """(rest positions (V, 3) m in the recorded frame, triangles (F, 3)). The rest grid is where MuJoCo
    starts the cloth, with the external object at its warm-up pose (for the cape, the torso at its
    start pose: X is recorded in the torso's frame)."""
    topo = scene.topology()
    return np.asarray(scene.record(topo["rest"], start_state(scene)), np.float32), topo["triangles"]


def start_state(scene) -> np.ndarray:
    """(y_dim,) the external object's recorded state Y during the scene's warm-up (the torso upright at the
    origin, facing +y; the sphere away from the cloth; a wind; the character standing in its rest pose)."""
    return scene.warmup_state()
