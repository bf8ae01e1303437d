"""Starting a training run from a saved policy (``init_policy``, ``animat imitate train --from``): its
weights and observation normaliser go into a freshly built PPO model; the optimiser starts afresh."""

from __future__ import annotations

import numpy as np

from animat import pretrained
from animat.errors import CheckpointError
from animat.imitate.policy import load_policy


def init_source(source: str):
    """The :class:`~animat.imitate.policy.SavedPolicy` that ``init_policy`` names (a run directory or
    ``pretrained:NAME``); CheckpointError (one line) when there is none."""

    folder = pretrained.resolve(source)
    if not (folder / "policy.json").is_file():
        raise CheckpointError(
            f"init_policy {source!r}: no policy.json in {str(folder)!r}; give a run directory of animat imitate "
            "train, or pretrained:NAME"
        )
    return load_policy(folder / "policy")


def warm_start(model, vec_normalize, source: str) -> None:
    """Load the policy of ``source`` (a run directory, or ``pretrained:NAME``) into a freshly built PPO
    ``model``: actor, critic and action noise (replaced by a fixed ``action_std`` afterwards, where the
    config has one), and the observation normaliser's mean and variance, its count set to the source's
    timesteps so that new observations move it as slowly as they would have in the source run. The
    optimiser and the return normaliser start afresh. CheckpointError (one line) for a missing policy or
    one of another shape (network, character or observation)."""
    import torch

    saved = init_source(source)
    weights = {k: torch.from_numpy(np.array(v)) for k, v in saved.arrays.items() if not k.startswith("obs_rms.")}
    try:
        model.policy.load_state_dict(weights)
    except RuntimeError as exc:
        raise CheckpointError(
            f"init_policy {source!r} does not fit this run's network ({str(exc).splitlines()[0]})"
        ) from None
    norm = vec_normalize is not None and vec_normalize.norm_obs
    if norm != ("obs_rms.mean" in saved.arrays):
        raise CheckpointError(
            f"init_policy {source!r} {'has no' if norm else 'has an'} observation normaliser; this run "
            f"{'normalises' if norm else 'does not normalise'} observations (normalize_obs)"
        )
    if norm:
        vec_normalize.obs_rms.mean = saved.arrays["obs_rms.mean"].copy()
        vec_normalize.obs_rms.var = saved.arrays["obs_rms.var"].copy()
        vec_normalize.obs_rms.count = float(max(saved.manifest.get("num_timesteps", 0), 1))
