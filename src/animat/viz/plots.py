"""Static plots (PNG) for run directories: fitness curves, height, top view, time series.

Every function renders with matplotlib's Agg backend (no display needed), writes the PNG
atomically (render to memory, then :func:`animat.runs.atomic_write_bytes`) and returns the path.
Physics-agnostic: inputs are plain arrays and dicts.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never need a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from animat.errors import AnimatError  # noqa: E402
from animat.runs import atomic_write_bytes  # noqa: E402


class VizError(AnimatError, ValueError):
    """Bad input to a plot or animation (mismatched lengths, unknown file type, ...)."""


__all__ = [
    "VizError",
    "fitness_plot",
    "height_plot",
    "topview_plot",
    "series_plot",
    "metrics_panel",
    "learning_curve_plot",
    "commanded_velocity_plot",
    "path_views_plot",
    "save_figure",
    "subplots",
    "column",
]

_FIGSIZE = (7.0, 4.2)
_DPI = 100


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the Agg backend this module sets (for plots written outside it)."""
    return plt.subplots(*args, **kwargs)


def save_figure(fig: matplotlib.figure.Figure, path: str | os.PathLike, *, dpi: int = _DPI) -> Path:
    """Render ``fig`` to PNG bytes, write them atomically to ``path``, close the figure."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def column(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """Column ``key`` as float64; missing, None or non-numeric entries become NaN."""
    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows):
        v = r.get(key)
        if v is None or v == "":
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            pass
    return out


def fitness_plot(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike, title: str = "Fitness") -> Path:
    """Best and mean fitness per generation (median dashed if present), saved as PNG.

    rows: one dict per generation with ``generation``, ``best``, ``mean`` and optionally
    ``median`` and ``crashes`` (values may be strings, as read back from ``metrics.csv``).
    Non-finite values (NaN, inf from crashed individuals) are skipped; the lines join the
    finite points on either side. ``crashes`` (if any are non-zero) are grey bars on a right axis.
    """
    rows = list(rows)
    fig, ax = plt.subplots(figsize=_FIGSIZE)
    if not rows:
        ax.text(0.5, 0.5, "no generations", ha="center", va="center", transform=ax.transAxes)
    else:
        gen = column(rows, "generation")
        if np.all(np.isnan(gen)):
            gen = np.arange(len(rows), dtype=float)
        best, mean, median = column(rows, "best"), column(rows, "mean"), column(rows, "median")
        for arr in (best, mean, median):
            arr[~np.isfinite(arr)] = np.nan
        marker = "o" if len(rows) == 1 else None
        for arr, style, colour, lw, name in (
            (best, "-", "C0", 2.0, "best"),
            (mean, "-", "C1", 1.5, "mean"),
            (median, "--", "C2", 1.2, "median"),
        ):
            ok = np.isfinite(arr) & np.isfinite(gen)  # skip NaN generations, keep the line joined
            if ok.any():
                ax.plot(gen[ok], arr[ok], style, color=colour, lw=lw, label=name, marker=marker)
        crashes = column(rows, "crashes")
        if np.nansum(crashes) > 0:
            ax2 = ax.twinx()
            ax2.bar(gen, np.nan_to_num(crashes), color="0.6", alpha=0.3, width=0.8, label="crashes")
            ax2.set_ylabel("crashes", color="0.4")
            ax2.yaxis.get_major_locator().set_params(integer=True)
            ax2.tick_params(axis="y", colors="0.4")
            ax.set_zorder(ax2.get_zorder() + 1)
            ax.patch.set_visible(False)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", frameon=False)
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("generation")
    ax.set_ylabel("fitness")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def height_plot(
    t: Sequence[float] | np.ndarray,
    z: Sequence[float] | np.ndarray,
    path: str | os.PathLike,
    *,
    start: float | None = None,
    floor: float | None = None,
    body_length: float | None = None,
    title: str = "Height",
    unit: str = "m",
) -> Path:
    """Height ``z`` (``unit``, default m) against time ``t`` (s), with optional labelled lines for the
    start height and a floor (e.g. start − 2 body lengths). With ``body_length`` a right-hand axis
    shows the height change in body lengths relative to ``start`` (or z[0])."""
    t, z = np.asarray(t, float).ravel(), np.asarray(z, float).ravel()
    _check_same_len(t, z, "t", "z")
    fig, ax = plt.subplots(figsize=_FIGSIZE)
    ax.plot(t, z, color="C0", lw=1.8, label="height")
    if start is not None:
        ax.axhline(start, color="C2", ls="--", lw=1, label=f"start ({start:.3g} {unit})")
    if floor is not None:
        ax.axhline(floor, color="C3", ls=":", lw=1.2, label=f"floor ({floor:.3g} {unit})")
    if body_length is not None and body_length > 0:
        ref = float(start) if start is not None else (float(z[0]) if z.size else 0.0)
        sec = ax.secondary_yaxis(
            "right", functions=(lambda h: (h - ref) / body_length, lambda b: b * body_length + ref)
        )
        sec.set_ylabel("Δ height (body lengths)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"height z ({unit})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", frameon=False)
    return save_figure(fig, path)


def topview_plot(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    path: str | os.PathLike,
    *,
    body_length: float | None = None,
    title: str = "Top view",
    unit: str = "m",
) -> Path:
    """Trajectory seen from above (x against y, equal aspect, ``unit`` default m), start and end
    marked. With ``body_length`` the axes are in body lengths instead."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    _check_same_len(x, y, "x", "y")
    if body_length is not None and body_length > 0:
        x, y, unit = x / body_length, y / body_length, "body lengths"
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.plot(x, y, color="C0", lw=1.5)
    if x.size:
        ax.plot(x[0], y[0], "o", color="C2", ms=8, label="start")
        ax.plot(x[-1], y[-1], "s", color="C3", ms=8, label="end")
        ax.legend(loc="best", frameon=False)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"x ({unit})")
    ax.set_ylabel(f"y ({unit})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def series_plot(
    t: Sequence[float] | np.ndarray,
    series: Mapping[str, Sequence[float] | np.ndarray],
    path: str | os.PathLike,
    *,
    xlabel: str = "time (s)",
    ylabel: str = "",
    title: str = "",
) -> Path:
    """Several named lines against time ``t`` (s; or what ``xlabel`` names, e.g. frequency), e.g. wing angles;
    one legend entry each."""
    t = np.asarray(t, float).ravel()
    fig, ax = plt.subplots(figsize=_FIGSIZE)
    for name, values in series.items():
        v = np.asarray(values, float).ravel()
        _check_same_len(t, v, "t", repr(name))
        ax.plot(t, v, lw=1.4, label=str(name))
    if series:
        ax.legend(loc="best", frameon=False, ncol=1 if len(series) <= 4 else 2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def metrics_panel(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    title: str = "",
    time_key: str = "t",
    skip: Sequence[str] = ("frame",),
    log_keys: Sequence[str] = (),
) -> Path:
    """Every other column of ``rows`` (one dict per recorded frame) against column ``time_key``, one small
    axis each, two per row; the columns in ``skip`` are left out, those in ``log_keys`` drawn on a log
    scale when all their finite values are positive. Non-finite values are skipped."""
    keys = [k for k in rows[0] if k != time_key and k not in skip]
    t = np.array([r[time_key] for r in rows], float)
    cols = 2 if len(keys) > 1 else 1
    nrow = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrow, cols, figsize=(5.0 * cols, 2.4 * nrow), squeeze=False)
    for ax, k in zip(axes.ravel(), keys):
        v = np.array([r[k] for r in rows], float)
        ok = np.isfinite(v)
        ax.plot(t[ok], v[ok], lw=1.4)
        if k in log_keys and np.all(v[ok] > 0) and ok.any():
            ax.set_yscale("log")
        ax.set_title(k, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(keys) :]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel(time_key)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def learning_curve_plot(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    title: str,
    evals: Sequence[tuple[int, Mapping[str, float]]] = (),
) -> Path:
    """A reinforcement-learning curve: mean episode return and mean episode length against timesteps (two
    panels), plus the reward per step (dashed, right axis, 0 to 1).

    rows: one dict per iteration with ``timesteps``, ``ep_return_mean``, ``ep_len_mean`` (steps at 30 Hz)
    and ``r_i_per_step_mean`` (empty or NaN before the first episode ends); ``evals``: (timesteps,
    evaluation) pairs whose ``return_mean`` and ``len_mean`` are drawn as black diamonds (the
    deterministic policy)."""
    t = column(rows, "timesteps")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7.0, 6.0), sharex=True)
    for ax, key, label, colour in (
        (a1, "ep_return_mean", "mean episode return (Σ r; Σ r_I without a goal)", "C0"),
        (a2, "ep_len_mean", "mean episode length (steps, 30 Hz)", "C1"),
    ):
        y = column(rows, key)
        ok = np.isfinite(y) & np.isfinite(t)
        ax.plot(
            t[ok],
            y[ok],
            color=colour,
            lw=1.8,
            marker="o" if ok.sum() == 1 else None,
            label="training episodes (stochastic)",
        )
        if evals:
            ek = "return_mean" if key == "ep_return_mean" else "len_mean"
            ax.plot([n for n, _ in evals], [e[ek] for _, e in evals], "kD", ms=6, label="evaluation (deterministic)")
            ax.legend(loc="upper left", frameon=False, fontsize=8)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
    per_step = column(rows, "r_i_per_step_mean")
    ok = np.isfinite(per_step) & np.isfinite(t)
    if ok.any():
        ax3 = a1.twinx()
        ax3.plot(t[ok], per_step[ok], color="C2", lw=1.0, ls="--")
        ax3.set_ylabel("mean r_I per step (dashed)", color="C2", fontsize=9)
        ax3.set_ylim(0.0, 1.0)
    a2.set_xlabel("timesteps")
    a1.set_title(title)
    return save_figure(fig, path)


def _label_runs(labels: np.ndarray) -> tuple[list[tuple[str, int, int]], dict[str, str]]:
    """Maximal runs ``(label, first, end)`` of equal entries of ``labels (T,)`` and a colour per label
    (matplotlib's cycle, in order of first appearance)."""
    labels = np.asarray(labels).astype(str)
    edges = [0, *(np.flatnonzero(labels[1:] != labels[:-1]) + 1).tolist(), len(labels)]
    runs = [(str(labels[a]), a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    colours: dict[str, str] = {}
    for name, _, _ in runs:
        colours.setdefault(name, f"C{len(colours) % 10}")
    return runs, colours


def _legend_outside(source, target) -> None:
    """The legend of ``source``'s artists, each name once, to the right of axes ``target``."""
    handles, names = source.get_legend_handles_labels()
    seen = dict(zip(names, handles))
    target.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)


def commanded_velocity_plot(
    t: np.ndarray,
    velocity: np.ndarray,
    commanded: np.ndarray,
    labels: np.ndarray,
    path: str | os.PathLike,
    *,
    title: str = "Commanded and actual velocity",
    unit: str = "m",
) -> Path:
    """Velocity ``(T, 3)`` (solid) and the commanded velocity ``(T, 3)`` (dashed) against ``t (T,)`` s, one
    panel per component (x, y, z, ``unit``/s), the time of each command (``labels (T,)``, its name)
    shaded in its colour."""
    t, velocity, commanded = np.asarray(t, float), np.asarray(velocity, float), np.asarray(commanded, float)
    for arr, name in ((velocity, "velocity"), (commanded, "commanded"), (np.asarray(labels), "labels")):
        _check_same_len(t, arr, "t", name)
    runs, colours = _label_runs(labels)
    fig, axes = plt.subplots(3, 1, figsize=(7.0, 6.0), sharex=True)
    dt = float(t[1] - t[0]) if len(t) > 1 else 0.0
    for k, ax in enumerate(axes):
        for name, a, b in runs:
            ax.axvspan(t[a] - dt, t[b - 1], color=colours[name], alpha=0.12, lw=0, label=name if k == 0 else None)
        ax.plot(t, velocity[:, k], color="k", lw=1.0, label="actual" if k == 0 else None)
        ax.plot(t, commanded[:, k], color="C3", lw=1.6, ls="--", label="commanded" if k == 0 else None)
        ax.set_ylabel(f"v{'xyz'[k]} ({unit}/s)")
        ax.grid(alpha=0.3)
    _legend_outside(axes[0], axes[0])
    axes[-1].set_xlabel("time (s)")
    axes[0].set_title(title)
    return save_figure(fig, path)


def path_views_plot(
    position: np.ndarray,
    labels: np.ndarray,
    path: str | os.PathLike,
    *,
    body_length: float | None = None,
    title: str = "Path",
    unit: str = "m",
) -> Path:
    """The path ``position (T, 3)`` seen from above (x, y) and from the side (height against whichever
    of x and y spans more), each stretch coloured by its ``labels (T,)`` entry (e.g. the command),
    start and end marked. With ``body_length`` the axes are in body lengths."""
    p = np.asarray(position, float)
    _check_same_len(p, np.asarray(labels), "position", "labels")
    if body_length is not None and body_length > 0:
        p, unit = p / body_length, "body lengths"
    runs, colours = _label_runs(labels)
    side = 0 if np.ptp(p[:, 0]) >= np.ptp(p[:, 1]) else 1
    fig, (top, ax_side) = plt.subplots(1, 2, figsize=(10.0, 4.8))
    for ax, (i, j), name in ((top, (0, 1), "top view"), (ax_side, (side, 2), "side view")):
        for label, a, b in runs:
            seg = p[max(a - 1, 0) : b]  # joined to the stretch before
            ax.plot(seg[:, i], seg[:, j], color=colours[label], lw=1.8, label=label)
        ax.plot(p[0, i], p[0, j], "o", color="k", ms=6, label="start")
        ax.plot(p[-1, i], p[-1, j], "s", color="k", ms=6, label="end")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(f"{'xyz'[i]} ({unit})")
        ax.set_ylabel(f"{'xyz'[j]} ({unit})")
        ax.set_title(f"{title}: {name}")
        ax.grid(alpha=0.3)
    _legend_outside(top, ax_side)
    return save_figure(fig, path)


def _check_same_len(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise VizError(f"{na} and {nb} must have the same length, got {a.shape[0]} and {b.shape[0]}")
