"""Training a steering set (``animat fly train-steering``): the set of a steering TOML
(:func:`animat.fly.steer.steering_set.read_steering_config`: networks, start pools, distilled goal networks,
alternates), its pools and distillations, and the resumable training of the whole set into a steering directory
(:mod:`animat.fly.steer.pilot`, which flies it)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from animat import runs
from animat.errors import CheckpointError, ConfigError
from animat.fly.presets import PRESETS
from animat.fly.steer.distill import distill
from animat.fly.steer.pilot import Steering, handover_states, load_network
from animat.fly.steer.steering_set import (
    STEERING_FILE,
    DistillStage,
    SetNetwork,
    StartPool,
    outside_run,
    read_steering_config,
)
from animat.pretrained import resolve


def finished(where: Path) -> bool:
    """Whether network folder ``where`` holds a finished network: its run's ``summary.json``, or a shipped network's
    ``best_genome.npz`` without a ``checkpoints/`` folder (a ``pretrained:`` set's folders are reduced to config.json
    and the genome: copied into a steering directory, a set's training goes on from them)."""
    shipped = (where / "best_genome.npz").is_file() and not (where / "checkpoints").is_dir()
    return (where / "summary.json").is_file() or shipped


def record_pool(out: Path, pool: StartPool, speed: float) -> Path:
    """``out/NAME.npz``: start pool ``pool`` recorded from ``out``'s trained networks (:func:`handover_states`, written
    atomically); kept when it exists."""
    file = out / f"{pool.name}.npz"
    if file.is_file():
        return file
    for net in pool.networks:
        if not finished(out / net):
            raise CheckpointError(
                f"start pool {pool.name!r} flies network {net!r}, which is not trained yet in {str(out)!r}"
            )
    switch = {pool.tasks[net]: load_network(out, net, False) for net in pool.networks}
    states = handover_states(Steering(out, "", float(speed), switch, None), pool.scripts, pool.seed)
    return runs.atomic_save_npz(file, **states)


def pool_file(out: Path, pool: StartPool | None, speed: float, on_network) -> str | None:
    """The path of ``pool``'s ``.npz`` in ``out`` (recorded now where it is not yet, :func:`record_pool`); None for no
    pool."""
    if pool is None:
        return None
    if on_network is not None and not (out / f"{pool.name}.npz").is_file():
        on_network(pool.name, "recording (start pool)")
    return str(record_pool(out, pool, speed))


def distill_stage(
    out: Path, stage: DistillStage, speed: float, on_network: Callable[[str, str], Any] | None = None
) -> Path:
    """``out/NAME``: the goal network of ``[distill.NAME]`` ``stage`` distilled from ``out``'s trained switch networks
    (:func:`animat.fly.steer.distill.distill`, its start pool recorded first where it names one); kept when finished,
    resumed when interrupted."""

    where = out / stage.name
    if (where / "summary.json").is_file():
        return where
    for net in stage.networks:
        if not finished(out / net):
            raise CheckpointError(
                f"[distill.{stage.name}] learns from network {net!r}, which is not trained yet in {str(out)!r}"
            )
    pool = pool_file(out, stage.pool, speed, on_network)
    teacher = Steering(
        out, "", float(speed), {stage.tasks[n]: load_network(out, n, False) for n in stage.networks}, None
    )
    resume = (where / "checkpoints").is_dir()
    if on_network is not None:
        on_network(stage.name, "resumed (distilling)" if resume else "started (distilling)")
    where.mkdir(exist_ok=True)
    config = stage.config if pool is None else dataclasses.replace(stage.config, start_pool=pool)
    distill(teacher, config, where, resume=resume, teacher=f"the set's {', '.join(stage.networks)}")
    if on_network is not None:
        on_network(stage.name, "finished")
    return where


def train_steering(
    config: str | Path,
    out: str | Path,
    only: list[str] | None = None,
    on_network: Callable[[str, str], Any] | None = None,
) -> dict[str, dict]:
    """Train the steering set of TOML ``config`` (:func:`read_steering_config`) into directory ``out``:
    ``steering.json`` and one run directory per network. Resumable: a finished network (:func:`finished`) is kept,
    an interrupted one resumed from its checkpoint, a new one started (from its ``from`` network's final population
    where it names one; from its ``start_pool``'s states, that pool recorded into ``out/NAME.npz`` when first needed,
    :func:`record_pool`). ``only``: these networks only (e.g. to train two parts of a set in two processes).
    ``on_network(name, what)`` is told each step. Returns
    ``{name: {"state": "kept"|"resumed"|"trained", "seconds": wall s, "summary": ...}}``."""
    steering_set = read_steering_config(config)
    networks, speed = steering_set.networks, steering_set.record.speed
    unknown = sorted(set(only or ()) - set(networks))
    if unknown:
        raise ConfigError(f"unknown network(s) {unknown}; {str(config)!r} has {', '.join(networks)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_json(out / STEERING_FILE, steering_set.record.to_json())
    done: dict[str, dict] = {}
    for name, net in networks.items():
        if only and name not in only:
            continue
        summary_file = out / name / "summary.json"
        if net.taken is not None:
            done[name] = take_network(out, net, on_network)
        elif net.distilled_only:
            kept, t0 = summary_file.is_file(), time.perf_counter()
            distill_stage(out, net.distill, speed, on_network)
            done[name] = {
                "state": "kept" if kept else "trained",
                "seconds": 0.0 if kept else time.perf_counter() - t0,
                "summary": runs.read_json(summary_file),
            }
        elif finished(out / name):
            summary = runs.read_json(summary_file) if summary_file.is_file() else {}
            done[name] = {"state": "kept", "seconds": 0.0, "summary": summary}
        else:
            done[name] = _train_network(out, net, speed, on_network)
    return done


def take_network(out: Path, net: SetNetwork, on_network=None) -> dict:
    """``out/NAME``: the network of run ``net.taken`` (``pretrained:NAME`` or a directory) as it is: its config.json and
    best_genome.npz/.json copied, and a summary.json naming the run; kept when there. Returns ``{"state", "seconds",
    "summary"}``."""
    where = out / net.name
    if finished(where):
        summary = runs.read_json(where / "summary.json") if (where / "summary.json").is_file() else {}
        return {"state": "kept", "seconds": 0.0, "summary": summary}
    source = resolve(net.taken)
    files = ("config.json", "best_genome.npz", "best_genome.json")
    missing = [f for f in files if not (source / f).is_file()]
    if missing:
        raise CheckpointError(f"network {net.name!r} takes {net.taken!r}, which holds no {', '.join(missing)}")
    where.mkdir(parents=True, exist_ok=True)
    for f in files:
        runs.atomic_write_bytes(where / f, (source / f).read_bytes())
    summary = {"taken_from": net.taken, "task": net.task}
    runs.atomic_write_json(where / "summary.json", summary)
    if on_network is not None:
        on_network(net.name, f"taken from {net.taken}")
    return {"state": "trained", "seconds": 0.0, "summary": summary}


def _train_network(out: Path, net: SetNetwork, speed: float, on_network) -> dict:
    """Train (or resume) network ``net`` of a set in ``out/NAME``: its distillation, ``from`` network and start pool
    first where it names them; returns ``{"state", "seconds", "summary"}``."""
    name, where = net.name, out / net.name
    resume = (where / "checkpoints").is_dir()
    if net.distill is not None and not resume:
        distill_stage(out, net.distill, speed, on_network)
    source = None if resume or net.source is None else out / net.source
    if source is not None and outside_run(net.source) and not (out / net.source).is_dir():
        source = resolve(net.source)  # a run outside the set: pretrained:NAME or a directory
    elif source is not None and not finished(source):
        raise CheckpointError(f"network {name!r} starts from {net.source!r}, which is not trained yet in {str(out)!r}")
    pool = pool_file(out, net.pool, speed, on_network)
    cfg = net.config if pool is None else dataclasses.replace(net.config, start_pool=pool)
    if on_network is not None:
        on_network(name, "resumed" if resume else "started")
    where.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    summary = PRESETS[cfg.preset].trainer()(cfg, where, resume=resume, from_run=source)
    result = {"state": "resumed" if resume else "trained", "seconds": time.perf_counter() - t0, "summary": summary}
    if on_network is not None:
        on_network(name, "finished")
    return result
