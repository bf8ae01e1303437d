"""The fly's run directories for ``animat info`` (:class:`animat.info.RunKind`): training (the paper's fly or the
drosophila preset, a curriculum too), distillation, a replay and a steered flight."""

from __future__ import annotations

from animat import runs
from animat.fly.presets import PRESETS
from animat.info import RunKind, config_total, metrics_rows


def _preset(config: dict, summary: dict) -> str:
    return str(config.get("preset") or summary.get("preset") or "paper")


def _trains(config: dict, _summary: dict) -> bool:
    """A training run's config.json: the options of one of the fly's presets (:mod:`animat.fly.presets`), nothing
    else."""
    return (
        "generations" in config
        and "distilled" not in config
        and any(not runs.foreign_keys(config, preset.config) for preset in PRESETS.values())
    )


def _replays(config: dict, summary: dict) -> bool:
    """A replay writes no config.json; its summary names the run replayed and the flight's figures."""
    return not config and "source" in summary and ("stroke_cycles" in summary or "wingbeat_hz" in summary)


def _distill_rounds(config: dict) -> int | None:
    rounds = config["distilled"].get("rounds") if isinstance(config.get("distilled"), dict) else None
    return int(rounds) if isinstance(rounds, int) else None


KINDS = (
    RunKind(
        "train",
        _trains,
        "generations",
        config_total("generations"),
        metrics_rows,
        ("best_fitness", "last_generation_mean_fitness", "replay_crashed", "replay_segments_ok"),
        _preset,
    ),
    RunKind(
        "distill",
        lambda config, _: "distilled" in config,
        "rounds",
        _distill_rounds,
        metrics_rows,
        ("replay_segments_ok", "replay_segments_scored", "replay_crashed"),
        _preset,
    ),
    RunKind(
        "steer",
        lambda config, _: {"steering", "commands", "controller"} <= set(config),
        headline=("controller", "all_ok", "segments_ok", "segments_scored", "crashed", "fell"),
        preset=_preset,
    ),
    RunKind("replay", _replays, headline=("source", "seconds", "crashed", "final_height"), preset=_preset),
)
