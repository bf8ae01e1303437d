"""The fly's replay: body box and wing triangles as they move, its path."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from animat.fly.model import FlyParams
from animat.fly.options import TrainConfig
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import from_run_config, read_json_or_none, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, box_triangles, frame_indices

UNIT = "u"  # the paper preset's simulation length unit


def recognises(run_dir: Path) -> bool:
    """A flight of the paper's fly: wing angles, and a summary that names no other preset (older runs name none)."""
    summary = read_json_or_none(Path(run_dir) / "summary.json") or {}
    return "wing_angles" in trajectory_keys(run_dir) and summary.get("preset", "paper") == "paper"


def _params(run_dir: Path, notes: list):
    """The fly's parameters: this run's config.json (training), its source run's (replay), else the preset."""

    params = from_run_config(run_dir, lambda stored: TrainConfig.build(None, **stored).fly_params())
    if params is not None:
        return params
    notes.append("body drawn with the paper preset's geometry: the run directory does not say which fly flew")
    return FlyParams()


def flight_scene(params, t, pos, quat, wing, notes: list | None = None) -> Scene:
    """The fly's body box and wing triangles at times ``t (F,)`` s from its positions ``(F, 3)`` u, quaternions
    ``(F, 4)`` and wing angles ``(F, 2, 3)`` rad, the camera following it (the report's replay; one frame of it is
    ``animat play``'s live view)."""
    from animat.fly.geometry import fly_points_world

    body, wings = fly_points_world(params, pos, quat, wing)
    scene = Scene(t, units=UNIT, follow=pos, focus=3 * params.body_length, notes=notes or [])
    scene.add_mesh("body", body, box_triangles(), color=(0.55, 0.35, 0.2), flat=True)
    scene.add_mesh(
        "wings",
        wings.reshape(len(t), 6, 3),
        np.array([[0, 1, 2], [3, 4, 5]]),
        color=(0.1, 0.7, 0.85),
        opacity=0.7,
        flat=True,
    )
    return scene


def build(run_dir: Path, params=None, **_) -> Scene:
    """``params``: the FlyParams that flew (else read from the run, see :func:`_params`)."""
    traj = read_trajectory(run_dir, keys=("t", "position", "quaternion", "wing_angles"))
    notes: list = []
    params = params if params is not None else _params(Path(run_dir), notes)
    idx = frame_indices(traj["t"])
    pos = traj["position"][idx]
    wing = traj["wing_angles"][idx].reshape(len(idx), 2, 3)
    scene = flight_scene(params, traj["t"][idx], pos, traj["quaternion"][idx], wing, notes)
    scene.add_path("path", pos)
    if "command" in traj:  # a steered flight (animat fly steer): the active command under the clock
        scene.captions = [f"command: {c}" for c in traj["command"][idx].astype(str)]
    crashed = traj.get("crashed")
    if crashed is not None and np.asarray(crashed).any():
        scene.notes.append(f"crashed at t = {float(traj['t'][int(np.argmax(crashed))]):.2f} s")
    return scene


def distill_plot(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike, title: str) -> Path:
    """A distillation (DAgger) per round: the student's mean squared error on the records so far after fitting
    them, and on the round's new records before (in the states its own flying reached; log scale, top); the
    episodes it flew and crashed (bottom). ``rows``: ``animat.fly.steer.distill`` metrics rows."""
    from matplotlib.ticker import MaxNLocator

    from animat.viz.plots import column, save_figure, subplots

    r = column(rows, "round")
    fig, (a1, a2) = subplots(2, 1, figsize=(7.0, 5.6), sharex=True)
    for key, label, colour in (
        ("loss", "after fitting (all records)", "C0"),
        ("on_policy_loss", "before fitting (the round's new records)", "C3"),
    ):
        y = column(rows, key)
        ok = np.isfinite(y) & (y > 0)
        a1.plot(r[ok], y[ok], color=colour, lw=1.6, marker="o", ms=3, label=label)
    a1.set_yscale("log")
    a1.set_ylabel("mean squared error of the outputs", fontsize=9)
    a1.legend(frameon=False, fontsize=8)
    a2.plot(r, column(rows, "goal_episodes"), color="C1", lw=1.6, marker="o", ms=3, label="flown by the student")
    a2.plot(r, column(rows, "goal_crashes"), color="C3", lw=1.2, ls="--", marker="x", ms=4, label="of those, crashed")
    a2.set_ylim(bottom=0.0)
    a2.set_ylabel("episodes", fontsize=9)
    a2.set_xlabel("round")
    a2.xaxis.set_major_locator(MaxNLocator(integer=True))
    a2.legend(frameon=False, fontsize=8)
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    a1.set_title(title, fontsize=10)
    return save_figure(fig, path)


BUILDERS = (SceneBuilder("fly", recognises, build),)
"""The paper preset's scene builders (the fly system's are every preset's: :data:`animat.fly.presets.BUILDERS`)."""

write_fly_report = partial(write_report, builders=BUILDERS)
"""``write_fly_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` of a paper fly's
run (training, replay, steered or live flight)."""


def write_task_report(run_dir: Path, params) -> Path:
    """The reports of a run whose flight is in ``steer/`` (a steering task's training, a distillation): ``steer/``'s
    own, as ``animat fly steer`` writes it, and the run's (its numbers and plots, that flight as its replay);
    ``params``: the FlyParams that flew."""
    run_dir = Path(run_dir)
    write_fly_report(run_dir / "steer", params=params)
    return write_fly_report(run_dir, scene=build(run_dir / "steer", params=params))
