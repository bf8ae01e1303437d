"""The run directory of ``animat fly steer``: a steered flight's trajectory, its steering score, plots,
animation and configuration (``report.html`` is the CLI's, through :mod:`animat.viz.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from animat import runs
from animat.console import phase
from animat.errors import ConfigError
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.model import FlyParams
from animat.fly.steer.commands import parse_script
from animat.fly.steer.live import TerminalKeys, fly_interactive
from animat.fly.steer.pilot import fly_script, load_steering, make_pilot
from animat.fly.steer.score import steer_score
from animat.viz import plots

UNIT = "u"  # the paper preset's simulation length unit
TICK_KEYS = ("t", "position", "velocity", "quat", "wing", "command", "command_direction", "crashed", "network")


def preset_of(params) -> str:
    """The preset of the fly whose parameters are ``params``: ``drosophila`` or ``paper``."""
    return "drosophila" if isinstance(params, DrosophilaParams) else "paper"


def stack_ticks(records: list[dict]) -> dict[str, np.ndarray]:
    """A pilot's ``tick()`` records stacked into a flight: ``t (T,)``, ``position (T, 3)``, ...,
    ``command (T,)`` fixed-width unicode, ``crashed (T,)`` (the keys of :data:`TICK_KEYS`)."""
    return {k: np.array([r[k] for r in records]) for k in TICK_KEYS}


def fly_request(
    source: str, opts, *, interactive: bool = False
) -> tuple[dict[str, np.ndarray], FlyParams, float, np.ndarray]:
    """Fly what ``animat fly steer`` asks: ``opts`` (:class:`~animat.fly.options.SteerOptions`) with its command
    script, or the keyboard (``interactive``), over the steering set ``source`` (a directory or
    ``pretrained:NAME``). Every input is checked (one-line errors) before the flight. Returns the
    stacked ticks (:data:`TICK_KEYS`), the fly's parameters, the target speed u/s and the start
    position ``(3,)`` u."""

    if interactive == (opts.commands is not None):
        raise ConfigError("give either --commands 'name:seconds,...' or --interactive")
    script = None if interactive else parse_script(opts.commands)
    if interactive:
        TerminalKeys.check()
    steering = load_steering(source)
    pilot = make_pilot(steering, controller=opts.controller, speed=opts.speed, seed=opts.seed, lookahead=opts.lookahead)
    start = np.asarray(pilot.state.pos, float).reshape(3)
    if interactive:
        records = fly_interactive(pilot)
        if len(records) < 2:  # a score needs two samples in time
            raise ConfigError("the flight ended before its second control tick; nothing to score or write")
        flight = stack_ticks(records)
    else:
        with phase(f"flying the {sum(s for _, s in script):g} s script ({opts.controller} controller)"):
            flight = fly_script(
                steering, script, controller=opts.controller, speed=opts.speed, seed=opts.seed, lookahead=opts.lookahead
            )
    return flight, pilot.params, pilot.speed, start


class Flown(NamedTuple):
    """A steered flight's arrays as written: ``t (T,)`` s, ``pos``, ``vel (T, 3)``, ``quat (T, 4)``, ``wing (T, 2, 3)``
    wing angles (float32), ``command (T,)`` str, ``direction (T, 3)`` the commanded directions, ``crashed (T,)``."""

    t: np.ndarray
    pos: np.ndarray
    vel: np.ndarray
    quat: np.ndarray
    wing: np.ndarray
    command: np.ndarray
    direction: np.ndarray
    crashed: np.ndarray

    @classmethod
    def of(cls, flight: dict[str, np.ndarray]) -> Flown:
        """The arrays of a flight (the keys of :data:`TICK_KEYS`)."""
        t = np.asarray(flight["t"], np.float32)
        return cls(
            t,
            np.asarray(flight["position"], np.float32),
            np.asarray(flight["velocity"], np.float32),
            np.asarray(flight["quat"], np.float32),
            np.asarray(flight["wing"], np.float32).reshape(len(t), 2, 3),
            np.asarray(flight["command"]).astype(str),
            np.asarray(flight["command_direction"], np.float32),
            np.asarray(flight["crashed"], bool),
        )


def write_steer_run(
    run_dir: Path,
    flight: dict[str, np.ndarray],
    *,
    params: FlyParams,
    speed: float,
    config: dict,
    anim_seconds: float,
    start=None,
    title: str = "fly steer",
) -> dict:
    """Write a steered ``flight`` (the arrays of :data:`TICK_KEYS`, as ``fly_script`` returns them) into
    ``run_dir``: ``config.json`` (``config``), ``trajectory.npz`` (``t``, ``position``, ``velocity``,
    ``command_direction``, ``command``, ``quaternion``, ``wing_angles (T, 6)``, ``crashed``, and ``network``: the
    network that flew each tick, where the flight says), ``summary.json`` (the fly's ``preset``,
    :func:`~animat.fly.steer.score.steer_score`
    at target ``speed`` u/s, ``config`` and ``network_seconds``: how long each network flew; ``config``; ``start (3,)``
    u: the position before the first sample, default the origin), ``plots/velocity.png``, ``plots/path.png`` and
    ``media/flight.gif`` and ``.mp4`` (the first ``anim_seconds`` s, captioned with the active command; none with 0).
    Returns the summary."""
    run_dir = Path(run_dir)
    f = Flown.of(flight)
    runs.atomic_write_json(run_dir / "config.json", config)
    network = {"network": np.asarray(flight["network"]).astype(str)} if "network" in flight else {}
    runs.atomic_save_npz(
        run_dir / "trajectory.npz",
        t=f.t,
        position=f.pos,
        velocity=f.vel,
        command_direction=f.direction,
        command=f.command,
        quaternion=f.quat,
        wing_angles=f.wing.reshape(len(f.t), 6),
        crashed=f.crashed,
        **network,
    )
    flown = _network_seconds(flight["t"], network["network"]) if network else {}
    summary = {
        "preset": preset_of(params),
        **config,
        "seconds": float(f.t[-1]),
        **({"network_seconds": flown} if flown else {}),
        **steer_score(
            f.t,
            f.pos,
            f.vel,
            f.command,
            f.direction,
            f.crashed,
            speed=speed,
            body_length=params.body_length,
            start=np.zeros(3) if start is None else start,
        ),
    }
    runs.atomic_write_json(run_dir / "summary.json", summary)
    _write_media(run_dir, params, f, speed, anim_seconds, title)
    return summary


def _network_seconds(ticks, network: np.ndarray) -> dict[str, float]:
    """How long each network flew (s): its ticks × the control interval; ``ticks (T,)`` s, ``network (T,)`` str."""
    ticks = np.asarray(ticks, float)
    dt = ticks[1] - ticks[0] if len(ticks) > 1 else ticks[0]  # a flight's samples are every control tick from t = dt
    return {str(n): round(int(k) * float(dt), 6) for n, k in zip(*np.unique(network, return_counts=True))}


def _write_media(run_dir: Path, params: FlyParams, f: Flown, speed: float, anim_seconds: float, title: str) -> None:
    """``plots/velocity.png`` (commanded and actual velocity), ``plots/path.png`` and the flight's animation
    (``media/flight.gif``, ``.mp4``: its first ``anim_seconds`` s, captioned with the active command) of a steered
    flight ``f``; the commands' target ``speed`` in u/s."""
    drosophila = preset_of(params) == "drosophila"
    plots.commanded_velocity_plot(
        f.t,
        f.vel,
        f.direction * speed,
        f.command,
        run_dir / "plots" / "velocity.png",
        title=f"{title}: commanded (dashed) and actual velocity",
        unit="m" if drosophila else UNIT,
    )
    plots.path_views_plot(f.pos, f.command, run_dir / "plots" / "path.png", body_length=params.body_length, title=title)
    if drosophila:
        from animat.fly.drosophila.replay import write_steered_animation as write_animation
    else:
        from animat.fly.replay import write_steered_animation as write_animation
    seconds = min(anim_seconds, float(f.t[-1]))
    gif, captions = run_dir / "media" / "flight.gif", [f"command: {c}" for c in f.command]
    write_animation(params, f.t, f.pos, f.quat, f.wing, f.crashed, gif, seconds, title=title, captions=captions)


def write_steer_report(run_dir: Path, params) -> Path:
    """``report.html`` of a steered flight in ``run_dir``, drawn with the fly that flew it (``params``)."""
    if preset_of(params) == "drosophila":
        from animat.fly.drosophila.report import write_drosophila_report as write
    else:
        from animat.fly.report import write_fly_report as write
    return write(run_dir, params=params)
