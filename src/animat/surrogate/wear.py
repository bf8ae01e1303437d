"""A learned garment worn by a character another system moves (:class:`animat.character.wear.Garment`): the cape or
skirt of ``animat surrogate train cape-character|skirt-character`` run live on the body frames it is given.

The character's frames drive the trained model exactly as the body frames of the scene's own reference do
(:meth:`animat.surrogate.garment.GarmentScene.recorded_states`: the same 15 bodies in skeleton order), so anything
that moves DeepMimic's humanoid3d can wear it: the garment starts from its rest shape on the standing character,
settles for the scene's warm-up while the character holds its first pose, then follows it frame by frame
(:class:`animat.surrogate.play.Player`: the subspace step, decompression, the projection out of the capsules).
"""

from __future__ import annotations

import numpy as np

from animat.errors import ConfigError
from animat.pretrained import resolve
from animat.surrogate.garment import GarmentScene
from animat.surrogate.options import load_run_config
from animat.surrogate.play import Model, Player, load_model
from animat.surrogate.scenes import SCENES, rest_frame


class LearnedGarment:
    """A trained garment model as :class:`animat.character.wear.Garment`; ``seconds``: the wall time of each
    frame's runtime call (the subspace step to the projected vertices), s."""

    def __init__(self, model: Model, label: str):
        self.model, self.scene = model, model.runtime.scene
        self.name, self.fps = f"{self.scene.name} ({label})", float(self.scene.fps)
        self.warmup_frames = int(self.scene.warmup_frames)
        self.rest, self.triangles = rest_frame(self.scene)
        self.player: Player | None = None
        self.seconds: list[float] = []

    def start(self, frames: np.ndarray) -> np.ndarray:
        """The rest shape (the scene's own start) on the character at ``frames (105,)``; world vertices (V, 3) m."""
        frames = np.asarray(frames, np.float32)
        self.player, self.seconds = Player(self.model, self.rest, frames), []
        return self.scene.world(self.rest, frames)

    def step(self, frames: np.ndarray) -> np.ndarray:
        """The next frame's world vertices (V, 3) m on the character at ``frames (105,)``."""
        if self.player is None:
            raise ConfigError("a garment steps only after start()")
        frames = np.asarray(frames, np.float32)
        seconds, _, X, _ = self.player.step(frames)
        self.seconds.append(seconds)
        return self.scene.world(np.array(X), frames)


def open_garment(source: str) -> LearnedGarment:
    """The learned garment of training run ``source`` (a directory or ``pretrained:NAME``); a one-line error for a
    run that is not a garment's (a sheet, flag or capsule cape)."""
    model_dir = resolve(source)
    scene = load_run_config(model_dir)["scene"]["name"]
    if not issubclass(SCENES.get(scene, object), GarmentScene):
        raise ConfigError(f"--garment {source!r}: a model of the {scene!r} scene, not of a garment on the character")
    return LearnedGarment(load_model(model_dir, scene), str(source))
