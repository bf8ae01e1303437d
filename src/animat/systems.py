"""The one registry of animat's systems: name -> command group, report scenes and kinds of run directory.

A system is a package (``animat.<name>``) with a Typer app of its verbs (``commands``: ``"module:attribute"``)
and a module of scene builders for its report pages (``report``: a module whose ``BUILDERS`` is a tuple of
:class:`animat.viz.report.SceneBuilder`, tried in order). The command line (:mod:`animat.cli`), ``animat report``,
``animat view`` and the tests read this table; nothing else names the systems. Entries are import strings,
so reading the registry loads no system; :func:`scene_builders` and :func:`command_group` import on demand.

Run directories are recognised by the builders' ``recognises`` (the files a run holds), tried system by system
in the registry's order, so runs made before this registry existed are recognised as they always were.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from animat.errors import AnimatError


@dataclass(frozen=True)
class System:
    """``name``: the command word (``animat NAME VERB``); ``commands``: ``"module:attribute"`` of its Typer app;
    ``report``: the module holding its ``BUILDERS`` (its help text is its Typer app's own); ``kinds``:
    ``"module:attribute"`` of its run directories' kinds for ``animat info`` (:class:`animat.info.RunKind`; ""
    for a system without); ``live``: ``"module:attribute"`` of the function that opens its live session for
    ``animat play`` (:class:`animat.play.session.LiveSession`; "" for a system that cannot be played);
    ``garment``: ``"module:attribute"`` of the function that opens a garment the character wears
    (:mod:`animat.character.wear`; "" for a system without)."""

    name: str
    commands: str
    report: str
    kinds: str = ""
    live: str = ""
    garment: str = ""


SYSTEMS: list[System] = [
    System(
        "fly",
        "animat.fly.cli:app",
        "animat.fly.presets",  # the fly's scene builders: every preset's
        "animat.fly.run_kinds:KINDS",
        live="animat.fly.live:open",
    ),
    System("skier", "animat.skier.cli:app", "animat.skier.report", "animat.skier.run_kinds:KINDS"),
    System(
        "swarm",
        "animat.swarm.cli:app",
        "animat.swarm.report",
        "animat.swarm.run_kinds:KINDS",
        live="animat.swarm.live:open",
    ),
    System(
        "surrogate",
        "animat.surrogate.cli:app",
        "animat.surrogate.report",
        "animat.surrogate.run_kinds:KINDS",
        garment="animat.surrogate.wear:open_garment",
    ),
    System(
        "imitate",
        "animat.imitate.cli:app",
        "animat.imitate.report",
        "animat.imitate.run_kinds:KINDS",
        live="animat.imitate.live:open",
    ),
]
"""Every system, in the order their scene builders are tried on a run directory."""


def names() -> list[str]:
    """The systems' names, in registry order."""
    return [s.name for s in SYSTEMS]


def get(name: str) -> System:
    """The system called ``name`` (a one-line :class:`~animat.errors.AnimatError` naming the known ones else)."""
    for system in SYSTEMS:
        if system.name == name:
            return system
    raise AnimatError(f"unknown system {name!r}; known: {', '.join(names())}")


def register(system: System) -> None:
    """Add ``system`` to the registry (its name must be new): the way a system outside the package plugs in."""
    if system.name in names():
        raise AnimatError(f"a system called {system.name!r} is registered already")
    SYSTEMS.append(system)


def _attribute(target: str):
    """The object named by a ``"module:attribute"`` string (imports the module)."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def command_group(system: System):
    """The Typer app of ``system``'s verbs (imports its command module)."""
    return _attribute(system.commands)


def scene_builders() -> list:
    """Every system's scene builders (:class:`animat.viz.report.SceneBuilder`), in registry order."""
    return [b for system in SYSTEMS for b in importlib.import_module(system.report).BUILDERS]


def live_session(name: str):
    """The function opening system ``name``'s live session (imports its module); a one-line AnimatError naming the
    systems that can be played where it has none."""
    system = get(name)
    if not system.live:
        playable = ", ".join(s.name for s in SYSTEMS if s.live)
        raise AnimatError(f"system {name!r} cannot be played live; these can: {playable}")
    return _attribute(system.live)


def open_garment(source: str):
    """The garment ``source`` names (:class:`animat.character.wear.Garment`), opened by the first system with a
    ``garment`` entry (imports its module); a one-line AnimatError where none has one."""
    for system in SYSTEMS:
        if system.garment:
            return _attribute(system.garment)(source)
    raise AnimatError(f"--garment {source!r}: no registered system simulates garments")


def run_kinds() -> list:
    """Every system's kinds of run directory, ``(system name, animat.info.RunKind)``, in registry order."""
    return [(system.name, kind) for system in SYSTEMS if system.kinds for kind in _attribute(system.kinds)]
