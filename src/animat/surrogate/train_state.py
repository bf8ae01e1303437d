"""The state of a surrogate training run between epochs (:class:`Learner`: what each step changes;
:class:`TrainState`: epochs, metrics, baselines, the best epoch) and its exactly resumable checkpoint
``checkpoints/last/`` (:func:`save_last`, :func:`load_last`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from animat.checkpoint import read_checkpoint, save_checkpoint
from animat.errors import CheckpointError
from animat.surrogate.model import Surrogate


@dataclass
class Learner:
    """What every training step changes: the network's parameters, the optimiser's state, the PRNG key of
    the starting-frame noise and the NumPy generator of the window draws."""

    params: dict
    opt_state: Any
    noise_key: jax.Array
    rng: np.random.Generator


@dataclass
class Baselines:
    """Rollout losses (m) fixed for a run: the untrained network's on the held-out and training windows,
    alpha/beta alone on the held-out and selection windows (None in checkpoints that predate it)."""

    initial_test_loss_m: float
    initial_train_rollout_loss_m: float
    alpha_beta_test_loss_m: float
    alpha_beta_select_loss_m: float | None = None


@dataclass
class Best:
    """The kept checkpoint (``checkpoints/``): its epoch (counted from 1; 0: none yet), selection loss (m)
    and, with settle probes, its settle ratio (None without them)."""

    epoch: int = 0
    select_loss_m: float = float("inf")
    settle_ratio: float | None = None


@dataclass
class TrainState:
    """Epochs done, training seconds, the metrics rows so far, the baselines and the best epoch; saved in
    ``checkpoints/last/`` as the manifest's flat ``state`` table, in the keys earlier versions wrote."""

    epoch: int
    seconds: float
    rows: list[dict]
    baselines: Baselines
    best: Best = field(default_factory=Best)

    def to_meta(self) -> dict:
        b = self.baselines
        meta = {
            "epoch": self.epoch,
            "best_epoch": self.best.epoch,
            "best_select_loss_m": self.best.select_loss_m,
            "seconds": self.seconds,
            "initial_test_loss_m": b.initial_test_loss_m,
            "initial_train_rollout_loss_m": b.initial_train_rollout_loss_m,
            "alpha_beta_test_loss_m": b.alpha_beta_test_loss_m,
            "rows": self.rows,
            "alpha_beta_select_loss_m": b.alpha_beta_select_loss_m,
        }
        if self.best.settle_ratio is not None:
            meta["best_settle_ratio"] = self.best.settle_ratio
        return meta

    @classmethod
    def from_meta(cls, meta: dict) -> TrainState:
        baselines = Baselines(
            meta["initial_test_loss_m"],
            meta["initial_train_rollout_loss_m"],
            meta["alpha_beta_test_loss_m"],
            meta.get("alpha_beta_select_loss_m"),
        )
        best = Best(int(meta["best_epoch"]), meta["best_select_loss_m"], meta.get("best_settle_ratio"))
        return cls(int(meta["epoch"]), meta["seconds"], list(meta["rows"]), baselines, best)


def save_last(folder: Path, model: Surrogate, learner: Learner, state: TrainState) -> None:
    """The latest epoch, exactly resumable, as one checkpoint (a new name per epoch, then the
    ``latest.json`` pointer): network, statistics, optimiser leaves, PRNG key, NumPy rng state and
    ``state``. Only the latest is kept, so a damaged one is refused rather than replaced by an older epoch."""
    arrays = {f"param/{k}": np.asarray(v) for k, v in model.params.items()}
    arrays.update({f"stat/{k}": np.asarray(v) for k, v in model.stats.items()})
    arrays.update({f"opt/{i:04d}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(learner.opt_state))})
    meta = {"config": model.config, "state": {**state.to_meta(), "rng": learner.rng.bit_generator.state}}
    save_checkpoint(folder, state.epoch, {**arrays, "noise_key": np.asarray(learner.noise_key)}, meta, keep=1)


def load_last(folder: Path) -> tuple[dict, dict]:
    """``(arrays by group, meta)`` of the checkpoint written by :func:`save_last`: groups ``param``,
    ``stat``, ``opt`` (leaves in order) and ``noise_key``."""
    arrays, meta = read_checkpoint(folder)
    groups: dict[str, Any] = {"param": {}, "stat": {}, "opt": {}, "noise_key": arrays.pop("noise_key", None)}
    for name, value in arrays.items():
        group, _, key = name.partition("/")
        groups.setdefault(group, {})[key] = value
    if groups["noise_key"] is None or "state" not in meta:
        raise CheckpointError(f"{str(folder)!r} is not a surrogate training checkpoint")
    groups["opt"] = [groups["opt"][key] for key in sorted(groups["opt"])]
    return groups, meta
