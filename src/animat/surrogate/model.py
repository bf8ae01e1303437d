"""The subspace neural physics step, in JAX.

Given the two previous subspace states ``z1 = z_{t-1}``, ``z0 = z_{t-2}`` and the external input
``w_t`` (for the sheet: the sphere's position and its change since the last frame, (6,); see
:func:`external_input`):

    zbar = alpha * z1 + beta * (z1 - z0)                       (alpha/beta baseline)
    z_t  = zbar + out_std * f((concat(zbar, z1, w_t) - in_mean) / in_std) + out_mean

``f`` is an MLP of ``layers`` dense layers (ReLU between them, linear output) whose hidden width is
``hidden_mult`` x the subspace size. All arrays live in one flat dict (``Surrogate.arrays``) so a
checkpoint is a plain ``.npz`` plus a JSON manifest: no pickle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from animat import runs
from animat.errors import CheckpointError
from animat.surrogate.cape import cape_input
from animat.surrogate.character_input import character_input
from animat.surrogate.garment import GARMENT_SCENES
from animat.surrogate.inputs import network_input

MANIFEST_VERSION = 1


def external_input(Y: np.ndarray, scene: str = "sheet") -> np.ndarray:
    """Recorded external state Y (T, y) -> network input w (T, w_dim) float32.

    sheet/flag: Y (T, 3) sphere centre m / wind m/s -> w = [Y_t, Y_t - Y_{t-1}] (T, 6).
    cape: Y (T, 7) body position m and quaternion (w, x, y, z) -> the body-frame inputs of
    :func:`animat.surrogate.cape.cape_input` (T, 15). The garments on the character (``cape-character``,
    ``skirt-character``): Y (T, 105) its body frames -> its joints and root motion in the root frame,
    :func:`animat.surrogate.character_input.character_input` (T, 99). The first frame has zero change."""
    if scene == "cape":
        return cape_input(Y)
    if scene in GARMENT_SCENES:
        return character_input(Y)
    Y = np.asarray(Y, np.float32)
    dY = np.concatenate([np.zeros_like(Y[:1]), np.diff(Y, axis=0)])
    return np.concatenate([Y, dY], axis=-1)


def init_mlp(key: jax.Array, n_in: int, n_out: int, hidden: int, layers: int) -> dict:
    """He-initialised weights ``W{i}`` (in, out) and zero biases ``b{i}``; last layer scaled down so
    the untrained network starts close to the alpha/beta baseline."""
    sizes = [n_in] + [hidden] * (layers - 1) + [n_out]
    params = {}
    keys = jax.random.split(key, layers)
    for i in range(layers):
        scale = np.sqrt(2.0 / sizes[i]) * (0.01 if i == layers - 1 else 1.0)
        params[f"W{i}"] = scale * jax.random.normal(keys[i], (sizes[i], sizes[i + 1]), jnp.float32)
        params[f"b{i}"] = jnp.zeros((sizes[i + 1],), jnp.float32)
    return params


def mlp(params: dict, x: jax.Array) -> jax.Array:
    n = len(params) // 2
    for i in range(n):
        x = x @ params[f"W{i}"] + params[f"b{i}"]
        if i < n - 1:
            x = jax.nn.relu(x)
    return x


def step(params: dict, stats: dict, z0: jax.Array, z1: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One frame: returns (z_t, zbar_t); works on (k,) or batched (..., k) states."""
    zbar, x = network_input(stats, z0, z1, w, jnp)
    x = (x - stats["in_mean"]) / stats["in_std"]
    return zbar + mlp(params, x) * stats["out_std"] + stats["out_mean"], zbar


def rollout(params: dict, stats: dict, z0: jax.Array, z1: jax.Array, W: jax.Array) -> jax.Array:
    """Roll forward on the model's own predictions: W (T, ..., w) inputs for frames 2..T+1 ->
    (T, ..., k) predicted states for those frames (lax.scan over time)."""

    def body(carry, w):
        a, b = carry
        z, _ = step(params, stats, a, b, w)
        return (b, z), z

    _, Z = jax.lax.scan(body, (z0, z1), W)
    return Z


def alpha_beta_rollout(stats: dict, z0: jax.Array, z1: jax.Array, T: int) -> jax.Array:
    def body(carry, _):
        a, b = carry
        z = stats["alpha"] * b + stats["beta"] * (b - a)
        return (b, z), z

    _, Z = jax.lax.scan(body, (z0, z1), None, length=T)
    return Z


@dataclass
class Surrogate:
    """Network parameters, normalisation/alpha-beta statistics and the architecture."""

    params: dict
    stats: dict  # alpha, beta, in_mean, in_std, out_mean, out_std
    config: dict  # layers, hidden, components, w_dim, ...

    def save(self, folder: str | os.PathLike, extra: dict | None = None) -> Path:
        """``folder/model.npz`` (arrays), then ``folder/model.json`` (config, shapes, the npz's sha256,
        ``extra``), each atomically; a pair torn by a crash between the two is refused on load."""
        folder = Path(folder)
        arrays = {f"param/{k}": np.asarray(v) for k, v in self.params.items()}
        arrays.update({f"stat/{k}": np.asarray(v) for k, v in self.stats.items()})
        data = runs.npz_bytes(arrays)
        runs.atomic_write_bytes(folder / "model.npz", data)
        manifest = {
            "version": MANIFEST_VERSION,
            "config": self.config,
            "shapes": {k: list(v.shape) for k, v in arrays.items()},
            "sha256": runs.sha256_hex(data),
            **(extra or {}),
        }
        return runs.atomic_write_json(folder / "model.json", manifest)

    @classmethod
    def load(cls, folder: str | os.PathLike) -> Surrogate:
        folder = Path(folder)
        try:
            manifest = json.loads((folder / "model.json").read_text())
            version, config = manifest["version"], manifest["config"]
            data = (folder / "model.npz").read_bytes()
            if (
                "sha256" in manifest and runs.sha256_hex(data) != manifest["sha256"]
            ):  # (models saved before it have none)
                raise CheckpointError(
                    f"{str(folder / 'model.npz')!r} is corrupt or from another save (sha256 does not match model.json)"
                )
            arrays = runs.read_npz(folder / "model.npz", data=data, what="surrogate checkpoint")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"cannot read surrogate checkpoint in {str(folder)!r}: {exc!r}") from None
        if version != MANIFEST_VERSION:
            raise CheckpointError(
                f"checkpoint {str(folder)!r} has format version {version!r}; this animat reads version "
                f"{MANIFEST_VERSION}"
            )
        for k, shape in manifest.get("shapes", {}).items():
            if k not in arrays or list(arrays[k].shape) != shape:
                raise CheckpointError(f"checkpoint {str(folder)!r}: array {k!r} missing or of the wrong shape")
        params = {k.split("/", 1)[1]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("param/")}
        stats = {k.split("/", 1)[1]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("stat/")}
        return cls(params, stats, config)


def alpha_beta_only(surrogate: Surrogate) -> Surrogate:
    """The same model with the residual network switched off (last layer and output mean zero):
    :func:`rollout` with it is the alpha/beta baseline."""
    last = len(surrogate.params) // 2 - 1
    params = {
        **surrogate.params,
        f"W{last}": jnp.zeros_like(surrogate.params[f"W{last}"]),
        f"b{last}": jnp.zeros_like(surrogate.params[f"b{last}"]),
    }
    return Surrogate(
        params, {**surrogate.stats, "out_mean": jnp.zeros_like(surrogate.stats["out_mean"])}, dict(surrogate.config)
    )
