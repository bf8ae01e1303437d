"""Model-predictive choice among a command's networks: every 0.5 s the pilot flies each candidate network
ahead from the fly's present state (the same physics, jitted and batched over the candidates) and keeps
the one whose predicted flight scores best by issue 21's steering score (:mod:`animat.fly.steer.score`).

Why: a steering network passes ~92 % of the scored segments; what fails is mostly the first window after a
hand-over, and which of several equally good networks fails there depends on the exact state (wing phase,
rocking) the previous command left, flight being chaotic. So several networks trained for the same command
(different fitness terms or episodes) fail on different hand-overs, and a lookahead of 1 s picks, state by
state, one that does not (the measured effect, with and without the lookahead, is in
``animat/pretrained/paper/PROVENANCE.md``). The prediction is exact here: the pilot's own physics is the world's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from animat.fly.steer.score import HAND_OVER_S, WINDOW_S

CONE_DEG = 20.0  # a predicted window counts against a candidate outside this cone (the score's: 30°, a margin kept)
SPEED_WEIGHT = 0.2  # of the predicted windows' |speed along - target| (per target speed)


@functools.lru_cache(maxsize=16)
def lookahead_rollout(params, activations: tuple[str, ...], goal: bool, ticks: int):
    """Jitted
    ``(nets (K, ...) stacked, state, frame, cmd_vel (3,)) -> (position (K, ticks, 3), velocity (K, ticks, 3))``: each
    candidate network flown ``ticks`` control ticks on from ``state`` in command ``frame``
    (:func:`animat.fly.steer.tracking.command_tick`), world frame, u and u/s."""
    import jax

    from animat.fly.steer.tracking import command_tick

    def one(net, state, frame, cmd_vel):
        def body(carry, _):
            s, f = command_tick(params, net, activations, *carry, cmd_vel, goal)
            return (s, f), (s.pos, s.vel)

        return jax.lax.scan(body, (state, frame), None, length=ticks)[1]

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))


def lookahead_cost(
    position: np.ndarray,
    velocity: np.ndarray,
    direction: np.ndarray,
    anchor: np.ndarray,
    elapsed_ticks: int,
    *,
    speed: float,
    body_length: float,
    dt: float,
) -> np.ndarray:
    """Cost ``(K,)`` of ``K`` predicted flights, ``position`` and ``velocity (K, H, 3)`` (u, u/s, world),
    ``elapsed_ticks`` after the command began; lower is better. A direction command (unit ``direction (3,)``): over the
    whole 0.5 s windows of the prediction that the score reads (those after the hand-over), the sum of
    ``max(0, |cross| − tan(CONE_DEG) · along) / speed + SPEED_WEIGHT · |along − speed| / speed`` of each window's
    mean velocity. Hover (``direction`` zero): the largest distance from ``anchor (3,)`` (where the hover began), body
    lengths."""
    from animat.fly.tasks import outside_cone  # (loads JAX: this module is imported without it)

    if not np.any(direction):
        return np.linalg.norm(position - anchor, axis=-1).max(axis=-1) / body_length
    window, hand_over = int(round(WINDOW_S / dt)), int(round(HAND_OVER_S / dt))
    skip = max(0, hand_over - elapsed_ticks)
    n = (velocity.shape[1] - skip) // window
    if n < 1:
        return np.zeros(len(velocity))
    means = velocity[:, skip : skip + n * window].reshape(len(velocity), n, window, 3).mean(axis=2)
    return ((outside_cone(means, direction, CONE_DEG) + SPEED_WEIGHT * np.abs(means @ direction - speed)) / speed).sum(
        axis=-1
    )


def stack(nets: Sequence[dict]) -> dict:
    """Candidate networks' parameter dicts (equal shapes) stacked along a new leading axis."""
    import jax.numpy as jnp

    return {k: jnp.stack([jnp.asarray(n[k]) for n in nets]) for k in nets[0]}
