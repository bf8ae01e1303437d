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


def widen_inputs(weights: dict, wanted: dict, added: int) -> dict:
    """``weights`` (a saved policy's tensors by name) for a network whose observation has ``added`` more entries at
    its end (a skill selector's one-hot, :mod:`animat.imitate.skills`): each first layer that reads the observation
    (``*.0.weight`` (H, D) in ``wanted``'s shapes (H, D + added)) gets zero weights for the new entries, so the
    widened network acts as the saved one did whatever the command; everything else unchanged."""
    import torch

    out = dict(weights)
    for key, w in weights.items():
        target = wanted.get(key)
        if (
            added
            and target is not None
            and key.endswith(".0.weight")
            and tuple(target.shape) == (w.shape[0], w.shape[1] + added)
        ):
            out[key] = torch.cat([w, torch.zeros(w.shape[0], added, dtype=w.dtype)], dim=1)
    return out


def warm_start(model, vec_normalize, source: str, added_inputs: int = 0) -> None:
    """Load the policy of ``source`` (a run directory, or ``pretrained:NAME``) into a freshly built PPO
    ``model``: actor, critic and action noise (replaced by a fixed ``action_std`` afterwards, where the
    config has one), and the observation normaliser's mean and variance, its count set to the source's
    timesteps so that new observations move it as slowly as they would have in the source run. The
    optimiser and the return normaliser start afresh. ``added_inputs``: entries the new observation has beyond the
    saved policy's, at its end (a skill selector started from a single-clip policy: :func:`widen_inputs`; the
    normaliser starts them at mean 0, variance 1). CheckpointError (one line) for a missing policy or one of another
    shape (network, character or observation)."""
    import torch

    saved = init_source(source)
    weights = {k: torch.from_numpy(np.array(v)) for k, v in saved.arrays.items() if not k.startswith("obs_rms.")}
    if added_inputs and saved.obs_dim + added_inputs == model.observation_space.shape[0]:
        weights = widen_inputs(weights, model.policy.state_dict(), added_inputs)
    else:
        added_inputs = 0
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
        vec_normalize.obs_rms.mean = np.concatenate([saved.arrays["obs_rms.mean"], np.zeros(added_inputs)])
        vec_normalize.obs_rms.var = np.concatenate([saved.arrays["obs_rms.var"], np.ones(added_inputs)])
        vec_normalize.obs_rms.count = float(max(saved.manifest.get("num_timesteps", 0), 1))
