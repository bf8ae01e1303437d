"""A fly training run in stages (a curriculum), from one config: its options are the first stage's, and
``stages = [{...}, ...]`` (TOML ``[[stages]]`` tables) the later stages', each the previous stage's options
with these changed (episode length, fitness weights, strategy, generations, ...). Stage k > 1 starts from
stage k - 1 as ``animat fly train --from`` does: its final population for the paper GA, its genome as the
first distribution's centre for an evolution strategy. The paper trains its fly in parts this way (its
saved final population is for that); the drosophila hover is a GA stage on 1 s episodes followed by two
OpenAI-ES stages on 4 s episodes (``configs/fly_drosophila_hover.toml``).

Run directory::

    RUN/config.json          the config as given (stage 1's options and ``stages``)
    RUN/stages/1 ... N/      each a fly run directory of its own (config.json, metrics.csv, checkpoints/,
                             best genome, replay); stage k's config.json records ``from`` = stage k - 1
    RUN/best_genome.*, RUN/summary.json, the replay's files: the last stage's, copied when it ends;
                             summary.json adds ``stages`` (each stage's directory and headline figures)

``animat fly train --resume RUN`` continues the first stage without a ``summary.json`` (resumed from its
checkpoints, or started from the stage before), so an interrupted curriculum loses at most what an
interrupted run does. ``animat fly replay RUN`` replays the last stage's genome: a stage may not change the
fly or the network (:data:`FIXED`), so RUN's config.json describes the fly every stage flew.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from animat import runs
from animat.errors import ConfigError, RunDirError

#: options a stage may not change: the fly, its network, where it is evaluated, and the stages themselves
FIXED = (
    "preset",
    "layers",
    "activations",
    "asymmetric",
    "control_ms",
    "fly",
    "drosophila",
    "backend",
    "address",
    "stages",
)
#: the figures of each stage that the curriculum's summary.json lists
STAGE_KEYS = (
    "strategy",
    "generations",
    "best_fitness",
    "total_crashes",
    "train_seconds_this_session",
    "mean_seconds_per_generation",
)
#: what is not copied from the last stage to the run directory (the stage's own record of its training)
OWN = ("checkpoints", "config.json", "metrics.csv", "summary.json")


def stage_configs(cfg) -> list:
    """The configs of ``cfg``'s stages, first to last (``stages`` empty in each); ConfigError (one line) for
    a stage that changes one of :data:`FIXED`, sets an invalid value (the config's types checked each
    stage is a table) or changes the population from one paper-GA stage to the next (it starts from the
    stage before's final population)."""
    first = type(cfg).build(None, **{**asdict(cfg), "stages": []})
    out = [first]
    for k, changes in enumerate(cfg.stages, 2):
        if fixed := sorted(set(changes) & set(FIXED)):
            raise ConfigError(
                f"stage {k} changes {', '.join(fixed)}: every stage flies the first stage's fly and network"
            )
        try:
            out.append(type(cfg).build(None, **{**asdict(out[-1]), **changes}))
        except ConfigError as exc:
            raise ConfigError(f"stage {k}: {exc}") from None
        before, stage = out[-2], out[-1]
        # a paper_ga stage starts from the stage before's final population (animat.fly.evolve.source_population)
        if stage.strategy == before.strategy == "paper_ga" and stage.population != before.population:
            raise ConfigError(
                f"stage {k} changes population ({before.population} -> {stage.population}): a paper_ga "
                "stage starts from the stage before's final population"
            )
    return out


def stage_dir(out: Path, k: int) -> Path:
    return Path(out) / "stages" / str(k)


def _copy_products(stage: Path, out: Path) -> None:
    """The last stage's genome, replay, plots and report into the run directory (each file written atomically)."""
    for src in sorted(stage.rglob("*")):
        rel = src.relative_to(stage)
        if src.is_file() and rel.parts[0] not in OWN:
            runs.atomic_write_bytes(out / rel, src.read_bytes())


def train_stages(
    cfg,
    out: Path,
    train: Callable[..., dict],
    *,
    resume: bool = False,
    from_run: Path | None = None,
    on_generation: Callable[[dict], Any] | None = None,
    on_stage: Callable[[int, int, Any], Any] | None = None,
) -> dict:
    """Train ``cfg``'s stages (:func:`stage_configs`) into ``out/stages/k`` with ``train(stage_cfg, dir,
    resume=, from_run=, on_generation=) -> summary`` (either preset's), stage 1 from ``from_run`` (or
    random networks), each later one from the stage before; finished stages (their ``summary.json``) are
    skipped, so ``resume`` continues where the run stopped. ``on_stage(k, n, stage_cfg)`` before each
    stage it trains. Writes ``out/config.json``, and when the last stage ends its products and
    ``summary.json`` (the last stage's, its ``train_seconds_this_session`` the stages trained by this call,
    with ``stages``: each stage's directory and :data:`STAGE_KEYS`)."""
    configs = stage_configs(cfg)
    out = Path(out)
    if resume and (out / "summary.json").is_file():
        raise RunDirError(
            f"run {str(out)!r} already finished its {len(configs)} stages; start a new run --from "
            f"{str(stage_dir(out, len(configs)))!r} to go on"
        )
    record = (
        runs.read_run_config(out).get("from") if resume else (None if from_run is None else {"path": str(from_run)})
    )
    runs.atomic_write_json(
        out / "config.json", {**runs.config_record("fly", "train", cfg), **({"from": record} if record else {})}
    )
    source = None if record is None else Path(record["path"])
    summaries, seconds = [], 0.0
    for k, stage_cfg in enumerate(configs, 1):
        where = stage_dir(out, k)
        if (where / "summary.json").is_file():
            summaries.append(runs.read_json(where / "summary.json"))
        else:
            started = (where / "checkpoints").is_dir() and any((where / "checkpoints").glob("gen-*.json"))
            where.mkdir(parents=True, exist_ok=True)
            if on_stage is not None:
                on_stage(k, len(configs), stage_cfg)
            summaries.append(
                train(
                    stage_cfg, where, resume=started, from_run=None if started else source, on_generation=on_generation
                )
            )
            seconds += float(summaries[-1].get("train_seconds_this_session", 0.0))
        source = where
    _copy_products(source, out)
    stages = [
        {"dir": str(stage_dir(Path("."), k)), **{key: s[key] for key in STAGE_KEYS if key in s}}
        for k, s in enumerate(summaries, 1)
    ]
    summary = {**summaries[-1], "train_seconds_this_session": round(seconds, 3), "stages": stages}
    runs.atomic_write_json(out / "summary.json", summary)
    return summary
