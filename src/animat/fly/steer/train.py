"""Training a steering set (``animat fly train-steering``): the steering TOML (networks, start pools,
distilled goal networks, alternates), its pools and distillations, and the resumable training of the whole
set into a steering directory (:mod:`animat.fly.steer.pilot`, which flies it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from animat import runs
from animat.config import check_known, load_toml
from animat.errors import CheckpointError, ConfigError
from animat.fly.options import TrainConfig
from animat.fly.steer.commands import COMMANDS
from animat.fly.steer.pilot import STEERING_FILE, Steering, handover_states, load_network


def read_steering_config(path: str | Path) -> tuple[dict, dict[str, dict]]:
    """A steering set's TOML: ``preset``, ``speed`` (u/s: the set flies at it, and its networks train at it
    unless one names its own ``speed``, as a stage trained at another speed may), ``[train]`` (options of
    every network) and ``[networks.NAME]`` (each network's own options, ``task`` among them, and ``from = "OTHER"``:
    start from that network's final population; a network may be a stage that a later one continues). The set's network
    for a command is the last one listed with that task (the goal network: the last with ``task = "goal"``). Returns
    ``(steering.json's content, {name: options})``, each network's options checked (:class:`TrainConfig`);
    ``[pools.NAME]`` and ``[distill.NAME]``: see :class:`_SetReader`. ``goal = "NAME"``: the set's goal
    network (default: the last network with ``task = "goal"``); a ``[distill.NAME]`` as distilled, then an entry of its
    own (``distilled_only``, trained last). ``alternates = {COMMAND = ["NAME", ...], goal = [...]}``: more networks for
    a command (of its task, listed) or for the goal controller (goal networks or ``[distill.NAME]``s), which the pilot's
    lookahead chooses among (:mod:`animat.fly.steer.lookahead`); a network named there is never the set's own for its
    command."""
    spec = load_toml(path)
    check_known(
        ("preset", "speed", "train", "networks", "pools", "distill", "goal", "alternates"),
        spec,
        "steering-set key",
        path,
    )
    speed = spec.get("speed", TrainConfig.speed)
    reader = _SetReader(path, spec)
    for name, own in dict(spec.get("networks", {})).items():
        reader.add_network(name, {**dict(spec.get("train", {})), "speed": speed, **dict(own)})
    networks, distills = reader.networks, reader.distills
    if not networks:
        raise ConfigError(f"{str(path)!r} lists no [networks.NAME]")
    alternates = {
        key: list(names) if isinstance(names, list) else names
        for key, names in dict(spec.get("alternates", {})).items()
    }
    extra = {n for names in alternates.values() if isinstance(names, list) for n in names}
    switch = {v["task"]: name for name, v in networks.items() if v["task"] in COMMANDS and name not in extra}
    goals = [name for name, v in networks.items() if v["task"] == "goal" and name not in extra]
    goal = spec.get("goal", goals[-1] if goals else None)
    for key, names in alternates.items():
        reader.check_alternates(key, names)
    if goal in distills and goal not in networks:  # the set's goal network is a distilled one as it is
        reader.add_distilled_only(goal)
    elif goal is not None and goal not in goals:
        raise ConfigError(f"{str(path)!r}: goal = {goal!r} names no goal network or [distill.NAME]")
    unused = sorted(set(distills) - {v["distill"]["name"] for v in networks.values() if v["distill"]})
    if unused:
        raise ConfigError(
            f"{str(path)!r}: [distill.{unused[0]}] is neither a goal network's `from`, the set's `goal` nor an "
            "alternate"
        )
    record = {
        "preset": str(spec.get("preset", "paper")),
        "speed": float(speed),
        "switch": switch,
        "goal": goal,
        **({"alternates": alternates} if alternates else {}),
    }
    return record, networks


class _SetReader:
    """The networks of a steering set's TOML (``spec``, read from ``path``), checked as they are added in order:
    ``networks[name]`` holds ``options``, ``from``, ``task``, ``pool``, ``pool_spec``, ``distill`` (and
    ``distilled_only`` for a ``[distill.NAME]`` used as it is).

    ``[pools.NAME]`` (``scripts``, ``seed``, ``networks``: one network per command, listed before): a start pool
    (:func:`handover_states`) that a network names as its ``start_pool = "NAME"``; each network's ``pool`` is that name
    or None, its ``pool_spec`` the pool's table with ``tasks`` (its networks' commands) or None. ``[distill.NAME]``
    (``networks``: one switch network per command, listed before; the rest :class:`DistillConfig` options, its
    ``start_pool`` a ``[pools.NAME]``): a goal network distilled from those networks (:mod:`animat.fly.steer.distill`)
    that a goal network names as ``from = "NAME"`` (it goes on by evolution); that network's ``distill`` is then
    ``{"name", "options", "networks", "tasks", "pool", "pool_spec"}``, else None."""

    def __init__(self, path: str | Path, spec: dict) -> None:
        self.path = path
        self.pools = {name: dict(p) for name, p in dict(spec.get("pools", {})).items()}
        self.distills = {name: dict(d) for name, d in dict(spec.get("distill", {})).items()}
        self.networks: dict[str, dict] = {}

    def pool_of(self, owner: str, pool: str | None) -> dict | None:
        """The start pool ``pool`` that ``owner`` names, with its networks' ``tasks``; None for no pool."""
        if pool is None:
            return None
        if pool not in self.pools:
            raise ConfigError(f"{str(self.path)!r}: {owner} names start pool {pool!r}, which is no [pools.NAME]")
        check_pool(self.path, pool, self.pools[pool], self.networks)
        return {**self.pools[pool], "tasks": {n: self.networks[n]["task"] for n in self.pools[pool]["networks"]}}

    def distill_of(self, stage: str, user: str) -> dict:
        """``[distill.STAGE]`` as ``user`` (a network, or "the end") takes it: one switch network per command."""
        from animat.fly.options import DistillConfig

        taught = dict(self.distills[stage])
        nets = taught.pop("networks", None)
        if (
            not isinstance(nets, list)
            or any(n not in self.networks for n in nets)
            or sorted(self.networks[n]["task"] for n in nets) != sorted(COMMANDS)
        ):
            raise ConfigError(
                f"{str(self.path)!r}: [distill.{stage}] networks must be one switch network per command "
                f"({', '.join(COMMANDS)}) listed before {user}; got {nets}"
            )
        pool = taught.get("start_pool")
        DistillConfig.build(None, **{**taught, "start_pool": None})
        return {
            "name": stage,
            "options": taught,
            "networks": nets,
            "tasks": {n: self.networks[n]["task"] for n in nets},
            "pool": pool,
            "pool_spec": self.pool_of(f"[distill.{stage}]", pool),
        }

    def add_network(self, name: str, options: dict) -> None:
        """``[networks.NAME]`` with its ``options`` (the set's ``[train]`` and speed under its own)."""
        source = options.pop("from", None)
        cfg = TrainConfig.build(None, **options)
        if cfg.task is None:
            raise ConfigError(f"{str(self.path)!r}: network {name!r} has no task")
        taught = None
        if source in self.distills and source not in self.networks:
            if cfg.task != "goal":
                raise ConfigError(
                    f"{str(self.path)!r}: network {name!r} starts from distilled network {source!r}: only a goal "
                    "network can"
                )
            taught = self.distill_of(source, repr(name))
        elif source is not None and source not in self.networks:
            raise ConfigError(
                f"{str(self.path)!r}: network {name!r} starts from {source!r}, which is not a network or "
                "[distill.NAME] listed before it"
            )
        pool = cfg.start_pool
        self.networks[name] = {
            "options": options,
            "from": source,
            "task": cfg.task,
            "pool": pool,
            "pool_spec": self.pool_of(f"network {name!r}", pool),
            "distill": taught,
        }

    def add_distilled_only(self, stage: str) -> None:
        """``[distill.STAGE]`` flown as it is (trained last, after the networks it learns from)."""
        self.networks[stage] = {
            "options": None,
            "from": None,
            "task": "goal",
            "pool": None,
            "pool_spec": None,
            "distill": self.distill_of(stage, "the end"),
            "distilled_only": True,
        }

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
            elif n not in self.networks or self.networks[n]["task"] != key:
                raise ConfigError(
                    f"{str(self.path)!r}: alternates of {key}: {n!r} is no {key} "
                    f"network{' or [distill.NAME]' if key == 'goal' else ''} listed"
                )


def check_pool(path, name: str, pool: dict, before: dict[str, dict]) -> None:
    """ConfigError (one line) unless ``[pools.NAME]`` ``pool`` has ``scripts`` ≥ 1, an integer ``seed`` and
    ``networks``: one of the networks listed ``before`` for each command (the switch set that flies it)."""
    check_known(("scripts", "seed", "networks"), pool, f"key of [pools.{name}]", path)
    nets = pool.get("networks", [])
    if not (isinstance(pool.get("scripts"), int) and pool["scripts"] >= 1 and isinstance(pool.get("seed", 0), int)):
        raise ConfigError(f"{str(path)!r}: [pools.{name}] needs scripts = a whole number >= 1 and an integer seed")
    missing = [n for n in nets if n not in before]
    tasks = sorted(before[n]["task"] for n in nets if n in before)
    if missing or tasks != sorted(COMMANDS):
        raise ConfigError(
            f"{str(path)!r}: [pools.{name}] networks must be one network per command ({', '.join(COMMANDS)}) "
            f"listed before the networks that use it; got {nets}{f' ({missing} not listed before)' if missing else ''}"
        )


def record_pool(out: Path, name: str, spec: dict, speed: float) -> Path:
    """``out/NAME.npz``: start pool ``NAME`` (``spec``: its network's ``pool_spec``, :func:`read_steering_config`)
    recorded from ``out``'s trained networks (:func:`handover_states`, written atomically); kept when it exists."""
    file = out / f"{name}.npz"
    if file.is_file():
        return file
    for net in spec["networks"]:
        if not (out / net / "summary.json").is_file():
            raise CheckpointError(
                f"start pool {name!r} flies network {net!r}, which is not trained yet in {str(out)!r}"
            )
    switch = {spec["tasks"][net]: load_network(out, net, False) for net in spec["networks"]}
    states = handover_states(Steering(out, "", float(speed), switch, None), spec["scripts"], spec.get("seed", 0))
    return runs.atomic_save_npz(file, **states)


def distill_stage(out: Path, stage: dict, speed: float, on_network: Callable[[str, str], Any] | None = None) -> Path:
    """``out/NAME``: the goal network of ``[distill.NAME]`` (``stage``: a network's ``distill``,
    :func:`read_steering_config`) distilled from ``out``'s trained switch networks
    (:func:`animat.fly.steer.distill.distill`,
    its start pool recorded first where it names one); kept when finished, resumed when interrupted."""
    from animat.fly.options import DistillConfig
    from animat.fly.steer.distill import distill

    where = out / stage["name"]
    if (where / "summary.json").is_file():
        return where
    for net in stage["networks"]:
        if not (out / net / "summary.json").is_file():
            raise CheckpointError(
                f"[distill.{stage['name']}] learns from network {net!r}, which is not trained yet in {str(out)!r}"
            )
    pool = None
    if stage["pool"] is not None:
        if on_network is not None and not (out / f"{stage['pool']}.npz").is_file():
            on_network(stage["pool"], "recording (start pool)")
        pool = str(record_pool(out, stage["pool"], stage["pool_spec"], speed))
    teacher = Steering(
        out, "", float(speed), {stage["tasks"][n]: load_network(out, n, False) for n in stage["networks"]}, None
    )
    resume = (where / "checkpoints").is_dir()
    if on_network is not None:
        on_network(stage["name"], "resumed (distilling)" if resume else "started (distilling)")
    where.mkdir(exist_ok=True)
    distill(
        teacher,
        DistillConfig.build(None, **{**stage["options"], "start_pool": pool}),
        where,
        resume=resume,
        teacher=f"the set's {', '.join(stage['networks'])}",
    )
    if on_network is not None:
        on_network(stage["name"], "finished")
    return where


def train_steering(
    config: str | Path,
    out: str | Path,
    only: list[str] | None = None,
    on_network: Callable[[str, str], Any] | None = None,
) -> dict[str, dict]:
    """Train the steering set of TOML ``config`` (:func:`read_steering_config`) into directory ``out``:
    ``steering.json`` and one run directory per network. Resumable: a finished network (its
    ``summary.json``) is kept, an interrupted one resumed from its checkpoint, a new one started (from its
    ``from`` network's final population where it names one; from its ``start_pool``'s states, that pool
    recorded into ``out/NAME.npz`` when first needed, :func:`record_pool`). ``only``: these networks only (e.g. to
    train two parts of a set in two processes). ``on_network(name, what)`` is told each step. Returns
    ``{name: {"state": "kept"|"resumed"|"trained", "seconds": wall s, "summary": ...}}``."""
    record, networks = read_steering_config(config)
    unknown = sorted(set(only or ()) - set(networks))
    if unknown:
        raise ConfigError(f"unknown network(s) {unknown}; {str(config)!r} has {', '.join(networks)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_json(out / STEERING_FILE, record)
    done: dict[str, dict] = {}
    for name, net in networks.items():
        if only and name not in only:
            continue
        summary_file = out / name / "summary.json"
        if net.get("distilled_only"):
            kept, t0 = summary_file.is_file(), time.perf_counter()
            distill_stage(out, net["distill"], record["speed"], on_network)
            done[name] = {
                "state": "kept" if kept else "trained",
                "seconds": 0.0 if kept else time.perf_counter() - t0,
                "summary": runs.read_json(summary_file),
            }
        elif summary_file.is_file():
            done[name] = {"state": "kept", "seconds": 0.0, "summary": runs.read_json(summary_file)}
        else:
            done[name] = _train_network(out, name, net, record["speed"], on_network)
    return done


def _train_network(out: Path, name: str, net: dict, speed: float, on_network) -> dict:
    """Train (or resume) network ``name`` of a set in ``out/NAME``: its distillation, ``from`` network and start pool
    first where it names them; returns ``{"state", "seconds", "summary"}``."""
    from animat.fly.train import train

    where = out / name
    cfg = TrainConfig.build(None, **net["options"])
    resume = (where / "checkpoints").is_dir()
    if net["distill"] is not None and not resume:
        distill_stage(out, net["distill"], speed, on_network)
    source = None if resume or net["from"] is None else out / net["from"]
    if source is not None and not (source / "summary.json").is_file():
        raise CheckpointError(f"network {name!r} starts from {net['from']!r}, which is not trained yet in {str(out)!r}")
    if net["pool"] is not None:
        if on_network is not None and not (out / f"{net['pool']}.npz").is_file():
            on_network(net["pool"], "recording (start pool)")
        pool = record_pool(out, net["pool"], net["pool_spec"], speed)
        cfg = TrainConfig.build(None, **{**net["options"], "start_pool": str(pool)})
    if on_network is not None:
        on_network(name, "resumed" if resume else "started")
    where.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    summary = train(cfg, where, resume=resume, from_run=source)
    result = {"state": "resumed" if resume else "trained", "seconds": time.perf_counter() - t0, "summary": summary}
    if on_network is not None:
        on_network(name, "finished")
    return result
