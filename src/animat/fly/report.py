"""The fly's replay: body box and wing triangles as they move, its path."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from animat.fly.drosophila import report as drosophila_report
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import from_run_config, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, box_triangles, frame_indices

UNIT = "u"  # the paper preset's simulation length unit


def recognises(run_dir: Path) -> bool:
    return "wing_angles" in trajectory_keys(run_dir)


def _params(run_dir: Path, notes: list):
    """The fly's parameters: this run's config.json (training), its source run's (replay), else the preset."""
    from animat.fly.model import FlyParams
    from animat.fly.options import TrainConfig

    params = from_run_config(run_dir, lambda stored: TrainConfig.build(None, **stored).fly_params())
    if params is not None:
        return params
    notes.append("body drawn with the paper preset's geometry: the run directory does not say which fly flew")
    return FlyParams()


def build(run_dir: Path, params=None, **_) -> Scene:
    """``params``: the FlyParams that flew (else read from the run, see :func:`_params`)."""
    from animat.fly.geometry import fly_points_world

    traj = read_trajectory(run_dir, keys=("t", "position", "quaternion", "wing_angles"))
    notes: list = []
    params = params if params is not None else _params(Path(run_dir), notes)
    idx = frame_indices(traj["t"])
    pos = traj["position"][idx]
    body, wings = fly_points_world(params, pos, traj["quaternion"][idx], traj["wing_angles"][idx].reshape(len(idx), 2, 3))
    scene = Scene(traj["t"][idx], units=UNIT, follow=pos, focus=3 * params.body_length, notes=notes)
    scene.add_mesh("body", body, box_triangles(), color=(0.55, 0.35, 0.2), flat=True)
    scene.add_mesh("wings", wings.reshape(len(idx), 6, 3), np.array([[0, 1, 2], [3, 4, 5]]), color=(0.1, 0.7, 0.85), opacity=0.7, flat=True)
    scene.add_path("path", pos)
    if "command" in traj:  # a steered flight (animat fly steer): the active command under the clock
        scene.captions = [f"command: {c}" for c in traj["command"][idx].astype(str)]
    crashed = traj.get("crashed")
    if crashed is not None and np.asarray(crashed).any():
        scene.notes.append(f"crashed at t = {float(traj['t'][int(np.argmax(crashed))]):.2f} s")
    return scene


BUILDERS = (*drosophila_report.BUILDERS, SceneBuilder("fly", recognises, build))
"""The fly system's scene builders, tried in this order: the drosophila preset's runs first (they have wings too)."""

write_fly_report = partial(write_report, builders=BUILDERS)
"""``write_fly_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` with this system's builders."""
