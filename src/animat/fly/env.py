"""The fly as Gymnasium environments: ``animat/FlyHover-v0`` and ``animat/FlySteer-v0``.

Registered when this module is imported::

    import gymnasium
    import animat.fly.env  # registers both ids

    env = gymnasium.make("animat/FlyHover-v0", seconds=3.0)
    env = gymnasium.make("animat/FlySteer-v0", speed=1.0, change_seconds=(1.0, 3.0))

One step is one control tick: the action sets the wing targets and the fly is simulated for
``params.steps_per_control`` physics steps of :func:`animat.fly.physics.step` (one jitted call per
tick, compiled once per FlyParams), exactly what :func:`animat.fly.rollout.rollout` does between two
network evaluations.

- Observation ``(params.n_inputs,)`` float32 (FlySteer: ``+ 3``): the network's inputs. FlyHover:
  :func:`animat.fly.rollout.observe`, position relative to the episode's start. FlySteer: what the steering
  networks see (:func:`animat.fly.steer.tracking.command_observation`, the goal network's input): the fly in the
  *command frame* (origin where the active command began, turned to the heading then), position relative to
  the reference point moving at the commanded velocity, then the command-frame velocity / 10 u/s. So a
  policy trained here sees exactly what :class:`animat.fly.steer.pilot.Pilot` gives the goal network. Sensor
  noise of std ``noise`` (if asked) is added to the network's inputs, not to the command.
- Action ``(params.n_outputs,)`` float32 in [−1, 1]: the network's outputs, turned into wing targets by
  :func:`animat.fly.rollout.wing_targets` (clipped; a symmetric fly's left wing mirrors its right).
- FlyHover reward per tick: the hover fitness's terms (:func:`animat.fly.tasks.hover`) at the state
  reached, over the number of ticks ``N`` of the episode: ``−(|z| + (|x| + |y|) / 5 + 4 (1 − cos tilt)) / N``
  (u). Summed over a full episode it is the GA's hover fitness of the same trajectory.
- FlySteer reward per tick: the tracking fitness's terms (:func:`animat.fly.tasks.tracking`, which the
  steering networks are evolved on) at the state reached, over ``N``: with ``e`` the position minus the
  reference point (command frame) and ``d`` the command's unit direction (zero for hover),
  ``−((|e·d| + across · |e − (e·d) d|) / L + tilt · (1 − cos tilt)) / N``, ``L`` the body length. Summed over
  a full episode it is the tracking fitness of the same flight.
- Terminated when the fly crashes (physics runaway or non-finite state; ``info["crashed"]``, and
  ``info["crashes"]`` counts them over the environment's life). The physics freezes a crashed fly, so
  the terminating step's reward is the frozen state's per-tick reward times the ticks left: the
  episode's sum is then what the full episode of the recorded (frozen) trajectory would get, and
  crashing never ends a negative-reward episode early for free. Truncated after ``seconds``.
- ``reset(seed=...)`` is deterministic. Starts: at rest, level, at the origin (``start_scale = 0``), or
  drawn as :func:`animat.fly.rollout.start_states` draws its perturbed starts (velocity, pitch, pitch
  rate, wing angles), with that function's ``scale``. FlySteer draws a command script (names uniform from
  ``commands``, durations uniform in ``change_seconds``) unless given ``script`` (``"up:1,forward:2"``,
  :func:`animat.fly.steer.commands.parse_script`; the last command holds to the end). Both can be set per
  episode with ``reset(options={"start_scale": ..., "script": ...})``.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from animat.config import require
from animat.errors import ConfigError
from animat.fly.model import FlyParams
from animat.fly.physics import FlyState
from animat.fly.rollout import action_tick, n_ticks_for, observe, start_states
from animat.fly.steer.commands import COMMANDS, check_command, direction, parse_script
from animat.fly.steer.tracking import (
    Frame,
    command_observation,
    command_velocity,
    new_frame,
    steering_tick,
    tracking_error,
)
from animat.fly.tasks import hover, tracking

HOVER_ID = "animat/FlyHover-v0"
STEER_ID = "animat/FlySteer-v0"


@functools.lru_cache(maxsize=16)
def control_tick(params: FlyParams, task: str = "hover"):
    """Jitted ``(state: FlyState, action (n_outputs,), *where) -> (state, observation)``: one control tick of
    ``steps_per_control`` physics steps towards the action's wing targets, and the network's observation of
    the state reached. ``task`` ``hover``: ``where = (anchor (3,),)``, :func:`animat.fly.rollout.action_tick`, then
    :func:`animat.fly.rollout.observe` relative to the anchor; ``steer``: ``where = (frame, cmd_vel (3,))``, the
    frame of the state before the tick: the steering networks' own tick
    (:func:`animat.fly.steer.tracking.steering_tick`), then :func:`animat.fly.steer.tracking.command_observation` in
    the frame one tick older.

    The fly is simulated as a batch of two identical flies: XLA compiles a batch of one to scalar code
    that rounds differently from the vectorised code that trains the GA's populations
    (:func:`animat.fly.rollout.simulate_population` does the same)."""

    def hover(state, action, anchor):
        new = _as_pair(lambda s: action_tick(params, s, action), state)
        return new, observe(params, new, anchor)

    def steer(state, action, frame, cmd_vel):
        new, frame = _as_pair(lambda s: steering_tick(params, s, frame, action), state)
        return new, command_observation(params, new, frame, cmd_vel, True)

    return jax.jit({"hover": hover, "steer": steer}[task])


def _as_pair(tick, state: FlyState):
    """``tick(state)`` computed on a batch of two identical states (see :func:`control_tick`), for one."""
    pair = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    return jax.tree_util.tree_map(lambda x: x[0], jax.vmap(tick)(pair))


@functools.lru_cache(maxsize=16)
def steer_observation(params: FlyParams):
    """Jitted ``(state, frame, cmd_vel (3,)) -> (n_inputs + 3,)``: the FlySteer observation of a state."""
    return jax.jit(lambda state, frame, cmd_vel: command_observation(params, state, frame, cmd_vel, True))


class FlyEnv(gym.Env):
    """What both environments share: params, episode length, starts, the jitted tick, crash handling.
    Subclasses define :meth:`cost` (the per-tick cost of the current state; the reward is minus it over
    the episode's ticks), :meth:`_where` (what the observation is relative to) and may extend the observation."""

    metadata = {"render_modes": []}
    task = "hover"  # control_tick's observation
    extra_inputs = 0  # observation entries after the network's inputs

    def __init__(
        self,
        params: FlyParams | None = None,
        seconds: float = 3.0,
        asymmetric: bool | None = None,
        start_scale: float = 1.0,
        noise: float = 0.0,
    ):
        params = params or FlyParams()
        if not isinstance(params, FlyParams):
            raise ConfigError(f"params must be a FlyParams (animat.fly.model), got {type(params).__name__}")
        self.params = params if asymmetric is None else params.with_(asymmetric=bool(asymmetric))
        self.seconds = float(require("seconds", seconds, gt=0))
        self.start_scale = float(require("start_scale", start_scale, ge=0))
        self.noise = float(require("noise", noise, ge=0))
        self.n_ticks = n_ticks_for(self.params, self.seconds)
        self.crashes = 0
        self.tick = 0
        self._tick = control_tick(self.params, self.task)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(self.params.n_outputs,), dtype=np.float32)
        self.observation_space = gym.spaces.Box(
            -np.inf, np.inf, shape=(self.params.n_inputs + self.extra_inputs,), dtype=np.float32
        )
        self.state = self.anchor = None

    def start(self, scale: float) -> FlyState:
        """One start state (arrays without a leading axis): at rest for ``scale = 0``, else the perturbed
        start of :func:`~animat.fly.rollout.start_states` with a seed drawn from ``np_random``."""
        if scale == 0:
            return FlyState(*(np.asarray(x[0]) for x in start_states(self.params, 1)))
        starts = start_states(self.params, 2, int(self.np_random.integers(2**31)), scale)
        return FlyState(*(np.asarray(x[1]) for x in starts))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        scale = float(require("start_scale", options.pop("start_scale", self.start_scale), ge=0))
        self.state = self.start(scale)
        self.tick = 0
        self._reset_task(options)
        if options:
            raise ConfigError(f"unknown reset option(s) {', '.join(sorted(options))}")
        return self._observe(self._observation()), self._info()

    def _reset_task(self, options: dict) -> None:
        self.anchor = np.asarray(self.state.pos)

    def _where(self) -> tuple:
        """What the observation of the current state is relative to (``control_tick``'s ``where``)."""
        return (self.anchor,)

    def _observation(self):
        """The network's input for the current state (unjitted; once per episode and command)."""
        return observe(self.params, self.state, *self._where())

    def _observe(self, net_obs) -> np.ndarray:
        obs = np.array(net_obs, np.float32)
        if self.noise > 0:
            n = self.params.n_inputs
            obs[:n] += self.np_random.normal(0.0, self.noise, n).astype(np.float32)
        return obs

    def _info(self) -> dict:
        return {
            "time": self.tick * self.params.control_dt,
            "crashed": bool(self.state.crashed),
            "crashes": self.crashes,
        }

    def step(self, action):
        if self.state is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        action = np.asarray(action, np.float32).reshape(self.action_space.shape)
        state, net_obs = self._tick(self.state, action, *self._where())
        self.state = FlyState(*(np.asarray(x) for x in state))
        self.tick += 1
        reward = -self.cost() / self.n_ticks
        terminated = bool(self.state.crashed)
        if terminated:
            self.crashes += 1
            reward *= self.n_ticks - self.tick + 1  # the frozen state's reward for the rest of the episode
        if self._next_command():  # the observation shows the new command, relative to where it began
            net_obs = self._observation()
        return (
            self._observe(net_obs),
            float(reward),
            terminated,
            self.tick >= self.n_ticks and not terminated,
            self._info(),
        )

    def _next_command(self) -> bool:
        """Switch task after a tick if due (FlySteer); True if the observation must be recomputed."""
        return False

    def cost(self) -> float:
        """Per-tick cost (≥ 0) of the current state under the task."""
        raise NotImplementedError


class FlyHoverEnv(FlyEnv):
    """``animat/FlyHover-v0``: hold altitude, upright, over the start (the GA's ``hover`` fitness per tick).

    Options: ``params`` (a FlyParams preset, default the paper preset), ``seconds`` (episode length,
    default 3 s), ``asymmetric`` (override the preset's wings), ``start_scale`` (0: at rest; default 1),
    ``noise`` (sensor-noise std, network-input units; default 0)."""

    def cost(self) -> float:
        pos = self.state.pos - self.anchor
        return -float(hover(pos[None], self.state.quat[None]))


class FlySteerEnv(FlyEnv):
    """``animat/FlySteer-v0``: follow commands (``hover``, ``forward``, ...) at ``speed`` u/s, keeping on
    each command's moving reference point (:mod:`animat.fly.steer.tracking`).

    Options besides FlyHover's: ``speed`` (target speed, u/s, default 1), ``change_seconds`` ((min, max)
    s of a drawn command, default (1, 3)), ``commands`` (names to draw from, default all),
    ``script`` (a fixed script instead of draws), ``across`` (weight of the error across the command's
    direction, default 2) and ``tilt`` (default 4), the tracking fitness's weights; ``seconds`` defaults
    to 10 s and ``asymmetric`` to True (a symmetric fly cannot turn). Attributes while flying: ``frame``
    (the active command's :class:`animat.fly.steer.tracking.Frame`, its ``ticks`` counted when observed) and
    ``cmd_vel`` (its command-frame velocity, u/s)."""

    task = "steer"
    extra_inputs = 3

    def __init__(
        self,
        params: FlyParams | None = None,
        seconds: float = 10.0,
        asymmetric: bool | None = True,
        start_scale: float = 1.0,
        noise: float = 0.0,
        speed: float = 1.0,
        change_seconds: tuple[float, float] = (1.0, 3.0),
        commands: tuple[str, ...] = COMMANDS,
        script: str | None = None,
        across: float = 2.0,
        tilt: float = 4.0,
    ):
        super().__init__(params, seconds, asymmetric, start_scale, noise)
        self.speed = float(require("speed", speed, gt=0))
        lo, hi = (float(x) for x in change_seconds)
        if not 0 < lo <= hi:
            raise ConfigError(f"change_seconds must be (min, max) with 0 < min <= max, got {tuple(change_seconds)}")
        self.change_seconds = (lo, hi)
        self.commands = tuple(check_command(c) for c in commands)
        if not self.commands:
            raise ConfigError("commands: name at least one command to draw from")
        self.script = None if script is None else parse_script(script)
        self.across = float(require("across", across, ge=0))
        self.tilt = float(require("tilt", tilt, ge=0))
        self._observe_steer = steer_observation(self.params)
        self._error = jax.jit(functools.partial(tracking_error, self.params))
        self.schedule: list[tuple[int, str]] = []
        self.command = "hover"
        self.command_start = 0
        self.frame = None
        self.cmd_vel = np.zeros(3, np.float32)

    def _reset_task(self, options: dict) -> None:
        script = options.pop("script", None)
        segments = parse_script(script) if script is not None else self.script
        if segments is None:
            segments, total = [], 0.0
            while total < self.seconds:
                segments.append(
                    (
                        self.commands[int(self.np_random.integers(len(self.commands)))],
                        float(self.np_random.uniform(*self.change_seconds)),
                    )
                )
                total += segments[-1][1]
        starts = np.round(np.cumsum([0.0] + [s for _, s in segments[:-1]]) / self.params.control_dt).astype(int)
        self.schedule = [(int(k), name) for k, (name, _) in zip(starts, segments)]
        self._begin(self.schedule[0][1])

    def _begin(self, name: str) -> None:
        """Start command ``name`` at the current state: a new command frame at its position and heading."""
        self.command, self.command_start = name, self.tick
        self.frame = Frame(*(np.asarray(x) for x in new_frame(self.state)))
        self.cmd_vel = command_velocity(name, self.speed)

    def _where(self) -> tuple:
        return self.frame._replace(ticks=np.int32(self.tick - self.command_start)), self.cmd_vel

    def _observation(self):
        return self._observe_steer(self.state, *self._where())

    def _next_command(self) -> bool:
        """Begin the next command once its tick comes (after this tick's reward, which the old one
        scores); the observation returned then shows the new command, its frame at the state just reached."""
        due = [name for k, name in self.schedule if k == self.tick]
        if due and self.tick < self.n_ticks:
            self._begin(due[-1])
            return True
        return False

    def _info(self) -> dict:
        return {
            **super()._info(),
            "command": self.command,
            "command_direction": direction(self.command, float(self.frame.yaw)).astype(np.float32),
        }

    def cost(self) -> float:
        error = np.asarray(self._error(self.state, *self._where()), np.float64)
        return -float(
            tracking(
                error[None], self.cmd_vel[None], self.state.quat[None], self.params.body_length, self.across, self.tilt
            )
        )


def register() -> None:
    """Register both ids with Gymnasium (once)."""
    for env_id, cls in ((HOVER_ID, "FlyHoverEnv"), (STEER_ID, "FlySteerEnv")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"animat.fly.env:{cls}")


register()
