"""``animat surrogate generate`` in one call: its options (defaults < the config file's ``[generate]``
table < the command line, see :func:`generate_options`) and the dataset folder's records of the
sessions that filled it (``metrics.csv``, one row per episode, kept across resumed sessions, and
``summary.json``), around :func:`animat.surrogate.data.generate`. Also :func:`config_table`, the
reading of one table of a surrogate config file, which ``divergence`` shares."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

from animat import runs
from animat.config import load_toml
from animat.errors import ConfigError

DEFAULTS = {"episodes": 20, "frames": 300, "seed": 0, "workers": 1, "backend": "local"}
TABLES = ("generate", "scene", "train")  # the tables of a surrogate config file, one per verb (and the scene's)
METRIC_FIELDS = ["index", "frames", "dropped", "seconds_per_frame"]


def config_table(config: Optional[str | Path], name: str) -> dict:
    """Table ``[name]`` of the TOML file ``config`` ({} without one); ConfigError for top-level keys other
    than :data:`TABLES` or for one that is not a table."""
    if config is None:
        return {}
    loaded = load_toml(config)
    unknown = sorted(set(loaded) - set(TABLES))
    if unknown:
        raise ConfigError(f"unknown table(s) {unknown} in {str(config)!r}; expected [generate], [scene] and [train]")
    section = loaded.get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{name} in {str(config)!r} must be a table [{name}], got {section!r}")
    return dict(section)


def generate_options(config: Optional[str | Path] = None, size: Optional[int] = None, **given: Optional[int | str]) -> tuple[dict, dict]:
    """``(options, scene options)`` of a generate request: :data:`DEFAULTS` < ``[generate]`` of ``config``
    < ``given`` (None: not given); the scene's options from ``[scene]``, with ``size`` (vertices per side)
    over it. ConfigError for unknown keys or counts that are not integers in range."""
    values = dict(DEFAULTS)
    section = config_table(config, "generate")
    unknown = sorted(set(section) - set(values))
    if unknown:
        raise ConfigError(f"unknown generate option(s) {unknown} in {str(config)!r}; expected some of {sorted(values)}")
    values.update(section)
    values.update({k: v for k, v in given.items() if v is not None})
    scene_options = config_table(config, "scene")
    if size is not None:
        scene_options["size"] = size
    for name, least in (("episodes", 1), ("frames", 1), ("seed", 0), ("workers", 1)):
        if isinstance(values[name], bool) or not isinstance(values[name], int) or values[name] < least:
            raise ConfigError(f"--{name} must be an integer >= {least}, got {values[name]!r}")
    return values, scene_options


def run_generate(scene: str, options: dict, scene_options: dict, out: Path, *,
                 on_episode: Optional[Callable[[dict, int], None]] = None, on_skipped: Optional[Callable[[int], None]] = None) -> dict:
    """Fill the dataset folder ``out`` per ``options`` (:func:`generate_options`) and write its records;
    ``on_episode(row, dropped)`` after each new episode (``dropped``: frames dropped so far in this
    session), ``on_skipped(count)`` once before them. Returns ``summary.json``'s content."""
    from animat.surrogate.data import generate

    rows: list[dict] = []

    def record(row: dict) -> None:
        rows.append(row)
        if on_episode is not None:
            on_episode(row, sum(r["dropped"] for r in rows))

    start = time.perf_counter()
    summary = generate(scene, int(options["episodes"]), int(options["frames"]), int(options["seed"]), out, workers=int(options["workers"]),
                       backend=str(options["backend"]), scene_options=scene_options, on_episode=record, on_skipped=on_skipped)
    summary["seconds"] = time.perf_counter() - start
    if rows:  # a resumed dataset keeps the rows of its earlier sessions
        earlier = {int(r["index"]): r for r in runs.read_csv(out / "metrics.csv")}
        earlier.update({int(r["index"]): r for r in rows})
        runs.atomic_write_csv(out / "metrics.csv", [earlier[i] for i in sorted(earlier)], METRIC_FIELDS)
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
