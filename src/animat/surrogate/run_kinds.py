"""The surrogate's run directories for ``animat info`` (:class:`animat.info.RunKind`): a dataset (generate),
training, an evaluation, a play and a divergence study; the preset is the cloth scene."""

from __future__ import annotations

from animat import runs
from animat.info import RunKind, config_total, metrics_rows
from animat.surrogate.options import TrainConfig


def _scene(config: dict, summary: dict) -> str | None:
    scene = config.get("scene", summary.get("scene"))
    return str(scene.get("name")) if isinstance(scene, dict) else scene


def _generates(config: dict, summary: dict) -> bool:
    """A dataset: its config.json records the scene's options (older datasets kept dataset.json alone)."""
    return "scene_options" in config or (not config and "dataset_megabytes" in summary)


KINDS = (
    RunKind(
        "generate",
        _generates,
        "episodes",
        config_total("episodes"),
        metrics_rows,
        ("episodes", "frames", "dropped_frames", "skipped_episodes"),
        _scene,
    ),
    RunKind(
        "train",
        lambda config, _: "epochs" in config and "components" in config and not runs.foreign_keys(config, TrainConfig),
        "epochs",
        config_total("epochs"),
        metrics_rows,
        ("best_epoch", "best_test_loss_m", "final_test_loss_m", "initial_test_loss_m"),
        _scene,
    ),
    RunKind(
        "evaluate",
        lambda config, _: {"model", "horizon", "stride", "stability_frames"} <= set(config),
        headline=("surrogate_error_percent_of_size", "speedup_vs_reference", "stability_finite", "model"),
        preset=_scene,
    ),
    RunKind(
        "play",
        lambda config, _: {"model", "path", "backend", "fps"} <= set(config),
        headline=("frames", "per_frame_us_median", "frames_per_second", "nonfinite_frames", "model"),
        preset=_scene,
    ),
    RunKind(
        "divergence",
        lambda config, _: {"perturb", "horizon", "restart"} <= set(config),
        headline=("episodes", "gap_max_percent_of_size", "gap_last_second_percent_of_size", "truncated_runs"),
        preset=_scene,
    ),
)
