"""``animat surrogate generate`` in one call: its options (defaults < the config file's ``[generate]``
table < the command line, see :func:`generate_options`) and the dataset folder's records of the
sessions that filled it (``config.json``, the last session's resolved options; ``metrics.csv``, one row
per episode, kept across resumed sessions; and ``summary.json``), around :func:`animat.surrogate.data.generate`.
Also :func:`config_table`, the reading of one table of a surrogate config file, which ``divergence`` shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path

from animat import runs
from animat.config import check_known, load_toml, read_options
from animat.errors import ConfigError
from animat.surrogate.data import generate
from animat.surrogate.options import GenerateOptions

TABLES = ("generate", "scene", "train")  # the tables of a surrogate config file, one per verb (and the scene's)
METRIC_FIELDS = ["index", "frames", "dropped", "seconds_per_frame"]


def config_table(config: str | Path | None, name: str) -> dict:
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


def generate_options(
    config: str | Path | None = None, size: int | None = None, **given: int | str | None
) -> tuple[dict, dict]:
    """``(options, scene options)`` of a generate request: :class:`~animat.surrogate.options.GenerateOptions`'
    defaults < ``[generate]`` of ``config`` < ``given`` (None: not given), checked by their declarations;
    the scene's options from ``[scene]``, with ``size`` (vertices per side) over it."""

    section = config_table(config, "generate")
    check_known((f.name for f in fields(GenerateOptions)), section, "generate option", repr(str(config)))
    given = {k: v for k, v in given.items() if v is not None}  # an option not given must not hide the file's value
    values = asdict(
        GenerateOptions(**read_options(GenerateOptions, None, {**section, **given}, what="generate option"))
    )
    scene_options = config_table(config, "scene")
    if size is not None:
        scene_options["size"] = size
    return values, scene_options


def run_generate(
    scene: str,
    options: dict,
    scene_options: dict,
    out: Path,
    *,
    on_episode: Callable[[dict, int], None] | None = None,
    on_skipped: Callable[[int], None] | None = None,
) -> dict:
    """Fill the dataset folder ``out`` per ``options`` (:func:`generate_options`) and write its records
    (``config.json``: this session's resolved options, ``metrics.csv``, ``summary.json``);
    ``on_episode(row, dropped)`` after each new episode (``dropped``: frames dropped so far in this
    session), ``on_skipped(count)`` once before them. Returns ``summary.json``'s content."""

    rows: list[dict] = []

    def record(row: dict) -> None:
        rows.append(row)
        if on_episode is not None:
            on_episode(row, sum(r["dropped"] for r in rows))

    start = time.perf_counter()
    summary = generate(
        scene,
        int(options["episodes"]),
        int(options["frames"]),
        int(options["seed"]),
        out,
        workers=int(options["workers"]),
        backend=str(options["backend"]),
        scene_options=scene_options,
        on_episode=record,
        on_skipped=on_skipped,
    )
    summary["seconds"] = time.perf_counter() - start
    if rows:  # a resumed dataset keeps the rows of its earlier sessions
        earlier = {int(r["index"]): r for r in runs.read_csv(out / "metrics.csv")}
        earlier.update({int(r["index"]): r for r in rows})
        runs.atomic_write_csv(out / "metrics.csv", [earlier[i] for i in sorted(earlier)], METRIC_FIELDS)
    runs.atomic_write_json(out / "config.json", {"scene": scene, **options, "scene_options": scene_options})
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
