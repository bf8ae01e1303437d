"""Steering the fly by command: the steering directory and the :class:`Pilot` (its training:
:mod:`animat.fly.steer.train`).

A steering directory ``DIR`` holds ``steering.json`` (:class:`animat.fly.steer.steering_set.SteeringRecord`; an
older file without ``version`` is upgraded as it is read)::

    {"version": 2, "preset": "paper", "speed": 2.0,    # the target speed, u/s
     "switch": {"hover": "hover", "forward": "forward", ...},   # command -> network sub-folder
     "goal": "goal",                                   # the goal-conditioned network's sub-folder (or null)
     "alternates": {"forward": ["forwardC"], "goal": ["goalD"], ...}}  # more networks per command ({}: none)

and one ordinary fly run directory per network (``config.json`` + ``best_genome.npz``/``.json``),
trained with ``--task`` (:mod:`animat.fly.steer.tracking`). Two controllers fly it: ``switch`` (the command
picks its network) and ``goal`` (one network that reads the command). Both observe the fly in the frame
of the active command and track its reference point, so a hand-over between networks is only a change
of network and reference (:func:`animat.fly.steer.tracking.command_tick`, the training rollouts' own tick).
Where a command (or the goal controller) has alternates, the pilot flies, every 0.5 s, whichever of its
networks a 1 s lookahead scores best (:mod:`animat.fly.steer.lookahead`); ``lookahead=0`` flies the first alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.console import phase
from animat.errors import CheckpointError, ConfigError
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.drosophila.pilot import DrosophilaPilot
from animat.fly.options import CONTROLLERS, LOOKAHEAD_S, TrainConfig
from animat.fly.steer.commands import COMMANDS, check_command, direction, parse_script, random_script
from animat.fly.steer.lookahead import lookahead_cost, lookahead_rollout, stack
from animat.fly.steer.score import WINDOW_S
from animat.fly.steer.steering_set import STEERING_FILE, read_steering_file
from animat.pretrained import resolve


@dataclass(frozen=True)
class Network:
    """One trained network of a steering set: its folder's ``name``, fly ``params``, ``genome`` and whether
    it reads the command (``goal``)."""

    name: str
    params: Any
    genome: Any
    goal: bool


@dataclass(frozen=True)
class Steering:
    """A loaded steering directory: ``folder``, ``preset``, target ``speed`` u/s, ``switch`` (command ->
    :class:`Network`, the commands it has), ``goal`` (a :class:`Network` or None) and ``alternates``
    (command or ``"goal"`` -> a tuple of more :class:`Network` of the same shape, for the lookahead)."""

    folder: Path
    preset: str
    speed: float
    switch: dict
    goal: Network | None
    alternates: dict = field(default_factory=dict)

    def candidates(self, controller: str, command: str) -> tuple[Network, ...]:
        """The networks that may fly ``command`` under ``controller``, the first the plain controller's."""
        key = "goal" if controller == "goal" else command
        first = self.goal if controller == "goal" else self.switch[command]
        return (first, *self.alternates.get(key, ()))

    @property
    def params(self):
        return next(iter(self.switch.values()), self.goal).params

    def switch_network(self, name: str) -> Network:
        """The switch controller's network for command ``name``; a one-line ConfigError where the set has none."""
        if name not in self.switch:
            raise ConfigError(
                f"steering directory {str(self.folder)!r} has no network for command {name!r} "
                f"(it has {', '.join(self.switch)})"
            )
        return self.switch[name]


def load_network(folder: Path, name: str, goal: bool) -> Network:
    """The network in sub-folder ``name`` of steering directory ``folder``; CheckpointError/ConfigError (one
    line) when it is missing or does not fit its fly (with the command inputs for a goal network)."""
    from animat.evolve.genome_file import load_genome

    where = folder / str(name)
    if not (where / "best_genome.npz").is_file():
        raise CheckpointError(
            f"steering directory {str(folder)!r} lists network {name!r}, but {str(where)!r} holds no best_genome.npz"
        )
    if runs.read_run_config(where, "a fly training run directory").get("preset") == "drosophila":
        return _drosophila_network(where, str(name), goal)
    cfg = TrainConfig.build(None, **runs.read_run_config(where, "a fly training run directory"))
    genome = load_genome(where / "best_genome.npz").genome
    params = cfg.fly_params()
    inputs = params.n_inputs + (3 if goal else 0)
    if genome.layers[0] != inputs or genome.layers[-1] != params.n_outputs:
        raise ConfigError(
            f"network {str(where)!r} (layers {list(genome.layers)}) does not fit its fly as a "
            f"{'goal' if goal else 'switch'} network: it needs {inputs} inputs and {params.n_outputs} outputs"
        )
    return Network(str(name), params, genome, goal)


def _drosophila_network(where: Path, name: str, goal: bool) -> Network:
    """The drosophila network of run directory ``where`` (:func:`load_network`); a goal network is refused (the
    preset has none yet)."""
    from animat.fly.drosophila.replay import check_genome, load_for_replay

    if goal:
        raise ConfigError(f"network {str(where)!r} is a drosophila network: the preset has no goal network yet")
    params, genome = load_for_replay(where)
    check_genome(genome)
    return Network(name, params, genome, False)


def make_pilot(steering, controller: str = "switch", speed=None, seed: int = 0, lookahead=None):
    """The pilot of ``steering``'s fly (a :class:`Steering`, a directory or ``pretrained:NAME``): a :class:`Pilot`
    for the paper's fly, a :class:`animat.fly.drosophila.pilot.DrosophilaPilot` for the fruit fly; both take
    these arguments and answer ``command``/``tick`` alike."""
    steering = steering if isinstance(steering, Steering) else load_steering(steering)
    if isinstance(steering.params, DrosophilaParams):
        return DrosophilaPilot(steering, controller, speed, seed, lookahead)
    return Pilot(steering, controller, speed, seed, lookahead)


def network_steering(run_dir: Path, task: str, speed: float) -> Steering:
    """The set of the one network that ``animat fly train --task task`` or ``animat fly distill`` (a goal
    network) wrote into ``run_dir``, at ``speed`` u/s: a goal network for the goal controller, else the
    network for its own command and, as a Pilot begins with hover, for that first tick too (switch)."""
    run_dir = Path(run_dir)
    goal = task == "goal"
    net = load_network(run_dir.parent, run_dir.name, goal)
    return Steering(run_dir.parent, "", float(speed), {} if goal else {"hover": net, task: net}, net if goal else None)


def goal_run(folder: Path) -> bool:
    """Whether ``folder`` is the run of one goal network (``animat fly distill``, ``animat fly train --task goal``)
    rather than a steering set."""
    folder = Path(folder)
    if (folder / STEERING_FILE).is_file() or not (folder / "best_genome.npz").is_file():
        return False
    stored = runs.read_json(folder / "config.json") if (folder / "config.json").is_file() else {}
    return isinstance(stored, dict) and stored.get("task") == "goal"


def load_steering(path: str | Path) -> Steering:
    """A steering directory, ``pretrained:NAME`` (:func:`animat.pretrained.resolve`), or the run of one goal
    network (:func:`goal_run`: a set of that network alone, at its run's speed). One-line
    CheckpointError/ConfigError for a missing or malformed ``steering.json``, a listed network that is
    missing, a network that does not fit, or networks of different flies."""

    folder = resolve(path)
    file = folder / STEERING_FILE
    if goal_run(folder):
        return network_steering(folder, "goal", TrainConfig.build(None, **runs.read_run_config(folder)).speed)
    if not file.is_file():
        raise CheckpointError(
            f"{str(path)!r} holds no {STEERING_FILE}; is it a steering directory (animat fly train-steering) or a "
            "goal network's run (animat fly distill)?"
        )
    record = read_steering_file(file)
    switch = {cmd: load_network(folder, sub, False) for cmd, sub in record.switch.items()}
    goal = None if record.goal is None else load_network(folder, record.goal, True)
    alternates = {}
    for key, subs in record.alternates.items():
        first = goal if key == "goal" else switch[key]
        alternates[key] = tuple(load_network(folder, sub, key == "goal") for sub in subs)
        if any(
            n.genome.layers != first.genome.layers or n.genome.activations != first.genome.activations
            for n in alternates[key]
        ):
            raise ConfigError(
                f"{str(file)!r}: the alternates of {key!r} must have the layers and activations of {first.name!r}"
            )
    if not switch and goal is None:
        raise ConfigError(f"{str(file)!r} lists no network")
    flies = {
        n.params
        for n in [*switch.values(), *([goal] if goal else []), *(n for nets in alternates.values() for n in nets)]
    }
    if len(flies) > 1:
        raise ConfigError(f"the networks of {str(file)!r} fly different flies (their fly parameters differ)")
    return Steering(folder, record.preset, record.speed, switch, goal, alternates)


# ---------------------------------------------------------------------------------------- flying
@functools.lru_cache(maxsize=16)
def _ticker(params, activations: tuple[str, ...], goal: bool) -> tuple[Callable, Callable]:
    """Jitted ``(net, state, frame, cmd_vel (3,)) -> (state, frame)`` (one tick of
    :func:`animat.fly.steer.tracking.command_tick`, compiled once per network shape) and ``state -> frame``
    (a new command)."""
    import jax

    from animat.fly.steer.tracking import command_tick, new_frame

    return jax.jit(
        lambda net, state, frame, cmd_vel: command_tick(params, net, activations, state, frame, cmd_vel, goal)
    ), jax.jit(new_frame)


class Pilot:
    """Flies a steering set live, one control tick per :meth:`tick`; :meth:`command` switches the command.

    ``controller``: ``switch`` (the active command's network) or ``goal`` (the goal network); ``speed``
    u/s: the target speed (default: the set's). ``seed`` 0: the fly starts at rest, level, at the origin;
    another seed: from that seed's perturbed start (:func:`animat.fly.steer.tracking.varied_starts` with the
    ranges of the network that flies first). The first command is ``hover``. ``lookahead`` s (default
    :data:`animat.fly.options.LOOKAHEAD_S`): where the set has alternates for the command, every 0.5 s
    from the command's start each of its networks is flown that long ahead and the best scored flies on
    (:mod:`animat.fly.steer.lookahead`); 0: the first network only (the plain controller). Attributes: ``dt`` s
    (the control tick), ``body_length`` u, ``params``, ``speed``, ``t`` s, ``state`` (the fly's, world
    frame), ``flying``: the name of the network flying now.

    The physics is the training rollouts' (:func:`animat.fly.steer.tracking.command_tick`), one jitted tick per
    call; compiled on its own rather than inside a scan over ticks, it rounds differently in the last
    bit of float32 (measured: positions within 2e-7 u of :func:`animat.fly.replay.fly_genome`'s after
    0.5 s of hover from rest; flight being chaotic, the two drift apart over many seconds).
    """

    def __init__(
        self,
        steering,
        controller: str = "switch",
        speed: float | None = None,
        seed: int = 0,
        lookahead: float | None = None,
    ):
        import jax.numpy as jnp

        from animat.fly.steer.tracking import varied_starts

        if controller not in CONTROLLERS:
            raise ConfigError(f"unknown controller {controller!r}; choose from {', '.join(CONTROLLERS)}")
        self.steering = steering if isinstance(steering, Steering) else load_steering(steering)
        if controller == "goal" and self.steering.goal is None:
            raise ConfigError(
                f"steering directory {str(self.steering.folder)!r} has no goal network (--controller goal)"
            )
        if controller == "switch" and not self.steering.switch:
            raise ConfigError(
                f"steering directory {str(self.steering.folder)!r} has no switch networks (--controller switch)"
            )
        self.controller = controller
        self.speed = float(self.steering.speed if speed is None else speed)
        if not (np.isfinite(self.speed) and self.speed >= 0):
            raise ConfigError(f"--speed must be a finite number of u/s >= 0, got {speed}")
        self.params = self.steering.params
        self.dt = float(self.params.control_dt)
        self.body_length = float(self.params.body_length)
        self.lookahead = float(LOOKAHEAD_S if lookahead is None else lookahead)
        if not (np.isfinite(self.lookahead) and self.lookahead >= 0):
            raise ConfigError(f"--lookahead must be a finite number of seconds >= 0, got {lookahead}")
        self._ahead = int(round(self.lookahead / self.dt))  # ticks each candidate is flown ahead
        self.ticks = 0
        first = self._network("hover")
        cfg = TrainConfig.build(None, **runs.read_run_config(self.steering.folder / first.name))
        starts = varied_starts(self.params, 2, int(seed), cfg.start_speed, cfg.start_angle, cfg.start_spin)
        self.state = type(starts)(*(jnp.asarray(x[1] if seed else x[0]) for x in starts))
        self.command("hover")

    @property
    def t(self) -> float:
        return self.ticks * self.dt

    def _network(self, name: str) -> Network:
        return self.steering.goal if self.controller == "goal" else self.steering.switch_network(name)

    def command(self, name: str) -> None:
        """Switch to command ``name`` now: its network, and a new command frame at the fly's position and heading."""
        import jax.numpy as jnp

        from animat.fly.steer.tracking import command_velocity

        net = self._network(check_command(name))
        self.name, self.net = name, net
        self._tick, new_frame = _ticker(self.params, tuple(net.genome.activations), net.goal)
        self._net = {k: jnp.asarray(v) for k, v in net.genome.params.items()}
        self.frame = new_frame(self.state)
        self.direction = direction(name, float(self.frame.yaw))
        self._cmd = jnp.asarray(command_velocity(name, self.speed))
        self._candidates = self.steering.candidates(self.controller, name) if self._ahead else (net,)
        self._stacked = stack([n.genome.params for n in self._candidates]) if len(self._candidates) > 1 else None
        self._since = 0
        self.flying = net.name  # the network flying now (the lookahead's choice)

    def _choose(self) -> None:
        """The lookahead: fly every candidate ahead from now, keep the best scored
        (:mod:`animat.fly.steer.lookahead`)."""
        import jax

        fly = lookahead_rollout(self.params, tuple(self.net.genome.activations), self.net.goal, self._ahead)
        pos, vel = jax.device_get(fly(self._stacked, self.state, self.frame, self._cmd))
        cost = lookahead_cost(
            np.asarray(pos, float),
            np.asarray(vel, float),
            self.direction,
            np.asarray(self.frame.origin, float),
            self._since,
            speed=self.speed,
            body_length=self.body_length,
            dt=self.dt,
        )
        best = int(np.argmin(np.where(np.isfinite(cost), cost, np.inf)))
        self.flying = self._candidates[best].name
        self._net = jax.tree_util.tree_map(lambda a: a[best], self._stacked)

    def pose(self) -> tuple:
        """The fly's position ``(3,)``, orientation ``(4,)`` and wing angles ``(2, 3)`` now (a live view draws them)."""
        return self.state.pos, self.state.quat, self.state.wing

    def pool_state(self) -> dict:
        """The fly's state as a start pool keeps it (:func:`handover_states`): vel, quat, omega and wing."""
        return {key: getattr(self.state, key) for key in ("vel", "quat", "omega", "wing")}

    def tick(self) -> dict:
        """One control tick: ``{"t": s, "position": (3,), "velocity": (3,), "quat": (4,), "wing": (2, 3),
        "command": name, "command_direction": (3,) world unit vector (zeros for hover), "crashed": bool,
        "network": the name of the network that flew it}``."""
        import jax

        if self._stacked is not None and self._since % int(round(WINDOW_S / self.dt)) == 0:
            self._choose()
        self.state, self.frame = self._tick(self._net, self.state, self.frame, self._cmd)
        self.ticks += 1
        self._since += 1
        s = jax.device_get(self.state)
        return {
            "t": self.t,
            "position": s.pos,
            "velocity": s.vel,
            "quat": s.quat,
            "wing": s.wing,
            "command": self.name,
            "command_direction": self.direction.copy(),
            "crashed": bool(s.crashed),
            "network": self.flying,
        }


def fly_script(
    steering,
    script: list[tuple[str, float]],
    controller: str = "switch",
    speed: float | None = None,
    seed: int = 0,
    lookahead: float | None = None,
) -> dict[str, np.ndarray]:
    """Fly ``script`` (``[(command, seconds), ...]``, e.g. :func:`animat.fly.steer.commands.parse_script`'s) with a
    :class:`Pilot`; the stacked tick dicts: ``t (T,)``, ``position (T, 3)``, ``velocity (T, 3)``, ``quat (T, 4)``,
    ``wing (T, 2, 3)``, ``command (T,)`` str, ``command_direction (T, 3)``, ``crashed (T,)``, ``network (T,)`` str."""
    pilot = make_pilot(steering, controller, speed, seed, lookahead)
    for name, seconds in script:
        check_command(name)
        if not (np.isfinite(seconds) and seconds > 0):
            raise ConfigError(f"command {name!r}: the duration must be a finite number of seconds > 0, got {seconds}")
    ticks = []
    for name, seconds in script:
        pilot.command(name)
        ticks += [pilot.tick() for _ in range(max(1, int(round(seconds / pilot.dt))))]
    return {k: np.array([tk[k] for tk in ticks]) for k in ticks[0]}


def handover_states(steering, scripts: int, seed: int = 0, speed: float | None = None) -> dict[str, np.ndarray]:
    """A start pool (the arrays :func:`animat.fly.steer.tracking.read_start_pool` reads): the fly's state at every
    hand-over of ``scripts`` random 20 s scripts (:func:`animat.fly.steer.commands.random_script`, script ``i``
    drawn by ``seed + i``) flown by ``steering``'s switch controller at ``speed`` u/s (default the set's):
    the states a network must take over from in flight. A network trained from them (``start_pool``) is
    trained for the hand-overs it will meet; uniform ranges of velocity, tilt and spin miss the
    combinations of wing phase, body rocking and speed that flight produces. 6 states a script (the
    flight's start, at rest, is left out), crashed ones left out. Either preset's set (:func:`make_pilot`; the
    fruit fly's in m/s)."""

    if int(scripts) < 1:
        raise ConfigError(f"a start pool needs at least 1 script, got {scripts}")
    keep: dict[str, list] = {"vel": [], "quat": [], "omega": [], "wing": []}
    for i in range(int(scripts)):
        pilot = make_pilot(
            steering, "switch", speed, lookahead=0.0
        )  # the plain switcher's hand-overs (the pools train its networks)
        for k, (name, seconds) in enumerate(parse_script(random_script(np.random.default_rng(int(seed) + i)))):
            if k and not bool(pilot.state.crashed):
                for key, value in pilot.pool_state().items():
                    keep[key].append(np.asarray(value, np.float32))
            pilot.command(name)
            for _ in range(max(1, int(round(seconds / pilot.dt)))):
                pilot.tick()
    if not keep["vel"]:
        raise ConfigError("every hand-over crashed: no state to keep in the start pool")
    return {key: np.stack(values) for key, values in keep.items()}


def task_flight(
    run_dir: Path, task: str, speed: float, seconds: float
) -> tuple[dict[str, np.ndarray], Steering, str, str]:
    """Fly the network that ``animat fly train --task`` wrote into ``run_dir`` on its own task for ``seconds``,
    from rest: a direction or hover network holds its command throughout (switch controller), a goal
    network tours every command in :data:`COMMANDS` order, equal parts (goal controller). Returns
    ``(flight, steering, controller, script)``: :func:`fly_script`'s arrays, the one-network set, the
    controller and the script as ``"name:seconds,..."``."""
    goal = task == "goal"
    steering = network_steering(Path(run_dir), task, speed)
    script = [(c, seconds / len(COMMANDS)) for c in COMMANDS] if goal else [(task, float(seconds))]
    controller = "goal" if goal else "switch"
    with phase(f"flying the {task} network's {seconds:g} s replay"):
        flight = fly_script(steering, script, controller=controller)
    return flight, steering, controller, ",".join(f"{c}:{d:g}" for c, d in script)
