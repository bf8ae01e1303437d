"""Steering the fruit fly by command (``animat fly steer`` on a ``preset = "drosophila"`` steering set): the
:class:`DrosophilaPilot`, the drosophila counterpart of :class:`animat.fly.steer.pilot.Pilot`, with its interface
(``command``, ``tick``, ``t``, ``dt``, ``state``, ``speed``, ``body_length``, ``flying``), so that the steering
package's scripts, scores, pass rates, hand-over pools and run directories fly either preset.

The physics is the training rollout's own (:func:`animat.fly.drosophila.rollout.flight_sample`), one jitted sample
of ``sample_dt`` (5 ms) per :meth:`DrosophilaPilot.tick`. A network acts only when a wingbeat ends, so a new command
(its network and its reference point) takes over at the next wingbeat boundary: the pattern generator finishes
the beat that the last network set. As in a direction task (:class:`animat.fly.drosophila.tasks.DirectionFitness`),
a command's network observes its offset from a reference point that leaves the fly's position when the command
is given at the command's velocity (still for hover), clipped to
:data:`animat.fly.drosophila.rollout.REFERENCE_REACH` body lengths per axis.

Directions are the drosophila tasks' (:data:`animat.fly.drosophila.tasks.DIRECTIONS`): world axes of the start's
heading (forward +x, left +y, up +z), which the networks evolved to hold; speeds in m/s, lengths in m.
"""

from __future__ import annotations

import functools

import numpy as np

from animat.errors import ConfigError
from animat.fly.options import CONTROLLERS
from animat.fly.steer.commands import check_command


@functools.lru_cache(maxsize=8)
def _sampler(params, activations: tuple[str, ...]):
    """Jitted ``(net, carry, anchor (3,), g0, ref_vel (3,)) -> (carry, wing angles (2, 3) rad)``: one sample of one
    fly flown by ``net`` tracking the point that leaves ``anchor`` at step ``g0`` at ``ref_vel`` m/s; and the jitted
    start ``(net, state) -> carry`` (:func:`animat.fly.drosophila.rollout.start_carry`)."""
    import jax
    import jax.numpy as jnp

    from animat.fly.drosophila.physics import wing_angles
    from animat.fly.drosophila.rollout import N_INPUTS, choose, flight_sample, reference_origin, start_carry

    noise = jnp.zeros((1, 1, N_INPUTS), jnp.float32)
    owner = jnp.zeros(1, jnp.int32)
    policy = lambda net: functools.partial(
        choose, params, jax.tree_util.tree_map(lambda a: a[None], net), activations, owner
    )

    def advance(net, carry, anchor, g0, ref_vel):
        origin = reference_origin(params, anchor[None], ref_vel[None], g0)
        carry, _ = flight_sample(params, policy(net), origin, noise, 0, carry)
        return carry, wing_angles(params, jax.tree_util.tree_map(lambda a: a[0], carry[0]))

    return jax.jit(advance), jax.jit(lambda net, state: start_carry(policy(net), noise, state))


class DrosophilaPilot:
    """Flies a drosophila steering set (:class:`animat.fly.steer.pilot.Steering`, preset ``drosophila``) live, one
    sample of ``sample_dt`` per :meth:`tick`; :meth:`command` switches the command (its network takes over at the
    next wingbeat's end). ``controller``: ``switch`` only (the preset has no goal network yet); ``speed`` m/s (default
    the set's); ``seed`` 0: from rest in the hover posture at the origin, another: that seed's perturbed start
    (:func:`animat.fly.drosophila.rollout.start_states`); ``lookahead``: accepted for the pilots' common interface;
    with no alternates in a drosophila set it changes nothing. The first command is ``hover``."""

    def __init__(self, steering, controller: str = "switch", speed=None, seed: int = 0, lookahead=None):
        import jax
        import jax.numpy as jnp

        from animat.fly.drosophila.rollout import start_states

        if controller not in CONTROLLERS:
            raise ConfigError(f"unknown controller {controller!r}; choose from {', '.join(CONTROLLERS)}")
        if controller != "switch":
            raise ConfigError(
                f"steering directory {str(steering.folder)!r} is a drosophila set: it flies the switch controller "
                "only (no goal network yet)"
            )
        self.steering, self.controller = steering, controller
        self.speed = float(steering.speed if speed is None else speed)
        if not (np.isfinite(self.speed) and self.speed >= 0):
            raise ConfigError(f"--speed must be a finite number of m/s >= 0, got {speed}")
        self.params = steering.params
        self.dt = float(self.params.sample_dt)
        self.body_length = float(self.params.body_length)
        self.lookahead = 0.0 if lookahead is None else float(lookahead)
        self.ticks, self._wing = 0, np.zeros((2, 3), np.float32)
        starts = start_states(self.params, 2, int(seed))
        state = jax.tree_util.tree_map(lambda a: jnp.asarray(a[1 if seed else 0 : (1 if seed else 0) + 1]), starts)
        first = self.steering.switch_network("hover")
        self._advance, start = _sampler(self.params, tuple(first.genome.activations))
        self.carry = start({k: jnp.asarray(v) for k, v in first.genome.params.items()}, state)
        self.command("hover")

    @property
    def t(self) -> float:
        return self.ticks * self.dt

    @property
    def state(self):
        """The fly's state (:class:`animat.fly.drosophila.physics.DrosophilaState` of one fly, no leading axis)."""
        import jax

        return jax.tree_util.tree_map(lambda a: a[0], self.carry[0])

    def command(self, name: str) -> None:
        """Switch to command ``name`` now: its network, and its reference point leaving the fly's position."""
        import jax.numpy as jnp

        from animat.fly.drosophila.tasks import DIRECTIONS

        net = self.steering.switch_network(check_command(name))
        if tuple(net.genome.activations) != tuple(self.steering.switch_network("hover").genome.activations):
            raise ConfigError(f"network {net.name!r} has other activations than the set's hover network")
        self.name, self.net, self.flying = name, net, net.name
        self._net = {k: jnp.asarray(v) for k, v in net.genome.params.items()}
        self.direction = np.asarray(DIRECTIONS.get(name, (0.0, 0.0, 0.0)), float)
        self._ref = (self.carry[0].pos[0], self.carry[4], jnp.asarray(self.direction * self.speed, jnp.float32))

    def pose(self) -> tuple:
        """The fly's position ``(3,)`` m, orientation ``(4,)`` and wing angles ``(2, 3)`` rad now."""
        s = self.state
        return s.pos, s.quat, self._wing

    def pool_state(self) -> dict:
        """The fly's state as a start pool keeps it (:func:`animat.fly.steer.pilot.handover_states`): ``vel``,
        ``quat``, ``omega`` and the wing angles ``wing`` (2, 3) rad of the last sample
        (:func:`animat.fly.drosophila.rollout.pool_start_states` starts from the first three)."""
        s = self.state
        return {"vel": s.vel, "quat": s.quat, "omega": s.omega, "wing": self._wing}

    def tick(self) -> dict:
        """One sample: ``{"t": s, "position": (3,) m, "velocity": (3,) m/s, "quat": (4,), "wing": (2, 3) rad,
        "command": name, "command_direction": (3,) world unit vector (zeros for hover), "crashed": bool,
        "network": the name of the network that flew it}``."""
        import jax

        self.carry, wing = self._advance(self._net, self.carry, *self._ref)
        self.ticks += 1
        s, self._wing = jax.device_get((self.state, wing))
        return {
            "t": self.t,
            "position": s.pos,
            "velocity": s.vel,
            "quat": s.quat,
            "wing": np.asarray(self._wing),
            "command": self.name,
            "command_direction": self.direction.copy(),
            "crashed": bool(s.crashed),
            "network": self.flying,
        }
