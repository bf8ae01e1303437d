"""Imitate's run directories for ``animat info`` (:class:`animat.info.RunKind`): training, an evaluation, a
play and a steered run of a policy; the preset is the clip (the skills of a steered run)."""

from __future__ import annotations

from animat import runs
from animat.imitate.options import TrainConfig
from animat.info import RunKind, config_total, last_metric


def _clip(config: dict, summary: dict) -> str:
    return str(config.get("clip") or summary.get("clip") or "demo")


KINDS = (
    RunKind(
        "train",
        lambda config, _: "timesteps" in config and "net_arch" in config and not runs.foreign_keys(config, TrainConfig),
        "timesteps",
        config_total("timesteps"),
        last_metric("timesteps"),
        ("final_eval_return_mean", "final_eval_r_i_per_step_mean", "initial_eval_return_mean", "iterations"),
        _clip,
    ),
    RunKind(
        "evaluate",
        lambda config, summary: not config and {"source", "mean_imitation_reward"} <= set(summary),
        headline=("source", "episodes", "mean_imitation_reward", "full_episode_fraction", "mean_episode_seconds"),
        preset=_clip,
    ),
    RunKind(
        "play",
        lambda config, summary: not config and {"source", "episode_steps"} <= set(summary),
        headline=("source", "episode_seconds", "fell", "mean_r_imitation"),
        preset=_clip,
    ),
    RunKind(
        "steer",
        lambda config, summary: {"script", "segments"} <= set(summary),
        headline=("source", "script", "mean_segment_r_imitation", "falls"),
        preset=lambda _, summary: "+".join(summary.get("skills") or []) or "?",
    ),
)
