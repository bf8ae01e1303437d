"""Re-simulate one genome and write its trajectory, plots, animation and summary."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from animat import runs
from animat.config import require
from animat.console import phase
from animat.errors import CheckpointError, ConfigError
from animat.evolve.genome import Genome
from animat.evolve.genome_file import load_genome
from animat.fly.analysis import acceptance, flight_summary
from animat.fly.geometry import fly_points_world
from animat.fly.model import FlyParams
from animat.fly.options import TrainConfig
from animat.fly.rollout import Trajectory, simulate_population
from animat.viz import plots
from animat.viz.animate import animate_body, box_faces, frame_stride

ANIMATION_FPS = 25
UNIT = "u"  # the paper preset's simulation length unit


def check_genome(params: FlyParams, genome: Genome) -> None:
    """The network must read the fly's observation and drive its wings."""
    if genome.layers[0] != params.n_inputs or genome.layers[-1] != params.n_outputs:
        raise ConfigError(
            f"network layers {list(genome.layers)} do not fit the fly: it needs {params.n_inputs} inputs and "
            f"{params.n_outputs} outputs ({'asymmetric' if params.asymmetric else 'symmetric'} wings)"
        )


def load_for_replay(source: Path) -> tuple[FlyParams, Genome]:
    """``(params, genome)`` of a paper fly's run directory (its ``best_genome.npz`` and ``config.json``) or genome
    file (``.npz``/``.json`` saved by animat); CheckpointError (one line) for anything else."""
    source = Path(source)
    if source.is_dir():
        genome_file = source / "best_genome.npz"
        if not genome_file.exists():
            raise CheckpointError(f"{str(source)!r} holds no best_genome.npz; is it a fly training run directory?")
        params = TrainConfig.build(None, **runs.read_run_config(source, "a fly training run directory")).fly_params()
        return params, load_genome(genome_file).genome
    if not source.exists():
        raise CheckpointError(f"{str(source)!r} does not exist; give a run directory or a best_genome.npz")
    if source.suffix not in (".npz", ".json"):
        raise CheckpointError(f"{str(source)!r} is not a genome file (.npz with its .json) nor a run directory")
    saved = load_genome(source)
    return FlyParams.from_dict(saved.extra.get("fly", {})), saved.genome


def fly_genome(params: FlyParams, genome: Genome, seconds: float) -> tuple[np.ndarray, Trajectory]:
    """Simulate one genome for ``seconds``; returns times ``(T,)`` s and its Trajectory (arrays ``(T, ...)``)."""
    require("--seconds", seconds, gt=0)
    check_genome(params, genome)
    nets = {k: v[None] for k, v in genome.params.items()}
    traj = simulate_population(params, nets, genome.activations, seconds)
    traj = Trajectory(*(x[0] for x in traj))
    t = params.control_dt * np.arange(1, traj.pos.shape[0] + 1)
    return t, traj


def animation_frames(params: FlyParams, traj: Trajectory, t: np.ndarray, seconds: float, fps: int = ANIMATION_FPS):
    """Polygons per frame for the first ``seconds`` s, about ``fps`` frames per simulated second, their
    trajectory indices and the frame rate that plays them in real time (:func:`~animat.viz.animate.frame_stride`)."""
    stride, real_fps = frame_stride(params.control_dt, fps)
    idx = np.arange(0, min(len(t), int(round(seconds / params.control_dt))), stride)
    body, wings = fly_points_world(params, traj.pos[idx], traj.quat[idx], traj.wing[idx])
    frames = []
    for b, w in zip(body, wings):
        polys = [{"vertices": f, "color": "tab:brown", "alpha": 0.9} for f in box_faces(b)]
        polys += [{"vertices": tri, "color": "tab:cyan", "alpha": 0.6} for tri in w]
        frames.append(polys)
    return frames, idx, real_fps


def write_replay(
    params: FlyParams, genome: Genome, seconds: float, out: Path, *, anim_seconds: float = 6.0, title: str = "fly"
) -> dict:
    """Fly ``genome`` for ``seconds`` and write into ``out``: ``trajectory.npz``, ``plots/height.png``,
    ``plots/topview.png``, ``plots/wings.png``, ``media/flight.gif`` and ``media/flight.mp4`` (of the first
    ``anim_seconds`` s; none with 0, :func:`write_flight_animation`). Returns the flight summary."""
    out = Path(out)
    with phase(f"flying {seconds:g} s"):
        t, traj = fly_genome(params, genome, seconds)
    L = params.body_length
    runs.atomic_save_npz(
        out / "trajectory.npz",
        t=t.astype(np.float32),
        position=traj.pos,
        quaternion=traj.quat,
        wing_angles=traj.wing.reshape(len(t), -1),
        crashed=traj.crashed,
    )
    summary = flight_summary(params, t, traj.pos, traj.wing, traj.crashed)
    summary.update({f"check_{k}": v for k, v in acceptance(summary).items()})
    plots.height_plot(
        t,
        traj.pos[:, 2],
        out / "plots" / "height.png",
        start=0.0,
        floor=-2 * L,
        body_length=L,
        title=f"{title}: height",
        unit=UNIT,
    )
    plots.topview_plot(
        traj.pos[:, 0],
        traj.pos[:, 1],
        out / "plots" / "topview.png",
        body_length=L,
        title=f"{title}: top view",
        unit=UNIT,
    )
    n = min(len(t), int(round(3.0 / params.control_dt)))
    names = ("flap", "feather", "sweep")
    plots.series_plot(
        t[:n],
        {f"right {a}": traj.wing[:n, 0, i] for i, a in enumerate(names)},
        out / "plots" / "wings.png",
        ylabel="angle (rad)",
        title=f"{title}: wing angles (first 3 s)",
    )
    write_flight_animation(params, traj, t, out / "media" / "flight.gif", min(anim_seconds, seconds), title=title)
    return summary


def write_steered_animation(
    params: FlyParams, t, pos, quat, wing, crashed, gif: Path, seconds: float, *, title, captions
):
    """A steered flight's animation (``animat fly steer``): :func:`write_flight_animation` of its samples ``t (T,)``
    s, ``pos (T, 3)`` u, ``quat (T, 4)``, ``wing (T, 2, 3)`` rad, ``crashed (T,)``, one caption a sample."""
    write_flight_animation(
        params, Trajectory(pos, quat, wing, crashed), t, gif, seconds, title=title, captions=captions
    )


def write_flight_animation(
    params: FlyParams,
    traj: Trajectory,
    t: np.ndarray,
    gif: Path,
    seconds: float,
    *,
    title: str,
    captions: list[str] | None = None,
) -> None:
    """The first ``seconds`` s of flight ``traj`` (times ``t (T,)`` s) as the GIF ``gif`` and the MP4 beside it
    (:func:`animat.viz.animate.write_animation`), each frame captioned from ``captions`` (one per sample); nothing
    for ``seconds`` 0 (``--no-animation``)."""
    if seconds <= 0:
        return
    with phase(f"rendering {gif.parent.name}/{gif.name} ({seconds:g} s of flight)"):
        frames, idx, real_fps = animation_frames(params, traj, t, seconds)
        animate_body(
            frames,
            gif,
            fps=real_fps,
            trail=traj.pos[idx],
            times=t[idx],
            captions=None if captions is None else [captions[i] for i in idx],
            title=title,
            unit=UNIT,
            mp4=True,
        )
