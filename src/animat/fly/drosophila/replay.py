"""Re-simulate one fruit-fly genome and write its trajectory, plots, slowed-down animation and summary.

The replay records the body and the wings every :data:`SAMPLE_EVERY` physics steps (5 kHz at the
0.1 ms step), so the wingbeat (≈ 200 Hz) is resolved: ``trajectory.npz`` holds ``t (N,)`` s,
``position (N, 3)`` m, ``quaternion (N, 4)``, ``wing_angles (N, 6)`` rad ((right, left) × (stroke,
deviation, rotation)) and ``crashed (N,)``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from animat import runs
from animat.config import require
from animat.console import phase
from animat.errors import ConfigError
from animat.evolve.genome import Genome
from animat.fly.drosophila.geometry import fly_world, spheroid_mesh
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.drosophila.options import DrosophilaTrainConfig
from animat.fly.drosophila.power import induced_power, inertial_power
from animat.fly.drosophila.rollout import N_INPUTS, N_OUTPUTS, Trajectory, simulate_population
from animat.viz import plots
from animat.viz.animate import animate_body

SAMPLE_EVERY = 2  # physics steps per recorded sample (5 kHz at dt = 0.1 ms)
SLOW_DOWN = 200  # the animation plays this many times slower than the flight
ANIM_FPS = 25.0
ANIM_BEATS = 4  # wingbeats animated
PLOT_BEATS = 5  # wingbeats in the wing-angle plot
SPECTRUM_MAX_HZ = 1000.0  # the wingbeat spectrum's plot ends here (the fundamental and its first harmonics)
SUN_TANG_2002_W_PER_KG = (
    28.7  # body-mass-specific power of hovering D. virilis (Sun & Tang 2002, J. Exp. Biol. 205, 2413)
)
HEIGHT_LIMIT, DRIFT_LIMIT = 1.0, 5.0  # body lengths: issue 22's hover checks
WINGBEAT_RANGE = (180.0, 250.0)  # Hz


class Flight(NamedTuple):
    """One replayed flight: samples every :data:`SAMPLE_EVERY` steps — ``t (N,)`` s, ``pos (N, 3)`` m,
    ``quat (N, 4)``, ``wing (N, 2, 3)`` rad, ``crashed (N,)`` — and the Trajectory ``samples``
    (every ``sample_dt``)."""

    t: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    wing: np.ndarray
    crashed: np.ndarray
    samples: Trajectory


def check_genome(genome: Genome) -> None:
    """The network must read the fruit fly's observation and drive its pattern generator."""
    if genome.layers[0] != N_INPUTS or genome.layers[-1] != N_OUTPUTS:
        raise ConfigError(
            f"network layers {list(genome.layers)} do not fit the drosophila preset: it needs "
            f"{N_INPUTS} inputs and {N_OUTPUTS} outputs"
        )


def fly_genome(params: DrosophilaParams, genome: Genome, seconds: float, ref_vel=None) -> Flight:
    """Fly one genome for ``seconds`` from rest in the hover posture (``ref_vel (3,)`` m/s: tracking a point that
    moves so from the start, a direction task's; None: one that stays)."""
    require("--seconds", seconds, gt=0)
    check_genome(genome)
    if params.steps_per_sample % SAMPLE_EVERY:
        raise ConfigError(f"sample_dt / dt ({params.steps_per_sample}) must be a multiple of {SAMPLE_EVERY} to replay")
    nets = {k: v[None] for k, v in genome.params.items()}
    samples = Trajectory(
        *(
            x[0]
            for x in simulate_population(
                params,
                nets,
                genome.activations,
                seconds,
                wing_every=SAMPLE_EVERY,
                ref_vel=None if ref_vel is None else np.asarray(ref_vel, np.float32)[None],
            )
        )
    )
    n_samples, per_sample = samples.wing.shape[:2]
    t = (np.arange(n_samples * per_sample) * SAMPLE_EVERY * params.dt).astype(np.float32)
    flat = lambda a: a.reshape((n_samples * per_sample,) + a.shape[2:])
    return Flight(
        t,
        flat(samples.fine_pos),
        flat(samples.fine_quat),
        flat(samples.wing),
        np.repeat(samples.crashed, per_sample),
        samples,
    )


def stroke_spectrum(stroke: np.ndarray, sample_dt: float) -> tuple[np.ndarray, np.ndarray]:
    """``(frequencies (K,) Hz, amplitudes (K,))``: the magnitude of the FFT of the stroke angle ``stroke (N,)`` rad
    sampled every ``sample_dt`` s, its mean removed, under a Hann window (``K = N // 2 + 1``)."""
    x = np.asarray(stroke, np.float64) - np.mean(stroke)
    return np.fft.rfftfreq(len(x), sample_dt), np.abs(np.fft.rfft(x * np.hanning(len(x))))


def wingbeat_hz(stroke: np.ndarray, sample_dt: float) -> float:
    """Frequency (Hz) of the largest peak of :func:`stroke_spectrum` (the zero frequency left out), refined by a
    parabola through the peak and its neighbours."""
    x = np.asarray(stroke)
    spectrum = stroke_spectrum(x, sample_dt)[1]
    k = int(np.argmax(spectrum[1:])) + 1
    shift = 0.0
    if 1 <= k < len(spectrum) - 1:
        a, b, c = np.log(spectrum[k - 1 : k + 2] + 1e-300)
        shift = 0.5 * (a - c) / (a - 2 * b + c) if (a - 2 * b + c) != 0 else 0.0
    return float((k + shift) / (len(x) * sample_dt))


def flight_summary(params: DrosophilaParams, flight: Flight) -> dict:
    """Headline numbers of one flight (lengths relative to the start, in body lengths; powers per kg of body)."""
    L = params.body_length
    dz = flight.pos[:, 2] - flight.pos[0, 2]
    horiz = np.hypot(flight.pos[:, 0] - flight.pos[0, 0], flight.pos[:, 1] - flight.pos[0, 1])
    samples = flight.samples
    pattern = samples.pattern.astype(np.float64)
    amplitude = pattern[:, [1, 6]]
    induced = float(induced_power(params, pattern).mean() / params.mass)
    return {
        "preset": "drosophila",
        "seconds": float(len(flight.t) * SAMPLE_EVERY * params.dt),
        "sample_hz": 1.0 / (SAMPLE_EVERY * params.dt),
        "body_length": L,
        "wingbeat_hz": wingbeat_hz(flight.wing[:, 0, 0], SAMPLE_EVERY * params.dt),
        "mean_set_frequency_hz": float(samples.pattern[:, 0].mean()),
        "network_updates_per_second": float(samples.updates[-1] / (len(samples.updates) * params.sample_dt)),
        "mean_stroke_amplitude_deg": float(np.degrees(amplitude.mean())),
        # aerodynamic: the blade forces' power plus the wake's induced power (0 unless induced_power_factor > 0)
        "mechanical_power_w_per_kg": float(samples.power.astype(np.float64).mean() / params.mass) + induced,
        "induced_power_w_per_kg": induced,
        "inertial_power_w_per_kg": float(inertial_power(params, pattern).mean() / params.mass),
        "sun_tang_2002_power_w_per_kg": SUN_TANG_2002_W_PER_KG,
        "max_height_change_body_lengths": float(np.abs(dz).max() / L),
        "final_height_change_body_lengths": float(dz[-1] / L),
        "max_horizontal_drift_body_lengths": float(horiz.max() / L),
        "final_horizontal_drift_body_lengths": float(horiz[-1] / L),
        "mean_velocity_m_per_s": [float(v) for v in (flight.pos[-1] - flight.pos[0]) / max(float(flight.t[-1]), 1e-12)],
        "crashed": bool(flight.crashed.any()),
    }


def acceptance(summary: dict) -> dict[str, bool]:
    """Issue 22's hover checks: height within 1 body length and drift within 5 body lengths of the start
    throughout, not crashed, wingbeat (FFT) within 180–250 Hz."""
    lo, hi = WINGBEAT_RANGE
    return {
        "height_change_below_1_body_length": summary["max_height_change_body_lengths"] < HEIGHT_LIMIT,
        "drift_below_5_body_lengths": summary["max_horizontal_drift_body_lengths"] < DRIFT_LIMIT,
        "not_crashed": not summary["crashed"],
        "wingbeat_180_250_hz": lo <= summary["wingbeat_hz"] <= hi,
    }


def animation_frames(params: DrosophilaParams, flight: Flight, n: int) -> list[list[dict]]:
    """Polygons (mm) of the first ``n`` samples: the body's spheroid triangles and the two wing outlines."""
    body, wings = fly_world(params, flight.pos[:n], flight.quat[:n], flight.wing[:n])
    tris = spheroid_mesh(params)[1]
    frames = []
    for b, w in zip(body * 1e3, wings * 1e3):
        polys = [{"vertices": b[tri], "color": "tab:brown", "alpha": 0.9} for tri in tris]
        polys += [{"vertices": outline, "color": "tab:cyan", "alpha": 0.6} for outline in w]
        frames.append(polys)
    return frames


def write_replay(
    params: DrosophilaParams,
    genome: Genome,
    seconds: float,
    out: Path,
    *,
    anim_seconds: float = 6.0,
    title: str = "drosophila",
    ref_vel=None,
) -> dict:
    """Fly ``genome`` for ``seconds`` and write into ``out``: ``trajectory.npz``, the plots of
    :func:`write_plots`, ``media/wingbeat.gif`` and ``.mp4`` (the first :data:`ANIM_BEATS` wingbeats or
    ``anim_seconds`` of flight, whichever is shorter, slowed down :data:`SLOW_DOWN` ×; none with 0). ``ref_vel``:
    as :func:`fly_genome`'s. Returns the flight summary with its checks."""
    out = Path(out)
    with phase(f"flying {seconds:g} s at a {params.dt * 1e3:g} ms step"):
        flight = fly_genome(params, genome, seconds, ref_vel)
    runs.atomic_save_npz(
        out / "trajectory.npz",
        t=flight.t,
        position=flight.pos,
        quaternion=flight.quat,
        wing_angles=flight.wing.reshape(len(flight.t), -1),
        crashed=flight.crashed,
    )
    summary = flight_summary(params, flight)
    summary.update({f"check_{k}": v for k, v in acceptance(summary).items()})
    write_plots(params, flight, summary["wingbeat_hz"], out / "plots", title)
    if anim_seconds > 0:
        with phase("rendering media/wingbeat.gif"):
            write_animation(params, flight, summary["wingbeat_hz"], out / "media" / "wingbeat.gif", anim_seconds, title)
    return summary


def write_plots(params: DrosophilaParams, flight: Flight, wingbeat: float, plots_dir: Path, title: str) -> None:
    """``height.png``, ``topview.png``, ``wings.png`` (the first :data:`PLOT_BEATS` wingbeats of ``wingbeat`` Hz),
    ``wingbeat_spectrum.png`` (:func:`stroke_spectrum` of the right wing up to :data:`SPECTRUM_MAX_HZ`) and
    ``power.png`` (mechanical and inertial power per kg of body, W/kg, every ``sample_dt``) into ``plots_dir``."""
    L, t, dt = params.body_length, flight.t, SAMPLE_EVERY * params.dt
    plots.height_plot(
        t,
        flight.pos[:, 2] * 1e3,
        plots_dir / "height.png",
        start=0.0,
        floor=-HEIGHT_LIMIT * L * 1e3,
        body_length=L * 1e3,
        title=f"{title}: height",
        unit="mm",
    )
    plots.topview_plot(
        flight.pos[:, 0], flight.pos[:, 1], plots_dir / "topview.png", body_length=L, title=f"{title}: top view"
    )
    n = min(len(t), int(math.ceil(PLOT_BEATS / max(wingbeat, 1.0) / dt)) + 1)
    names = ("stroke", "deviation", "rotation")
    series = {
        f"{side} {a}": np.degrees(flight.wing[:n, s, i])
        for s, side in enumerate(("right", "left"))
        for i, a in enumerate(names)
    }
    plots.series_plot(
        t[:n],
        series,
        plots_dir / "wings.png",
        ylabel="angle (deg)",
        title=f"{title}: wing angles, {PLOT_BEATS} wingbeats",
    )
    freq, amp = stroke_spectrum(flight.wing[:, 0, 0], dt)
    keep = freq <= SPECTRUM_MAX_HZ
    plots.series_plot(
        freq[keep],
        {"right stroke": amp[keep] / amp.max()},
        plots_dir / "wingbeat_spectrum.png",
        xlabel="frequency (Hz)",
        ylabel="FFT magnitude (of the peak)",
        title=f"{title}: wingbeat spectrum, peak {wingbeat:.1f} Hz",
    )
    pattern, samples = flight.samples.pattern.astype(np.float64), flight.samples
    mechanical = (samples.power.astype(np.float64) + induced_power(params, pattern)) / params.mass
    plots.series_plot(
        params.sample_dt * np.arange(1, len(mechanical) + 1),
        {"mechanical (blade forces + induced)": mechanical, "inertial": inertial_power(params, pattern) / params.mass},
        plots_dir / "power.png",
        ylabel="power per body mass (W/kg)",
        title=f"{title}: mechanical power, every {params.sample_dt * 1e3:g} ms",
    )


def write_animation(
    params: DrosophilaParams, flight: Flight, wingbeat: float, gif: Path, anim_seconds: float, title: str
) -> None:
    """The first :data:`ANIM_BEATS` wingbeats (of ``wingbeat`` Hz) or ``anim_seconds`` s of ``flight``, whichever
    is shorter, slowed down :data:`SLOW_DOWN` ×, as the GIF ``gif`` and the MP4 beside it."""
    step = 1.0 / (ANIM_FPS * SLOW_DOWN * SAMPLE_EVERY * params.dt)  # samples per frame at the slow-down
    beat = 1.0 / max(wingbeat, 1.0)
    n_frames = max(1, min(len(flight.t), int(min(ANIM_BEATS * beat, anim_seconds) / (SAMPLE_EVERY * params.dt))))
    idx = np.arange(0, n_frames, max(1, int(round(step))))
    frames = animation_frames(params, Flight(*(a[idx] for a in flight[:5]), flight.samples), len(idx))
    animate_body(
        frames,
        gif,
        fps=ANIM_FPS,
        trail=flight.pos[idx] * 1e3,
        title=f"{title}: {len(idx) * SAMPLE_EVERY * params.dt * 1e3:.0f} ms, slowed down {SLOW_DOWN}×",
        unit="mm",
        mp4=True,
    )


def write_steered_animation(
    params: DrosophilaParams, t, pos, quat, wing, crashed, gif: Path, seconds: float, *, title: str, captions
) -> None:
    """The first ``seconds`` s of a steered flight (``animat fly steer``: samples ``t (T,)`` s, ``pos (T, 3)`` m,
    ``quat (T, 4)``, ``wing (T, 2, 3)`` rad, ``crashed (T,)``, one caption a sample) in real time at
    :data:`ANIM_FPS` frames a second, the body and wings at mm scale (the wings at whatever phase of their beat each
    frame catches); nothing for ``seconds`` 0."""
    if seconds <= 0:
        return
    t = np.asarray(t, float)
    step = max(1, int(round(1.0 / (ANIM_FPS * (t[1] - t[0]))))) if len(t) > 1 else 1
    idx = np.arange(0, max(1, int(np.searchsorted(t, t[0] + seconds))), step)
    flight = Flight(t[idx], pos[idx], quat[idx], wing[idx], crashed[idx], None)
    with phase(f"rendering {gif.parent.name}/{gif.name} ({seconds:g} s of flight)"):
        animate_body(
            animation_frames(params, flight, len(idx)),
            gif,
            fps=ANIM_FPS,
            trail=np.asarray(pos)[idx] * 1e3,
            times=t[idx],
            captions=[captions[i] for i in idx],
            title=title,
            unit="mm",
            mp4=True,
        )


def load_for_replay(source: Path) -> tuple[DrosophilaParams, Genome]:
    """``(params, genome)`` of a drosophila run directory (its ``config.json``) or genome file (its manifest's
    extra): a source that :func:`animat.fly.presets.of_source` found to be the drosophila preset's."""
    from animat.evolve.genome_file import load_genome

    source = Path(source)
    if source.is_dir():
        stored = runs.read_run_config(source, "a fly training run directory")
        return DrosophilaTrainConfig.build(None, **stored).fly_params(), load_genome(source / "best_genome.npz").genome
    saved = load_genome(source)
    return DrosophilaParams.from_dict(saved.extra.get("drosophila", {})), saved.genome
