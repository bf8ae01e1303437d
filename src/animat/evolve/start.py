"""Where an evolution run begins, for any strategy and any genome: fresh, continued (``--resume``: the run's own
last checkpoint) or started from another run (``--from``: genes the caller reads from it, a final population or a
first distribution's centre), and the run's ``config.json``, written before its first generation. NumPy only.

Every system that evolves goes this one way (the fly's presets, the skier)::

    start = plan(out, resume=resume, from_run=from_run, read_source=...)   # which of the three; the --from genes
    state = begin(strategy, out, start, seed=..., generations=...)          # checkpoint, or generation 0
    write_config(out, config, start)                                        # on --resume too
    loop.run(strategy, state, ...)

A run stopped before its first checkpoint (:func:`animat.evolve.loop.unstarted`) starts again, from the ``--from``
run its config.json records, if any. Reading a run of networks as a ``--from`` source (its final population, its
best genome, the goal network's wider inputs) is :mod:`animat.evolve.network_source`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.evolve import loop


@dataclass(frozen=True)
class Start:
    """How a run's generations begin. ``resume``: they continue from its own last checkpoint; ``source``: genes
    read from the ``--from`` run (what the caller's ``read_source`` returned: a population ``(P, G)`` or one genome
    ``(G,)``), None without one; ``record``: config.json's ``from`` entry (``{path, generation}``), None without."""

    resume: bool
    source: np.ndarray | None = None
    record: dict | None = None


def plan(
    out: str | os.PathLike,
    *,
    resume: bool,
    from_run: str | os.PathLike | None = None,
    read_source: Callable[[Path], tuple[np.ndarray, dict]] | None = None,
) -> Start:
    """The :class:`Start` of run directory ``out``: with ``resume`` its checkpoint continues (one stopped before
    its first checkpoint starts again, from the ``--from`` run its config.json names); else with ``from_run``,
    ``read_source(path) -> (genes, record)`` reads that run (refusing, in one line, one the run cannot start from);
    else a fresh start."""
    out = Path(out)
    if resume and loop.unstarted(out):
        resume, from_run = False, (runs.read_run_config(out).get("from") or {}).get("path")
    if resume:
        return Start(True, None, runs.read_run_config(out).get("from"))
    if from_run is None:
        return Start(False)
    if read_source is None:
        raise ConfigError(f"--from {str(from_run)!r}: this run cannot start from another run")
    genes, record = read_source(Path(from_run))
    return Start(False, genes, record)


def refuse_finished(out: str | os.PathLike, generation: int, generations: int) -> None:
    """``--resume`` of a run that finished its ``generations`` (it is at ``generation``): refused in one line."""
    runs.refuse_finished(out, generation, generations, "generations", "--generations")


def begin(
    strategy,
    out: str | os.PathLike,
    start: Start,
    *,
    seed: Any,
    generations: int,
    check: Callable[[loop.LoopState], None] | None = None,
) -> loop.LoopState:
    """The loop state ``strategy``'s generations continue from: on ``start.resume`` the checkpoint in ``out``
    (``check(state)`` first: a one-line refusal of a state that does not fit the config; then refused where the
    run finished its ``generations``), else generation 0 from ``seed`` (a ``--from`` source is the caller's: it
    built ``strategy`` around it)."""
    if not start.resume:
        return loop.start(strategy, seed)
    state, _ = loop.load(out, strategy)
    if check is not None:
        check(state)
    refuse_finished(out, state.generation, generations)
    return state


def write_config(out: str | os.PathLike, config: dict, start: Start) -> None:
    """``out/config.json``: ``config`` (the run's record and resolved options) and, for a run started ``--from``
    another, its ``from`` entry. Written before the first generation (a run stopped after it restarts from it)
    and on ``--resume`` too (``--generations`` and the like may have changed)."""
    runs.atomic_write_json(Path(out) / "config.json", {**config, **({"from": start.record} if start.record else {})})
