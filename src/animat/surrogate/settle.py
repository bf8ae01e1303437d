"""Settling probe for best-epoch selection (``settle_probes`` in the training config).

The surrogate is rolled ``DRIVE_FRAMES`` frames along ``n`` fresh random paths of the scene's
external objects (seeds ``1 .. n``: never the path of ``evaluate``'s stability check, seed 12345),
then ``SETTLE_FRAMES`` frames with the external objects stopped (``scene.stopped``), from two given starting states, all
paths in one batched, jitted rollout. Per path, the settle ratio is the one of
:func:`animat.surrogate.evaluate.stability_check`: mean |z_t - z_{t-1}| over the last second
divided by its mean while driven (the basis is orthonormal, so a ratio of RMS vertex speeds); a
non-finite rollout scores infinity. Training keeps the epoch with the lowest validation loss among
those whose worst probe ratio is <= ``SETTLE_LIMIT``, or the lowest validation loss when none is.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from animat.surrogate.model import external_input, rollout

DRIVE_FRAMES = 2000
SETTLE_FRAMES = 600
SETTLE_LIMIT = 0.1  # the acceptance value evaluate uses


def drive_then_stop(scene, drive_frames: int, settle_frames: int, seed: int) -> np.ndarray:
    """(drive_frames + settle_frames, w) network inputs: the scene's random path for ``seed`` (after
    its warm-up), then its external objects stopped where they are (``scene.stopped``)."""
    Y = scene.recorded_states(scene.controls(int(drive_frames), np.random.default_rng(seed))[scene.warmup_frames :])
    Y = np.concatenate([Y, np.repeat(scene.stopped(Y[-1:]), int(settle_frames), axis=0)])
    return external_input(Y, scene.name)


def settle_ratio(Z, drive_frames: int, last: int, xp=np):
    """Z (T - 2, ..., k): a rollout from frames 0, 1 of :func:`drive_then_stop`'s inputs. Mean
    |z_t - z_{t-1}| over the last ``last`` frames over its mean while driven, per path (``xp``:
    numpy, or jax.numpy inside a jitted function)."""
    speed = xp.linalg.norm(xp.diff(Z, axis=0), axis=-1)
    driven = xp.maximum(speed[: int(drive_frames) - 3].mean(0), 1e-12)
    return speed[-int(last) :].mean(0) / driven


def probe_inputs(scene, paths: int) -> np.ndarray:
    """(DRIVE_FRAMES + SETTLE_FRAMES, paths, w) network inputs: random drives, then stopped."""
    return np.stack(
        [drive_then_stop(scene, DRIVE_FRAMES, SETTLE_FRAMES, seed) for seed in range(1, int(paths) + 1)], axis=1
    )


def make_probe(
    stats: dict, inputs: np.ndarray, z0: np.ndarray, z1: np.ndarray, fps: int
) -> Callable[[dict], np.ndarray]:
    """params -> (paths,) settle ratios, for inputs (T, paths, w) from :func:`probe_inputs` and the
    starting states z0, z1 (k,) (compiled once)."""
    paths = inputs.shape[1]
    a, b = jnp.tile(jnp.asarray(z0)[None], (paths, 1)), jnp.tile(jnp.asarray(z1)[None], (paths, 1))
    W = jnp.asarray(inputs[2:])
    last = min(int(fps), SETTLE_FRAMES)

    @jax.jit
    def ratios(params):
        Z = rollout(params, stats, a, b, W)  # (T - 2, paths, k)
        r = settle_ratio(Z, DRIVE_FRAMES, last, jnp)
        return jnp.where(jnp.all(jnp.isfinite(Z), axis=(0, 2)), r, jnp.inf)

    return lambda params: np.asarray(ratios(params))
