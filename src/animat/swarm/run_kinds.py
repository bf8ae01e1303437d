"""The swarm's run directories for ``animat info`` (:class:`animat.info.RunKind`): ``animat swarm run SCHEME``
(the scheme is its preset). Its steps are not recorded until the run ends: ``done`` is the total once finished."""

from __future__ import annotations

from pathlib import Path

from animat import runs
from animat.info import RunKind, config_total
from animat.swarm.options import SwarmOptions


def _steps_done(run_dir: Path, config: dict) -> int | None:
    finished = (Path(run_dir) / "summary.json").is_file()
    return int(config["steps"]) if finished and isinstance(config.get("steps"), int) else None


KINDS = (
    RunKind(
        "run",
        lambda config, _: "scheme" in config and "agents" in config and not runs.foreign_keys(config, SwarmOptions),
        "steps",
        config_total("steps"),
        _steps_done,
        ("agents", "final_error", "converged", "final_connectivity", "final_min_distance", "warnings"),
        lambda config, _: str(config["scheme"]),
    ),
)
