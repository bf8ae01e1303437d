"""Trained policies as safe files: weights in ``.npz`` (plain arrays, no pickle) + a JSON manifest.

Stable-Baselines3 saves models as zip files holding pickles, and unpickling a file runs whatever
code it names, so ``animat imitate`` never writes or reads them. It saves the policy's
``state_dict`` tensors as NumPy arrays (``policy.npz``, read with ``allow_pickle=False``) together
with the observation normaliser's running mean and variance, and describes the network in
``policy.json``: an :mod:`animat.checkpoint` manifest of kind ``imitate-policy`` (the npz's
SHA-256 and every array's shape and dtype, all checked on load) whose ``meta`` holds the format,
sizes, layers and activation. From these
:class:`SavedPolicy` computes the deterministic action in NumPy (no torch needed to play a policy),
and :func:`to_sb3_policy` rebuilds the SB3 ``ActorCriticPolicy`` (needs the ``rl`` extra).

Deterministic action: ``clip(action_net(pi_mlp(normalise(obs))), low, high)`` with
``normalise(o) = clip((o − mean) / sqrt(var + eps), −clip_obs, clip_obs)``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.checkpoint import read_checkpoint, write_checkpoint
from animat.errors import CheckpointError
from animat.imitate.options import TrainConfig

FORMAT = "animat-imitate-policy/1"
KIND = "imitate-policy"
ACTIVATIONS = ("relu", "tanh")


@dataclass(frozen=True)
class SavedPolicy:
    """A policy read back from ``policy.npz`` + ``policy.json``; ``act(obs)`` is deterministic."""

    arrays: dict[str, np.ndarray]  # the SB3 state_dict as arrays, plus obs_rms.mean / obs_rms.var
    manifest: dict[str, Any]  # the checkpoint manifest's ``meta``

    @property
    def obs_dim(self) -> int:
        return int(self.manifest["obs_dim"])

    @property
    def act_dim(self) -> int:
        return int(self.manifest["act_dim"])

    def normalise(self, obs: np.ndarray) -> np.ndarray:
        m = self.manifest["obs_norm"]
        if not m["enabled"]:
            return np.asarray(obs, dtype=np.float32)
        mean, var = self.arrays["obs_rms.mean"], self.arrays["obs_rms.var"]
        z = (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var + float(m["epsilon"]))
        return np.clip(z, -float(m["clip_obs"]), float(m["clip_obs"])).astype(np.float32)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic action(s) for ``obs (..., obs_dim)``: the Gaussian's mean, clipped to the bounds."""
        obs = np.asarray(obs, dtype=np.float32)
        if obs.shape[-1] != self.obs_dim:
            raise CheckpointError(f"policy expects observations of size {self.obs_dim}, got {obs.shape[-1]}")
        x = self.normalise(obs)
        act = np.maximum if self.manifest["activation"] == "relu" else None
        for i in _layer_indices(self.arrays, "mlp_extractor.policy_net"):
            x = (
                x @ self.arrays[f"mlp_extractor.policy_net.{i}.weight"].T
                + self.arrays[f"mlp_extractor.policy_net.{i}.bias"]
            )
            x = np.maximum(x, 0.0) if act is not None else np.tanh(x)
        a = x @ self.arrays["action_net.weight"].T + self.arrays["action_net.bias"]
        return np.clip(a, self.manifest["action_low"], self.manifest["action_high"]).astype(np.float32)


def _layer_indices(arrays: dict[str, np.ndarray], prefix: str) -> list[int]:
    pat = re.compile(re.escape(prefix) + r"\.(\d+)\.weight$")
    return sorted(int(m.group(1)) for k in arrays if (m := pat.match(k)))


def policy_arrays(model, vec_normalize=None) -> dict[str, np.ndarray]:
    """The arrays to save from an SB3 PPO ``model`` (and its ``VecNormalize``, if any)."""
    arrays = {k: v.detach().cpu().numpy().copy() for k, v in model.policy.state_dict().items()}
    if vec_normalize is not None and vec_normalize.norm_obs:
        arrays["obs_rms.mean"] = np.asarray(vec_normalize.obs_rms.mean, dtype=np.float64).copy()
        arrays["obs_rms.var"] = np.asarray(vec_normalize.obs_rms.var, dtype=np.float64).copy()
    return arrays


def save_policy(
    path: str | os.PathLike,
    model,
    vec_normalize=None,
    *,
    net_arch: list[int],
    activation: str,
    extra: dict | None = None,
) -> Path:
    """Write ``<path>.npz`` and its manifest ``<path>.json`` (``path`` without suffix); returns the ``.npz`` path."""
    import stable_baselines3

    arrays = policy_arrays(model, vec_normalize)
    norm = vec_normalize is not None and vec_normalize.norm_obs
    manifest = {
        "format": FORMAT,
        "obs_dim": int(model.observation_space.shape[0]),
        "act_dim": int(model.action_space.shape[0]),
        "net_arch": [int(n) for n in net_arch],
        "activation": activation,
        "action_low": np.asarray(model.action_space.low, dtype=float).tolist(),
        "action_high": np.asarray(model.action_space.high, dtype=float).tolist(),
        "obs_norm": {
            "enabled": bool(norm),
            "clip_obs": float(vec_normalize.clip_obs) if norm else None,
            "epsilon": float(vec_normalize.epsilon) if norm else None,
        },
        "num_timesteps": int(model.num_timesteps),
        "stable_baselines3": stable_baselines3.__version__,
        **(extra or {}),
    }
    path = Path(path)
    return write_checkpoint(path.with_name(path.name + ".json"), arrays, KIND, manifest).with_suffix(".npz")


def load_policy(path: str | os.PathLike) -> SavedPolicy:
    """Read ``policy.npz`` + ``policy.json`` (give either file, the stem, or a run directory holding them).

    Never unpickles: :func:`~animat.checkpoint.read_checkpoint` reads the arrays with
    ``allow_pickle=False`` and checks them against the manifest's checksum, shapes and dtypes; the layer
    sizes are checked against ``net_arch``. Raises :class:`CheckpointError` with the reason on anything amiss.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "policy"
    stem = path.with_suffix("") if path.suffix in (".npz", ".json") else path
    js, npz = stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".npz")
    arrays, manifest = read_checkpoint(js, kind=KIND)
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"{str(js)!r}: policy format {manifest.get('format')!r}, expected {FORMAT!r}")
    if manifest.get("activation") not in ACTIVATIONS:
        raise CheckpointError(f"{str(js)!r}: activation {manifest.get('activation')!r} not one of {ACTIVATIONS}")
    pol = SavedPolicy(arrays, manifest)
    layers = _layer_indices(arrays, "mlp_extractor.policy_net")
    sizes = [arrays[f"mlp_extractor.policy_net.{i}.weight"].shape for i in layers]
    want = list(zip(manifest["net_arch"], [pol.obs_dim] + manifest["net_arch"][:-1]))
    if (
        [tuple(s) for s in sizes] != [tuple(w) for w in want]
        or "action_net.weight" not in arrays
        or arrays["action_net.weight"].shape != (pol.act_dim, (manifest["net_arch"] or [pol.obs_dim])[-1])
    ):
        raise CheckpointError(
            f"{str(npz)!r}: layer shapes {sizes} do not match net_arch {manifest['net_arch']} in {js.name}"
        )
    return pol


def to_sb3_policy(saved: SavedPolicy):
    """Rebuild the Stable-Baselines3 ``ActorCriticPolicy`` (CPU) from a :class:`SavedPolicy`.

    Feed it *normalised* observations (``saved.normalise(obs)``), as SB3 does behind ``VecNormalize``.
    """
    import gymnasium as gym
    import torch
    from stable_baselines3.common.policies import ActorCriticPolicy

    m = saved.manifest
    obs_space = gym.spaces.Box(-np.inf, np.inf, shape=(saved.obs_dim,), dtype=np.float32)
    act_space = gym.spaces.Box(
        np.array(m["action_low"], np.float32), np.array(m["action_high"], np.float32), dtype=np.float32
    )
    arch = list(m["net_arch"])
    policy = ActorCriticPolicy(
        obs_space,
        act_space,
        lambda _: 0.0,
        net_arch=dict(pi=arch, vf=list(m.get("vf_arch", arch))),
        activation_fn=torch.nn.ReLU if m["activation"] == "relu" else torch.nn.Tanh,
    )
    state = {k: torch.from_numpy(np.asarray(v)) for k, v in saved.arrays.items() if not k.startswith("obs_rms.")}
    policy.load_state_dict(state)
    policy.set_training_mode(False)
    return policy


def load_run(run_dir: Path):
    """(TrainConfig, SavedPolicy) of a training run directory."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(
            f"{str(run_dir)!r} is not a directory; give a run directory written by animat imitate train"
        )
    return training_config(run_dir), load_policy(run_dir / "policy")


def training_config(run_dir: Path, clip: str | None = None):
    """The TrainConfig of a training run directory (its ``config.json``; the clip replaced by ``clip`` when given).
    CheckpointError in one line for a missing or corrupt config.json, another system's run (its config sets keys a
    TrainConfig lacks) and a config that does not build."""

    stored = runs.read_run_config(run_dir, "an imitate training run directory")
    foreign = runs.foreign_keys(stored, TrainConfig)
    if foreign:
        raise CheckpointError(
            f"{str(run_dir)!r} is not an imitation run (its config.json sets {', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); give a run written by animat imitate train, or pretrained:NAME"
        )
    if clip is not None:
        stored["clip"] = str(clip)
    try:
        return TrainConfig.build(None, **stored)
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{str(run_dir / 'config.json')!r} is not a training config ({exc})") from None
