"""Coming to rest: a training term on the surrogate's motion long after the external objects stop
(``rest_weight`` in the training config).

Why: a reference cloth left alone comes to rest (the flag in still air: 0.00 mm/s mean vertex speed
after 20 s from any held-out state), but a learned step has no exact fixed point there, and where
the rest states form a continuum (the flag's azimuth about its pole, the many shapes a draped cloth
can rest in) a small residual integrates into a slow, endless creep (session 7's flag in its own
frame: 3.8 mm/s median, 11.8 largest, after 20 s of still air). The rollout loss never sees it: its windows
last 0.5-2 s.

What: a buffer of the states the current model reaches ``rest_seconds`` after the external objects
stop (:meth:`SheetScene.stopped`, from ``rest_states`` random training states; refreshed every epoch,
forward only, :func:`make_lead`), and a loss on the mean absolute subspace velocity ``|z_t - z_{t-1}|``
over the next ``TAIL_FRAMES`` frames from those states (:func:`rest_loss`; same units as the rollout
loss's velocity term; the training loss logged per epoch then includes ``rest_weight`` x this term). The target, zero
motion, is the reference's own behaviour there: no pose target is needed, so the term does not pin the cloth to one rest
shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from animat.surrogate.model import external_input, rollout

TAIL_FRAMES = 16  # frames of the penalised motion from each buffered state


def stopped_input(scene, y: np.ndarray) -> np.ndarray:
    """(w,) network input once the external objects stopped at ``y`` (the recorded external state
    (y_dim,) of the frame they stop at) and stayed there: the second row of two stopped frames (no change)."""
    held = np.repeat(scene.stopped(np.asarray(y, np.float32)[None]), 2, axis=0)
    return external_input(held, scene.name)[1]


def start_states(
    Z: Sequence[np.ndarray], Y: Sequence[np.ndarray], ids: Sequence[int], count: int, scene, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` random consecutive frame pairs of episodes ``ids`` -> (z0, z1 (count, k), w (count, w)):
    the states and the stopped input from the second frame's external state."""
    picks = []
    for e in rng.integers(0, len(ids), int(count)):
        i = ids[int(e)]
        picks.append((i, int(rng.integers(0, len(Z[i]) - 1))))
    z0 = np.stack([Z[i][t] for i, t in picks])
    z1 = np.stack([Z[i][t + 1] for i, t in picks])
    w = np.stack([stopped_input(scene, Y[i][t + 1]) for i, t in picks])
    return z0, z1, w


def held_rollout(params: dict, stats: dict, z0, z1, w, frames: int) -> jax.Array:
    """(frames, N, k) states rolled from (z0, z1) (N, k) with the inputs ``w`` (N, w) held every frame."""
    return rollout(params, stats, z0, z1, jnp.broadcast_to(w, (int(frames),) + tuple(np.shape(w))))


def make_lead(stats: dict, frames: int):
    """jitted ``(params, z0, z1, w) -> (z_{T-1}, z_T)``: the states ``frames`` frames after the
    external objects stopped (inputs ``w`` (N, w) held), forward only."""

    @jax.jit
    def lead(params, z0, z1, w):
        Z = jnp.concatenate([z0[None], z1[None], held_rollout(params, stats, z0, z1, w, frames)])
        return Z[-2], Z[-1]

    return lead


def rest_loss(
    params: dict, stats: dict, z0: jax.Array, z1: jax.Array, w: jax.Array, frames: int = TAIL_FRAMES
) -> jax.Array:
    """Mean |z_t - z_{t-1}| over ``frames`` frames rolled from (z0, z1) (B, k) with held inputs
    ``w`` (B, w): the motion that should have died out (m, as the rollout loss)."""
    Z = held_rollout(params, stats, z0, z1, w, frames)
    return jnp.abs(jnp.diff(jnp.concatenate([z1[None], Z]), axis=0)).mean()


def rest_speeds(
    params: dict, stats: dict, pca, z0: np.ndarray, z1: np.ndarray, w: np.ndarray, frames: int, fps: int
) -> np.ndarray:
    """(N,) mean vertex speed (m/s) over the last second of ``frames`` frames rolled from (z0, z1)
    (N, k) with the held inputs ``w`` (N, w): how far the surrogate is from rest that long after the
    external objects stopped (decoded: a turn about the flag's pole counts)."""
    run = jax.jit(held_rollout, static_argnums=5)
    Z = np.asarray(run(params, stats, jnp.asarray(z0), jnp.asarray(z1), jnp.asarray(w), int(frames))[-int(fps) - 1 :])
    X = pca.decode(np.swapaxes(Z, 0, 1))  # (N, fps + 1, V, 3)
    return np.linalg.norm(np.diff(X, axis=1), axis=-1).mean(axis=(1, 2)) * fps
