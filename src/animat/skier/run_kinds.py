"""The skier's run directories for ``animat info`` (:class:`animat.info.RunKind`): training and a replay."""

from __future__ import annotations

from animat import runs
from animat.info import RunKind, config_total, metrics_rows
from animat.skier.options import TrainConfig


def _trains(config: dict, _summary: dict) -> bool:
    return "generations" in config and "skier" in config and not runs.foreign_keys(config, TrainConfig)


def _preset(config: dict, summary: dict) -> str | None:
    """The skier's variant: its hip joint and friction (``one-axis/anisotropic``)."""
    hip, friction = config.get("hip"), config.get("friction") or summary.get("friction")
    return "/".join(str(v) for v in (hip, friction) if v) or None


KINDS = (
    RunKind(
        "train",
        _trains,
        "generations",
        config_total("generations"),
        metrics_rows,
        ("best_fitness", "best_net_forward_m", "last_generation_mean_fitness", "replay_fell"),
        _preset,
    ),
    RunKind(
        "replay",
        lambda config, summary: not config and "source" in summary and "net_forward_m" in summary,
        headline=("source", "seconds", "fitness", "net_forward_m", "fell"),
        preset=_preset,
    ),
)
