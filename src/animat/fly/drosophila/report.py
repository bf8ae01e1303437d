"""The fruit fly's replay (preset ``drosophila``): its spheroid body and wing outlines at mm scale over the
first wingbeats, slowed down so each beat can be followed."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import from_run_config, read_json_or_none, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, frame_indices

BEATS = 10  # wingbeats shown (about 50 ms of flight)
FRAMES = 300  # at most


def recognises(run_dir: Path) -> bool:
    summary = read_json_or_none(Path(run_dir) / "summary.json") or {}
    return "wing_angles" in trajectory_keys(run_dir) and summary.get("preset") == "drosophila"


def _wing_triangles(n: int) -> np.ndarray:
    """Triangles of a wing outline of ``2 n`` points (leading edge root to tip, then trailing edge tip to root)."""
    lead, trail = np.arange(n), 2 * n - 1 - np.arange(n)
    quads = [(lead[j], lead[j + 1], trail[j + 1], trail[j]) for j in range(n - 1)]
    return np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.uint32)


def build(run_dir: Path, params=None, **_) -> Scene:
    """``params``: the DrosophilaParams that flew (else read from the run, else the preset's defaults)."""
    from animat.fly.drosophila.model import DrosophilaParams
    from animat.fly.drosophila.replay import SLOW_DOWN

    run_dir = Path(run_dir)
    notes: list = []
    if params is None:
        params = from_run_config(run_dir, lambda stored: DrosophilaTrainConfig.build(None, **stored).fly_params())
    if params is None:
        params = DrosophilaParams()
        notes.append("drawn with the preset's default body: the run directory does not say which fly flew")
    if "command" in trajectory_keys(run_dir):
        return _steered(run_dir, params, notes)
    traj = read_trajectory(run_dir, keys=("t", "position", "quaternion", "wing_angles"))
    summary = read_json_or_none(run_dir / "summary.json") or {}
    beat = 1.0 / max(float(summary.get("wingbeat_hz") or summary.get("replay_wingbeat_hz") or 200.0), 1.0)
    t = traj["t"]
    n = int(np.searchsorted(t, t[0] + BEATS * beat)) + 1
    idx = np.arange(0, min(n, len(t)), max(1, -(-n // FRAMES)))
    scene = flight_scene(params, (t[idx] - t[0]) * SLOW_DOWN, traj, idx, notes)
    scene.notes.append(
        f"the first {BEATS} wingbeats ({(t[idx[-1]] - t[0]) * 1e3:.0f} ms of flight) slowed down {SLOW_DOWN}×: "
        f"the replay's clock shows slowed time; lengths in mm"
    )
    return scene


def flight_scene(params, times, traj: dict, idx: np.ndarray, notes: list) -> Scene:
    """The fly's spheroid body and wing outlines (mm) at samples ``idx`` of trajectory ``traj``, shown at ``times``
    s, its path and the camera following it."""
    from animat.fly.drosophila.geometry import N_OUTLINE, fly_world, spheroid_mesh

    wing = traj["wing_angles"][idx].reshape(len(idx), 2, 3)
    body, wings = fly_world(params, traj["position"][idx], traj["quaternion"][idx], wing)
    body, wings, path = body * 1e3, wings * 1e3, traj["position"][idx] * 1e3  # mm
    scene = Scene(times, units="mm", follow=path, focus=3 * params.body_length * 1e3, notes=notes)
    scene.add_mesh("body", body, spheroid_mesh(params)[1], color=(0.55, 0.35, 0.2))
    tris = _wing_triangles(N_OUTLINE)
    scene.add_mesh(
        "wings",
        wings.reshape(len(idx), -1, 3),
        np.concatenate([tris, tris + 2 * N_OUTLINE]),
        color=(0.1, 0.7, 0.85),
        opacity=0.6,
        flat=True,
    )
    scene.add_path("path", path)
    return scene


def _steered(run_dir: Path, params, notes: list) -> Scene:
    """A steered flight (``animat fly steer``): the whole flight in real time, the active command under the clock
    (the wings at whatever phase of their beat each frame catches)."""
    traj = read_trajectory(run_dir, keys=("t", "position", "quaternion", "wing_angles", "command"))
    idx = frame_indices(traj["t"])
    scene = flight_scene(params, traj["t"][idx], traj, idx, notes)
    scene.captions = [f"command: {c}" for c in traj["command"][idx].astype(str)]
    scene.notes.append("real time; lengths in mm; the wings are shown at the phase of their beat each frame catches")
    return scene


BUILDERS = (SceneBuilder("drosophila", recognises, build),)

write_drosophila_report = partial(write_report, builders=BUILDERS)
"""``write_drosophila_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` of a fruit
fly's run."""
