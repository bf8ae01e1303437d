"""``animat info RUN_DIR``: what a run directory is, read from its files: the system and verb that wrote it, the
preset, whether it finished, how far it got and its headline figures.

Each system declares the kinds of run directory its verbs write (:class:`RunKind`, listed in
:mod:`animat.systems`, ``kinds``). The kind a directory's ``config.json`` names (its ``system`` and ``verb``, as
new runs record them) describes it; else (an older run) the first kind, system by system in the registry's order,
that recognises its ``config.json`` and ``summary.json``. A run *finished* when it wrote its ``summary.json``
(the last file of every verb, the convention :func:`animat.runs.refuse_finished` keeps); without one it was
interrupted (or is still running). This module knows no system.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from animat import runs
from animat.errors import RunDirError


def _nothing(*_: Any) -> None:
    return None


@dataclass(frozen=True)
class RunKind:
    """One kind of run directory of a system.

    ``verb``: the command that writes it; ``recognises(config, summary) -> bool``: is this one (``config`` and
    ``summary``: the directory's ``config.json`` and ``summary.json``, ``{}`` where missing); ``unit``: what its
    progress counts (``generations``, ``epochs``, ``timesteps``, ...; ``""``: none); ``total(config)`` and
    ``done(run_dir, config)``: how many ``unit`` it was asked for and has done (None: unknown); ``headline``: the
    summary's keys worth showing; ``preset(config, summary)``: its preset or scheme (None: the system has none)."""

    verb: str
    recognises: Callable[[dict, dict], bool]
    unit: str = ""
    total: Callable[[dict], int | None] = _nothing
    done: Callable[[Path, dict], int | None] = _nothing
    headline: tuple[str, ...] = field(default=())
    preset: Callable[[dict, dict], str | None] = _nothing


def config_total(key: str) -> Callable[[dict], int | None]:
    """``total`` of a kind whose config.json holds it under ``key``."""
    return lambda config: int(config[key]) if isinstance(config.get(key), (int, float)) else None


def metrics_rows(run_dir: Path, _config: dict | None = None) -> int:
    """``done`` of a kind that writes one ``metrics.csv`` row per unit (a generation, an epoch): the rows written."""
    return len(runs.read_csv(Path(run_dir) / "metrics.csv"))


def last_metric(column: str) -> Callable[[Path, dict], int]:
    """``done`` of a kind whose ``metrics.csv`` counts its progress in ``column`` (0 before its first row)."""

    def done(run_dir: Path, _config: dict | None = None) -> int:
        rows = runs.read_csv(Path(run_dir) / "metrics.csv")
        try:
            return int(float(rows[-1][column])) if rows else 0
        except (KeyError, ValueError):
            return 0

    return done


def _read(path: Path) -> dict:
    """A run file's JSON object; {} where it is missing; RunDirError (one line) where it is not a JSON object."""
    if not path.is_file():
        return {}
    try:
        data = runs.read_json(path)
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{str(path)!r} is corrupt ({exc})") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{str(path)!r} is corrupt (not a JSON object)")
    return data


def _recorded(config: dict, kinds: Sequence[tuple[str, RunKind]]) -> tuple[str, RunKind] | None:
    """The kind a run's config.json names (its ``system`` and ``verb``: :func:`animat.runs.config_record`, and the
    record of every replay and play), None where it names none that ``kinds`` holds (an older run: recognised by
    its files)."""
    system, verb = config.get("system"), config.get("verb")
    return next(((s, k) for s, k in kinds if (s, k.verb) == (system, verb)), None)


def describe(run_dir: str | Path, kinds: Sequence[tuple[str, RunKind]]) -> dict:
    """What ``run_dir`` is, by the first of ``kinds`` (``(system, kind)`` pairs) that recognises it: ``system``,
    ``verb``, ``preset``, ``state`` (``finished`` | ``interrupted``), for a kind with a unit ``unit``, ``done`` and
    ``total`` (None: unknown), then its summary's headline figures. RunDirError (one line) for a folder that is
    missing or that no kind recognises."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{str(run_dir)!r} is not a directory; give a run directory")
    config, summary = _read(run_dir / "config.json"), _read(run_dir / "summary.json")
    found = _recorded(config, kinds) or next(((s, k) for s, k in kinds if k.recognises(config, summary)), None)
    if found is None:
        raise RunDirError(
            f"{str(run_dir)!r} is not a run directory of any animat verb (its config.json and summary.json, if any, "
            "match none)"
        )
    system, kind = found
    return {
        "system": system,
        "verb": kind.verb,
        "preset": kind.preset(config, summary),
        "state": "finished" if (run_dir / "summary.json").is_file() else "interrupted",
        **({"unit": kind.unit, "done": kind.done(run_dir, config), "total": kind.total(config)} if kind.unit else {}),
        **{k: summary[k] for k in kind.headline if k in summary},
    }
