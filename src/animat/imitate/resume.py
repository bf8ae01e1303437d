"""The full PPO training state as safe files, so that ``animat imitate train --resume RUN_DIR`` continues a run.

``checkpoints/train_state.npz`` holds plain arrays (no pickle): every tensor of the SB3 policy's
``state_dict`` (actor, critic, log std) as ``policy.<name>``, every tensor of the Adam optimiser's
per-parameter state (``step``, ``exp_avg``, ``exp_avg_sq``) as ``optim.<index>.<key>``, and the
observation normaliser's running mean and variance. ``train_state.json`` holds the rest: the
optimiser's ``param_groups`` (learning rate, betas, …), the normaliser's sample count, the step
counter ``num_timesteps``, the number of gradient updates, the run's earlier training seconds, and the
SHA-256 of the ``.npz`` (checked on load; see :func:`animat.imitate.policy.read_arrays`).
SB3's own ``model.save`` zip (pickles) is never written or read.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from animat.errors import CheckpointError, ConfigError
from animat.imitate.policy import read_arrays, write_arrays

FORMAT = "animat-imitate-train-state/1"
STEM = Path("checkpoints") / "train_state"  # inside a run directory


def save_train_state(path: str | os.PathLike, model, vec_normalize=None, **counters) -> Path:
    """Write ``<path>.npz`` + ``<path>.json`` for PPO ``model`` (+ its ``VecNormalize``); ``counters``: extra JSON numbers."""
    arrays = {f"policy.{k}": v.detach().cpu().numpy().copy() for k, v in model.policy.state_dict().items()}
    opt = model.policy.optimizer.state_dict()
    for index, slots in opt["state"].items():
        for key, value in slots.items():
            arrays[f"optim.{index}.{key}"] = value.detach().cpu().numpy().copy() if hasattr(value, "detach") else np.asarray(value)
    norm = vec_normalize is not None and vec_normalize.norm_obs
    if norm:
        arrays["obs_rms.mean"] = np.asarray(vec_normalize.obs_rms.mean, dtype=np.float64).copy()
        arrays["obs_rms.var"] = np.asarray(vec_normalize.obs_rms.var, dtype=np.float64).copy()
    manifest = {
        "format": FORMAT,
        "num_timesteps": int(model.num_timesteps),
        "n_updates": int(model._n_updates),
        "param_groups": [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in opt["param_groups"]],
        "obs_rms_count": float(vec_normalize.obs_rms.count) if norm else None,
        **counters,
    }
    return write_arrays(path, arrays, manifest)


def load_train_state(run_dir: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and manifest saved in ``run_dir`` (CheckpointError if missing, changed or of another format)."""
    return read_arrays(Path(run_dir) / STEM, FORMAT, "training state")


def resumable_state(run_dir: str | os.PathLike, timesteps: int) -> tuple[dict[str, np.ndarray], dict]:
    """:func:`load_train_state`, refused (ConfigError) unless the run is short of ``timesteps`` (the new total)."""
    arrays, manifest = load_train_state(run_dir)
    done = int(manifest["num_timesteps"])
    if timesteps <= done:
        raise ConfigError(f"the run in {str(run_dir)!r} is at {done} timesteps already; pass --timesteps > {done} to continue it")
    return arrays, manifest


def restore_train_state(model, vec_normalize, arrays: dict[str, np.ndarray], manifest: dict) -> None:
    """Load saved policy, optimiser, normaliser and counters into a freshly built PPO ``model`` of the same shape."""
    import torch

    policy = {k[len("policy."):]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith("policy.")}
    try:
        model.policy.load_state_dict(policy)
    except RuntimeError as exc:
        raise CheckpointError(f"saved training state does not fit this network ({str(exc).splitlines()[0]})") from None
    state: dict[int, dict] = {}
    for k, v in arrays.items():
        if k.startswith("optim."):
            _, index, key = k.split(".", 2)
            state.setdefault(int(index), {})[key] = torch.from_numpy(np.array(v))
    groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()} for g in manifest["param_groups"]]
    model.policy.optimizer.load_state_dict({"state": state, "param_groups": groups})
    if vec_normalize is not None and vec_normalize.norm_obs:
        if "obs_rms.mean" not in arrays:
            raise CheckpointError("saved training state has no observation normaliser, but the run normalises observations")
        vec_normalize.obs_rms.mean = arrays["obs_rms.mean"].copy()
        vec_normalize.obs_rms.var = arrays["obs_rms.var"].copy()
        vec_normalize.obs_rms.count = float(manifest["obs_rms_count"])
    model.num_timesteps = int(manifest["num_timesteps"])
    model._n_updates = int(manifest["n_updates"])
