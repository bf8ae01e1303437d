"""A steering set as declared data: what a steering directory's ``steering.json`` names (:class:`SteeringRecord`) and
what a steering set's TOML trains (:class:`SteeringSet`: its networks, start pools and distillation stages, in
training order), read from either file through an explicit upgrade step.

Both files carry a ``version``; a file without one is version 1, and :func:`upgraded` brings an older file to the
current version one step at a time before it is read, so an old steering directory or TOML file (the shipped
``pretrained:paper``, configs written before versions) reads into the same dataclasses as a current one.

- ``steering.json`` 1 (no ``version``): ``preset``, ``goal`` and ``alternates`` could be left out (meaning ``""``,
  no goal network, none). 2: ``{"version": 2, "preset", "speed", "switch", "goal", "alternates"}``, every key written.
- steering TOML 1 (no ``version``): ``preset`` and ``speed`` could be left out (meaning ``"paper"`` and 2 u/s,
  TrainConfig's default speed then). 2: ``version = 2`` and both named; the rest as in 1
  (:func:`read_steering_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from animat import runs
from animat.config import check_known, load_toml
from animat.errors import ConfigError
from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.fly.options import DistillConfig, TrainConfig
from animat.fly.steer.commands import COMMANDS, check_command

STEERING_FILE = "steering.json"
FILE_VERSION = 2  # steering.json
TOML_VERSION = 2  # a steering set's TOML
FILE_KEYS = ("version", "preset", "speed", "switch", "goal", "alternates")
TOML_KEYS = ("version", "preset", "speed", "train", "networks", "pools", "distill", "goal", "alternates")


def upgraded(spec, steps: dict[int, Callable[[dict], dict]], current: int, where: str) -> dict:
    """``spec`` (a file's content) at version ``current``: a file without ``version`` is version 1, and ``steps[v]``
    turns version ``v`` into ``v + 1``. ConfigError in one line for a file that is no table, or whose version is no
    whole number from 1 to ``current`` (a newer one: written by a newer animat)."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{where!r} is malformed (not a table of keys)")
    version = spec.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"{where!r}: version must be a whole number >= 1, got {version!r}")
    if version > current:
        raise ConfigError(f"{where!r} is version {version}; this animat reads versions 1 to {current} (upgrade animat)")
    for v in range(version, current):
        spec = steps[v](spec)
    return spec


def _file_1_to_2(spec: dict) -> dict:
    """steering.json 1 -> 2: the keys it could leave out, written."""
    return {"preset": "", "switch": {}, "goal": None, "alternates": {}, **spec, "version": 2}


def _toml_1_to_2(spec: dict) -> dict:
    """Steering TOML 1 -> 2: its preset and speed named (version 1's defaults: the paper preset, 2 u/s)."""
    return {"preset": "paper", "speed": 2.0, **spec, "version": 2}


FILE_STEPS = {1: _file_1_to_2}
TOML_STEPS = {1: _toml_1_to_2}


@dataclass(frozen=True)
class SteeringRecord:
    """What ``steering.json`` names: the set's ``preset``, its target ``speed`` u/s, ``switch`` (command -> the
    sub-folder of its network), ``goal`` (the goal network's sub-folder or None) and ``alternates`` (command or
    ``"goal"`` -> more sub-folders for that command, which the pilot's lookahead chooses among)."""

    preset: str
    speed: float
    switch: dict[str, str]
    goal: str | None
    alternates: dict[str, tuple[str, ...]]

    def to_json(self) -> dict:
        """``steering.json``'s content at :data:`FILE_VERSION`."""
        return {
            "version": FILE_VERSION,
            "preset": self.preset,
            "speed": self.speed,
            "switch": dict(self.switch),
            "goal": self.goal,
            "alternates": {key: list(names) for key, names in self.alternates.items()},
        }

    @classmethod
    def from_json(cls, spec: dict, where: str) -> SteeringRecord:
        """A current (:data:`FILE_VERSION`) ``spec``; one-line ConfigError for an unknown key, an unknown command, a
        missing key, alternates that are no list or of a command the set has no network for."""
        check_known(FILE_KEYS, spec, "steering key", where)
        try:
            switch = {check_command(cmd): str(sub) for cmd, sub in dict(spec["switch"]).items()}
            goal = None if spec["goal"] is None else str(spec["goal"])
            alternates = {}
            for key, subs in dict(spec["alternates"]).items():
                own = goal if key == "goal" else switch.get(check_command(key))
                if own is None or not isinstance(subs, list):
                    raise ConfigError(f"{where!r}: alternates of {key!r} need a list and the set's own {key!r} network")
                alternates[key] = tuple(str(sub) for sub in subs)
            return cls(str(spec["preset"]), float(spec["speed"]), switch, goal, alternates)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ConfigError(f"{where!r} is malformed ({exc})") from None


def read_steering_file(file: str | Path) -> SteeringRecord:
    """A steering directory's ``steering.json`` of any version (:func:`upgraded`), as a :class:`SteeringRecord`."""
    where = str(file)
    return SteeringRecord.from_json(upgraded(runs.read_json(file), FILE_STEPS, FILE_VERSION, where), where)


@dataclass(frozen=True)
class StartPool:
    """``[pools.NAME]``: the fly's states at the hand-overs of ``scripts`` random scripts (drawn from ``seed``) flown
    by ``networks`` (one per command, ``tasks``: network -> its command;
    :func:`animat.fly.steer.pilot.handover_states`), recorded into ``NAME.npz`` of the steering directory."""

    name: str
    scripts: int
    seed: int
    networks: tuple[str, ...]
    tasks: dict[str, str]


@dataclass(frozen=True)
class DistillStage:
    """``[distill.NAME]``: a goal network distilled (:mod:`animat.fly.steer.distill`) from ``networks`` (one switch
    network per command, ``tasks``: network -> its command) with ``config`` (its ``start_pool`` unset: the pool is
    ``pool``, recorded into the steering directory first)."""

    name: str
    config: DistillConfig
    networks: tuple[str, ...]
    tasks: dict[str, str]
    pool: StartPool | None


@dataclass(frozen=True)
class SetNetwork:
    """One network of a steering set, trained into the steering directory's sub-folder ``name`` for ``task``:
    by evolution with ``config`` (its ``start_pool`` unset: the pool is ``pool``), from the final population of
    network ``source`` (its ``from``) or of the goal network of ``distill`` (distilled first); or, with ``config``
    None, ``distill``'s goal network as it is (a ``[distill.NAME]`` that the set flies, trained last), or the network
    of the run ``taken`` as it is (``take = "pretrained:NAME"``)."""

    name: str
    task: str
    config: TrainConfig | DrosophilaTrainConfig | None
    source: str | None = None
    pool: StartPool | None = None
    distill: DistillStage | None = None
    taken: str | None = None  # ``take = "pretrained:NAME"`` (or a run directory): that run's network as it is

    @property
    def distilled_only(self) -> bool:
        return self.config is None and self.taken is None


@dataclass(frozen=True)
class SteeringSet:
    """A steering set's TOML: ``record`` (the ``steering.json`` it trains) and its ``networks`` (name ->
    :class:`SetNetwork`, in training order)."""

    record: SteeringRecord
    networks: dict[str, SetNetwork]


def read_steering_config(path: str | Path) -> SteeringSet:
    """A steering set's TOML of any version (:func:`upgraded`): ``preset``, ``speed`` (u/s: the set flies at it, and its
    networks train at it unless one names its own ``speed``, as a stage trained at another speed may), ``[train]``
    (options of every network) and ``[networks.NAME]`` (each network's own options, ``task`` among them, and
    ``from = "OTHER"``: start from that network's final population; a network may be a stage that a later one
    continues). The set's network for a command is the last one listed with that task. ``[pools.NAME]`` and
    ``[distill.NAME]``: see :class:`_SetReader`. ``goal = "NAME"``: the set's goal network (default: the last network
    with ``task = "goal"``); a ``[distill.NAME]`` as distilled, then an entry of its own (trained last).
    ``alternates = {COMMAND = ["NAME", ...], goal = [...]}``: more networks for a command (of its task, listed) or for
    the goal controller (goal networks or ``[distill.NAME]``s), which the pilot's lookahead chooses among
    (:mod:`animat.fly.steer.lookahead`); a network named there is never the set's own for its command. Every network's
    options are checked (:class:`TrainConfig`, :class:`DistillConfig`); faults are one-line ConfigErrors."""
    spec = upgraded(load_toml(path), TOML_STEPS, TOML_VERSION, str(path))
    check_known(TOML_KEYS, spec, "steering-set key", path)
    missing = [key for key in ("preset", "speed") if key not in spec]
    if missing:
        raise ConfigError(f"{str(path)!r}: a version {TOML_VERSION} steering set names its {' and '.join(missing)}")
    reader = _SetReader(path, spec, str(spec["preset"]))
    for name, own in dict(spec.get("networks", {})).items():
        reader.add_network(name, {**dict(spec.get("train", {})), "speed": spec["speed"], **dict(own)})
    networks = dict(reader.networks)
    if not networks:
        raise ConfigError(f"{str(path)!r} lists no [networks.NAME]")
    alternates = dict(spec.get("alternates", {}))
    extra = {n for names in alternates.values() if isinstance(names, list) for n in names}
    switch = {net.task: name for name, net in networks.items() if net.task in COMMANDS and name not in extra}
    goals = [name for name, net in networks.items() if net.task == "goal" and name not in extra]
    goal = spec.get("goal", goals[-1] if goals else None)
    for key, names in alternates.items():
        reader.check_alternates(key, names)
    if goal in reader.distills and goal not in networks:  # the set's goal network is a distilled one as it is
        reader.add_distilled_only(goal)
    elif goal is not None and goal not in goals:
        raise ConfigError(f"{str(path)!r}: goal = {goal!r} names no goal network or [distill.NAME]")
    used = {net.distill.name for net in reader.networks.values() if net.distill is not None}
    unused = sorted(set(reader.distills) - used)
    if unused:
        raise ConfigError(
            f"{str(path)!r}: [distill.{unused[0]}] is neither a goal network's `from`, the set's `goal` nor an "
            "alternate"
        )
    alternates = {key: tuple(names) for key, names in alternates.items()}
    record = SteeringRecord(str(spec["preset"]), float(spec["speed"]), switch, goal, alternates)
    return SteeringSet(record, reader.networks)


class _SetReader:
    """The networks of a steering set's TOML (``spec``, read from ``path``), checked as they are added in order into
    ``networks`` (name -> :class:`SetNetwork`).

    ``[pools.NAME]`` (``scripts``, ``seed``, ``networks``: one network per command, listed before): a
    :class:`StartPool` that a network names as its ``start_pool = "NAME"``. ``[distill.NAME]`` (``networks``: one
    switch network per command, listed before; the rest :class:`DistillConfig` options, its ``start_pool`` a
    ``[pools.NAME]``): a :class:`DistillStage` that a goal network names as ``from = "NAME"`` (it goes on by
    evolution)."""

    def __init__(self, path: str | Path, spec: dict, preset: str = "paper") -> None:
        self.path, self.preset = path, preset
        self.pools = {name: dict(p) for name, p in dict(spec.get("pools", {})).items()}
        self.distills = {name: dict(d) for name, d in dict(spec.get("distill", {})).items()}
        self.networks: dict[str, SetNetwork] = {}

    def pool_of(self, owner: str, pool: str | None) -> StartPool | None:
        """The start pool ``pool`` that ``owner`` names; None for no pool."""
        if pool is None:
            return None
        if pool not in self.pools:
            raise ConfigError(f"{str(self.path)!r}: {owner} names start pool {pool!r}, which is no [pools.NAME]")
        spec = self.pools[pool]
        check_pool(self.path, pool, spec, self.networks)
        nets = tuple(spec["networks"])
        return StartPool(pool, spec["scripts"], spec.get("seed", 0), nets, {n: self.networks[n].task for n in nets})

    def distill_of(self, stage: str, user: str) -> DistillStage:
        """``[distill.STAGE]`` as ``user`` (a network, or "the end") takes it: one switch network per command."""
        taught = dict(self.distills[stage])
        nets = taught.pop("networks", None)
        if (
            not isinstance(nets, list)
            or any(n not in self.networks for n in nets)
            or sorted(self.networks[n].task for n in nets) != sorted(COMMANDS)
        ):
            raise ConfigError(
                f"{str(self.path)!r}: [distill.{stage}] networks must be one switch network per command "
                f"({', '.join(COMMANDS)}) listed before {user}; got {nets}"
            )
        config = DistillConfig.build(None, **{**taught, "start_pool": None})
        pool = self.pool_of(f"[distill.{stage}]", taught.get("start_pool"))
        return DistillStage(stage, config, tuple(nets), {n: self.networks[n].task for n in nets}, pool)

    def add_network(self, name: str, options: dict) -> None:
        """``[networks.NAME]`` with its ``options`` (the set's ``[train]`` and speed under its own). Its ``from``: a
        network or ``[distill.NAME]`` listed before, or a run outside the set (``pretrained:NAME`` or a path)."""
        source, taken = options.pop("from", None), options.pop("take", None)
        if taken is not None:
            return self.add_taken(name, str(taken), options.get("task"))
        cfg, task = self.network_config(name, options)
        taught = None
        if source in self.distills and source not in self.networks:
            if task != "goal":
                raise ConfigError(
                    f"{str(self.path)!r}: network {name!r} starts from distilled network {source!r}: only a goal "
                    "network can"
                )
            taught = self.distill_of(source, repr(name))
        elif source is not None and source not in self.networks and not outside_run(source):
            raise ConfigError(
                f"{str(self.path)!r}: network {name!r} starts from {source!r}, which is not a network or "
                "[distill.NAME] listed before it, pretrained:NAME or a run directory"
            )
        pool = self.pool_of(f"network {name!r}", cfg.start_pool)
        config = cfg if pool is None else dataclasses.replace(cfg, start_pool=None)
        self.networks[name] = SetNetwork(name, task, config, source, pool, taught)

    def add_taken(self, name: str, taken: str, task) -> None:
        """``[networks.NAME]`` with ``take = RUN``: the network of run ``taken`` (``pretrained:NAME`` or a directory)
        for ``task``, as it is (its options beside ``task`` are not read)."""
        if task not in COMMANDS or not outside_run(taken):
            raise ConfigError(
                f"{str(self.path)!r}: network {name!r} takes {taken!r}: it needs a task ({', '.join(COMMANDS)}) and "
                f"pretrained:NAME or a run directory, got task {task!r}"
            )
        self.networks[name] = SetNetwork(name, task, None, taken=taken)

    def network_config(self, name: str, options: dict) -> tuple[TrainConfig | DrosophilaTrainConfig, str]:
        """The checked training options of network ``name`` and its task: a paper fly's :class:`TrainConfig` (its
        ``task``), or for a ``preset = "drosophila"`` set a :class:`DrosophilaTrainConfig` whose ``fitness`` is the
        task (hover or a direction: the preset has no goal network yet)."""
        if self.preset == "drosophila":
            task = options.pop("task", None)
            if task not in COMMANDS:
                raise ConfigError(
                    f"{str(self.path)!r}: network {name!r} needs a task of the drosophila preset "
                    f"({', '.join(COMMANDS)}), got {task!r}"
                )
            return DrosophilaTrainConfig.build(None, **options, fitness=task), task
        cfg = TrainConfig.build(None, **options)
        if cfg.task is None:
            raise ConfigError(f"{str(self.path)!r}: network {name!r} has no task")
        return cfg, cfg.task

    def add_distilled_only(self, stage: str) -> None:
        """``[distill.STAGE]`` flown as it is (trained last, after the networks it learns from)."""
        self.networks[stage] = SetNetwork(stage, "goal", None, distill=self.distill_of(stage, "the end"))

    def check_alternates(self, key: str, names) -> None:
        """``alternates.KEY = names``: networks of that command's task (or goal networks and ``[distill.NAME]``s)."""
        if (key != "goal" and key not in COMMANDS) or not isinstance(names, list):
            raise ConfigError(
                f"{str(self.path)!r}: alternates must map a command or goal to a list of networks; "
                f"got {key} = {names!r}"
            )
        for n in names:
            if key == "goal" and n in self.distills and n not in self.networks:
                self.add_distilled_only(n)
            elif n not in self.networks or self.networks[n].task != key:
                raise ConfigError(
                    f"{str(self.path)!r}: alternates of {key}: {n!r} is no {key} "
                    f"network{' or [distill.NAME]' if key == 'goal' else ''} listed"
                )


def outside_run(source: str) -> bool:
    """Whether a network's ``from`` names a run outside its set: ``pretrained:NAME`` or a directory."""
    return source.startswith("pretrained:") or Path(source).is_dir()


def check_pool(path, name: str, pool: dict, before: dict[str, SetNetwork]) -> None:
    """ConfigError (one line) unless ``[pools.NAME]`` ``pool`` has ``scripts`` ≥ 1, an integer ``seed`` and
    ``networks``: one of the networks listed ``before`` for each command (the switch set that flies it)."""
    check_known(("scripts", "seed", "networks"), pool, f"key of [pools.{name}]", path)
    nets = pool.get("networks", [])
    if not (isinstance(pool.get("scripts"), int) and pool["scripts"] >= 1 and isinstance(pool.get("seed", 0), int)):
        raise ConfigError(f"{str(path)!r}: [pools.{name}] needs scripts = a whole number >= 1 and an integer seed")
    missing = [n for n in nets if n not in before]
    tasks = sorted(before[n].task for n in nets if n in before)
    if missing or tasks != sorted(COMMANDS):
        raise ConfigError(
            f"{str(path)!r}: [pools.{name}] networks must be one network per command ({', '.join(COMMANDS)}) "
            f"listed before the networks that use it; got {nets}{f' ({missing} not listed before)' if missing else ''}"
        )
