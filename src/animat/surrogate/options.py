"""Declared options of the surrogate's verbs: a training run (:class:`TrainConfig`, the ``[train]`` table of
a config file) and a dataset (:class:`GenerateOptions`, the ``[generate]`` table); the episode split into
training, validation and held-out episodes (:func:`split_episodes`) and a trained run's recorded
options (:func:`load_run_config`). Training itself: :mod:`animat.surrogate.train`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from animat import runs
from animat.config import option, read_options, require
from animat.errors import ConfigError

CLIP_FRAMES = 600  # a clip's default run (evaluate, play, divergence --clip): 10 s at the garment scenes' 60 fps


@dataclass(frozen=True)
class TrainConfig:
    data: str = option("", "Dataset folder made by 'generate'")
    components: int = option(64, "Subspace size", gt=0)
    epochs: int = option(100, "Epochs", gt=0)
    window: int = option(32, "Rollout window (frames)", ge=3)
    batch: int = option(16, "Windows per batch", gt=0)
    batches_per_epoch: int = option(0, "Batches per epoch (0: one pass, at most 200)")
    layers: int = option(10, "Layers of the residual network", gt=0)
    hidden_mult: float = option(1.5, "Hidden width as a multiple of the input's", gt=0)
    lr: float = option(1e-4, "Learning rate", gt=0, shown="1e-4")
    lr_decay: float = option(0.999, "Learning-rate decay per epoch", gt=0, le=1)
    noise_frac: float = option(0.01, "Noise on the starting frames, a fraction of the data's std", ge=0)
    noise_correlation: float = option(
        0.0, "Between the two starting frames' noise: 0 independent, 1 the same draw (no velocity noise)", ge=-1, le=1
    )
    input_noise_frac: float = option(
        0.0, "Noise on the external input while training, a fraction of each entry's std (0: none)", ge=0
    )
    velocity_weight: float = option(1.0, "Weight of the velocity term of the loss", ge=0)
    test_episodes: int = option(0, "Held-out episodes (0: 10 %, at least 1)")
    val_episodes: int = option(
        -1, "Validation episodes (-1: 10 % of the rest, at least 1, when 3 or more remain, else none)"
    )
    pca_samples: int = option(4000, "Frames the PCA is fitted on")
    checkpoint_every: int = option(10, "Epochs between checkpoints", gt=0)
    seed: int = option(0, "Random seed", ge=0)
    split_seed: int = option(
        0, "Episode split: 0 holds out the last episodes, another value shuffles them with this seed first", ge=0
    )
    motion_weighting: float = option(
        0.0, "0: windows drawn uniformly; lambda in (0, 1]: weighted by motion (animat.surrogate.windows)", ge=0, le=1
    )
    alpha_beta_frames: str = option(
        "all",
        "all | still: fit alpha/beta on every frame, or only where the external state is unchanged",
        choices=("all", "still"),
    )
    val_windows: int = option(256, "Best-epoch selection: this many evenly spaced validation windows (0: all)", ge=0)
    val_window: int = option(
        120, "... of this many frames (at most the shortest validation episode), the evaluation horizon", ge=3
    )
    long_window: int = option(0, "> 0: windows of this many frames ...", ge=0)
    long_epochs: int = option(0, "... for the last this many epochs", ge=0)
    settle_probes: int = option(
        0, "> 0: best epoch only among those that settle on this many random paths (animat.surrogate.settle)", ge=0
    )
    weight_decay: float = option(
        0.0, "Decoupled weight decay (Loshchilov & Hutter 2019) after the AMSGrad scaling; 0: plain AMSGrad", ge=0
    )
    rest_weight: float = option(0.0, "> 0: weight of the coming-to-rest term (animat.surrogate.rest) ...", ge=0)
    rest_seconds: float = option(20.0, "... on the motion this long after the external objects stop ...", gt=0)
    rest_states: int = option(64, "... from this many random training states, refreshed every epoch", gt=0)
    cloth_frame: str = option(
        "world",
        "world | azimuth: the flag in its own frame, its azimuth about the pole a state (animat.surrogate.frame)",
        choices=("world", "azimuth"),
    )
    # what a run's config.json records besides these options (animat.surrogate.train)
    RUN_RECORD: ClassVar[tuple[str, ...]] = (
        "scene",
        "train_episode_ids",
        "val_episode_ids",
        "test_episode_ids",
        "noise_std",
    )

    @classmethod
    def build(cls, config_file: str | Path | None = None, **options: Any) -> TrainConfig:
        """Defaults < the config file's ``[train]`` table (or its top level) < ``options`` (those that are options:
        a run's ``config.json`` also records :attr:`RUN_RECORD`)."""
        known = {f.name for f in fields(cls)}
        cfg = cls(
            **read_options(
                cls, config_file, {k: v for k, v in options.items() if k in known}, what="train option", table="train"
            )
        )
        if (
            cfg.batches_per_epoch < 0 or cfg.pca_samples < 1 or cfg.test_episodes < 0 or cfg.val_episodes < -1
        ):  # one message for the four, as before
            raise ConfigError(
                f"batches_per_epoch and test_episodes must be >= 0, pca_samples >= 1, val_episodes >= -1; got "
                f"{cfg.batches_per_epoch}, {cfg.test_episodes}, {cfg.pca_samples} and {cfg.val_episodes}"
            )
        if cfg.long_epochs:
            require("long_window (frames; with long_epochs > 0)", cfg.long_window, ge=3)
        return cfg


@dataclass(frozen=True)
class GenerateOptions:
    """``animat surrogate generate``: the ``[generate]`` table of a config file and the command line."""

    episodes: int = option(20, "Number of episodes", ge=1)
    frames: int = option(300, "Frames per episode at 60 fps", ge=1)
    seed: int = option(0, "Random seed", ge=0)
    workers: int = option(1, "Worker processes", ge=1)
    backend: str = option("local", "local | ray", choices=("local", "ray"))
    OPTION_NAME: ClassVar[str] = "{flag}"
    OPTION_TYPED: ClassVar[bool] = True


def split_episodes(
    n: int, test_episodes: int, val_episodes: int = 0, seed: int = 0
) -> tuple[list[int], list[int], list[int]]:
    """Training, validation and held-out episode indices: in that order along the episodes (``seed``
    0), or along the episodes shuffled by ``numpy.random.default_rng(seed)``; each list sorted."""
    n_test = int(test_episodes) if test_episodes else max(1, n // 10)
    if n < 2 or not 1 <= n_test < n:
        raise ConfigError(
            f"need at least one training and one held-out episode; have {n} episodes, test_episodes={test_episodes}"
        )
    rest = n - n_test
    n_val = (max(1, rest // 10) if rest >= 3 else 0) if val_episodes < 0 else int(val_episodes)
    if not 0 <= n_val < rest:
        raise ConfigError(f"val_episodes={val_episodes} leaves no training episode of the {rest} not held out")
    order = np.random.default_rng(seed).permutation(n) if seed else np.arange(n)
    train, val, test = (
        sorted(int(i) for i in part) for part in (order[: rest - n_val], order[rest - n_val : rest], order[rest:])
    )
    return train, val, test


def load_run_config(model_dir: str | Path, scene: str | None = None) -> dict:
    """The ``config.json`` of a run directory of ``animat surrogate train`` (its options, dataset,
    scene and episode split); CheckpointError when it is missing or corrupt, ConfigError when it names no
    scene or held-out episodes, or (``scene`` given) is of another scene."""
    path = Path(model_dir) / "config.json"
    cfg = runs.read_run_config(model_dir, "a run directory of 'animat surrogate train'")
    try:
        trained, _ = cfg["scene"]["name"], cfg["test_episode_ids"][0]
    except (KeyError, TypeError, IndexError) as exc:
        raise ConfigError(f"{str(path)!r} is not the config of 'animat surrogate train' ({exc!r})") from None
    if scene is not None and trained != scene:
        raise ConfigError(f"model {str(model_dir)!r} was trained on scene {trained!r}, not {scene!r}")
    return cfg
