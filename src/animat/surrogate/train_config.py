"""Options of a surrogate training run (:class:`TrainConfig`, the ``[train]`` table of a config
file, checked on construction) and the episode split into training, validation and held-out
episodes (:func:`split_episodes`). Training itself: :mod:`animat.surrogate.train`."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Optional

import numpy as np

from animat import runs
from animat.config import check_types, load_toml
from animat.errors import ConfigError


@dataclass(frozen=True)
class TrainConfig:
    data: str = ""
    components: int = 64
    epochs: int = 100
    window: int = 32
    batch: int = 16
    batches_per_epoch: int = 0  # 0: one pass over all windows (at most 200 batches)
    layers: int = 10
    hidden_mult: float = 1.5
    lr: float = 1e-4
    lr_decay: float = 0.999
    noise_frac: float = 0.01
    noise_correlation: float = 0.0  # between the two starting frames' noise: 0 independent, 1 the same draw (no velocity noise)
    velocity_weight: float = 1.0
    test_episodes: int = 0  # 0: 10 % of the episodes, at least 1
    val_episodes: int = -1  # -1: 10 % of the rest (at least 1) when 3 or more remain, else none
    pca_samples: int = 4000
    checkpoint_every: int = 10
    seed: int = 0
    split_seed: int = 0  # 0: the last episodes held out; otherwise the episodes shuffled with this seed before the split
    motion_weighting: float = 0.0  # 0: windows drawn uniformly; lambda in (0, 1]: weighted by motion (animat.surrogate.windows)
    alpha_beta_frames: str = "all"  # all | still: fit alpha/beta on every frame, or only where the external state is unchanged
    val_windows: int = 256  # best-epoch selection: this many evenly spaced validation windows (0: all)
    val_window: int = 120  # ... of this many frames (at most the shortest validation episode), the evaluation horizon
    long_window: int = 0  # > 0: windows of this many frames ...
    long_epochs: int = 0  # ... for the last this many epochs
    settle_probes: int = 0  # > 0: best epoch only among those that settle on this many random paths (animat.surrogate.settle)
    weight_decay: float = 0.0  # decoupled weight decay (Loshchilov & Hutter 2019) after the AMSGrad scaling; 0: plain AMSGrad
    rest_weight: float = 0.0  # > 0: weight of the coming-to-rest term (animat.surrogate.rest) ...
    rest_seconds: float = 20.0  # ... on the motion this long after the external objects stop ...
    rest_states: int = 64  # ... from this many random training states, refreshed every epoch
    cloth_frame: str = "world"  # world | azimuth: the flag in its own frame, its azimuth about the pole a state (animat.surrogate.frame)
    # what a run's config.json records besides these options (animat.surrogate.train)
    RUN_RECORD: ClassVar[tuple[str, ...]] = ("scene", "train_episode_ids", "val_episode_ids", "test_episode_ids", "noise_std")

    @classmethod
    def build(cls, config_file: Optional[str | Path] = None, **options: Any) -> "TrainConfig":
        values: dict[str, Any] = {}
        known = {f.name for f in fields(cls)}
        if config_file is not None:
            loaded = load_toml(config_file)
            loaded = loaded.get("train", loaded)
            unknown = sorted(set(loaded) - known)
            if unknown:
                raise ConfigError(f"unknown train option(s) {unknown} in {str(config_file)!r}; expected some of {sorted(known)}")
            values.update(loaded)
        values.update({k: v for k, v in options.items() if v is not None and k in known})
        check_types(cls, values)
        cfg = replace(cls(), **values)
        for name in ("components", "epochs", "window", "batch", "layers", "checkpoint_every"):
            if int(getattr(cfg, name)) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(cfg, name)}")
        if cfg.window < 3:
            raise ConfigError(f"window must be >= 3 frames, got {cfg.window}")
        if not -1.0 <= cfg.noise_correlation <= 1.0:
            raise ConfigError(f"noise_correlation must be within [-1, 1], got {cfg.noise_correlation}")
        if not cfg.lr > 0:
            raise ConfigError(f"lr must be > 0, got {cfg.lr}")
        if not 0.0 <= cfg.motion_weighting <= 1.0:
            raise ConfigError(f"motion_weighting must be within [0, 1], got {cfg.motion_weighting}")
        if cfg.alpha_beta_frames not in ("all", "still"):
            raise ConfigError(f"alpha_beta_frames must be 'all' or 'still', got {cfg.alpha_beta_frames!r}")
        if cfg.long_window < 0 or cfg.long_epochs < 0 or (cfg.long_epochs and cfg.long_window < 3):
            raise ConfigError(f"long_window must be >= 3 frames and long_epochs >= 0, got {cfg.long_window} and {cfg.long_epochs}")
        if cfg.seed < 0 or cfg.split_seed < 0:
            raise ConfigError(f"seed and split_seed must be >= 0, got {cfg.seed} and {cfg.split_seed}")
        if not cfg.weight_decay >= 0:
            raise ConfigError(f"weight_decay must be >= 0, got {cfg.weight_decay}")
        if cfg.cloth_frame not in ("world", "azimuth"):
            raise ConfigError(f"cloth_frame must be 'world' or 'azimuth', got {cfg.cloth_frame!r}")
        if not cfg.rest_weight >= 0 or not cfg.rest_seconds > 0 or cfg.rest_states <= 0:
            raise ConfigError(f"rest_weight must be >= 0, rest_seconds > 0 and rest_states > 0, got {cfg.rest_weight}, {cfg.rest_seconds} and {cfg.rest_states}")
        if cfg.settle_probes < 0:
            raise ConfigError(f"settle_probes must be >= 0, got {cfg.settle_probes}")
        if cfg.batches_per_epoch < 0 or cfg.pca_samples < 1 or cfg.test_episodes < 0 or cfg.val_episodes < -1:
            raise ConfigError(f"batches_per_epoch and test_episodes must be >= 0, pca_samples >= 1, val_episodes >= -1; got "
                              f"{cfg.batches_per_epoch}, {cfg.test_episodes}, {cfg.pca_samples} and {cfg.val_episodes}")
        if not (cfg.hidden_mult > 0 and 0 < cfg.lr_decay <= 1 and cfg.noise_frac >= 0 and cfg.velocity_weight >= 0):
            raise ConfigError(f"hidden_mult must be > 0, lr_decay in (0, 1], noise_frac and velocity_weight >= 0; got "
                              f"{cfg.hidden_mult}, {cfg.lr_decay}, {cfg.noise_frac} and {cfg.velocity_weight}")
        if cfg.val_windows < 0 or cfg.val_window < 3:
            raise ConfigError(f"val_windows must be >= 0 and val_window >= 3, got {cfg.val_windows} and {cfg.val_window}")
        return cfg


def split_episodes(n: int, test_episodes: int, val_episodes: int = 0, seed: int = 0) -> tuple[list[int], list[int], list[int]]:
    """Training, validation and held-out episode indices: in that order along the episodes (``seed``
    0), or along the episodes shuffled by ``numpy.random.default_rng(seed)``; each list sorted."""
    n_test = int(test_episodes) if test_episodes else max(1, n // 10)
    if n < 2 or not 1 <= n_test < n:
        raise ConfigError(f"need at least one training and one held-out episode; have {n} episodes, test_episodes={test_episodes}")
    rest = n - n_test
    n_val = (max(1, rest // 10) if rest >= 3 else 0) if val_episodes < 0 else int(val_episodes)
    if not 0 <= n_val < rest:
        raise ConfigError(f"val_episodes={val_episodes} leaves no training episode of the {rest} not held out")
    order = np.random.default_rng(seed).permutation(n) if seed else np.arange(n)
    train, val, test = (sorted(int(i) for i in part) for part in (order[: rest - n_val], order[rest - n_val : rest], order[rest:]))
    return train, val, test


def load_run_config(model_dir: str | Path, scene: Optional[str] = None) -> dict:
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
