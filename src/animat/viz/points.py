"""Animations of point clouds (agents) in 2D or 3D: trails, neighbour links, obstacles; GIF or MP4.

Physics-agnostic: ``positions`` (T, N, d) in any length unit. Rendering uses matplotlib's Agg
backend on one reused figure; frames are encoded with the helpers of :mod:`animat.viz.animate` and
the file is written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from animat.viz.animate import check_animation_path, write_images  # noqa: E402
from animat.viz.plots import VizError  # noqa: E402

__all__ = ["animate_points"]


def animate_points(
    positions: np.ndarray,
    path: str | os.PathLike,
    *,
    trails: int = 0,
    links: float | None = None,
    obstacles: Mapping[str, Any] | None = None,
    times: Sequence[float] | np.ndarray | None = None,
    fps: float = 20,
    unit: str = "",
    title: str | None = None,
    follow: bool = False,
    dpi: int = 80,
    max_points: int = 3000,
) -> Path:
    """Render agents over time to ``path`` (.gif, or .mp4 with imageio-ffmpeg); returns the path.

    positions: (T, N, d), d = 2 or 3. trails: how many previous frames each agent's trail spans
    (0: none). links: draw a line between agents closer than this (neighbour links). obstacles:
    ``{"spheres": [{"center": [...], "radius": R}], "walls": [{"point": [...], "normal": [...]}]}``
    (circles and lines in 2D; in 3D sphere centres and radii as scatter markers). times: (T,) for
    the frame labels. follow: the view follows the flock (else fixed to the whole trajectory).
    max_points: agents beyond this are subsampled for drawing (links then among the drawn ones).
    """
    path = check_animation_path(path)
    pos, times = _checked(positions, times, fps)
    n_t, n, dim = pos.shape
    if n > max_points:
        pos = pos[:, np.linspace(0, n - 1, max_points).astype(int)]
    obstacles = obstacles or {}
    finite = pos[np.isfinite(pos).all(axis=2)]
    if finite.size == 0:
        raise VizError("positions are all non-finite; nothing to draw")
    span = finite.min(0), finite.max(0)
    pad = 0.05 * float(np.max(span[1] - span[0])) + 1e-9 + (links or 0.0)
    images = []
    fig = plt.figure(figsize=(6.4, 6.0), dpi=dpi)
    try:
        ax = fig.add_subplot(projection="3d") if dim == 3 else fig.add_subplot()
        for i in range(n_t):
            ax.cla()
            _draw_obstacles(ax, obstacles, dim)
            _draw_agents(ax, pos, i, trails, links, size=10 if n < 500 else 3)
            _set_view(ax, *_view(pos[i], pad, None if follow else span), unit)
            label = f"t = {times[i]:.2f}" if times is not None else f"frame {i + 1} / {n_t}"
            ax.set_title(f"{title}   {label}" if title else label, fontsize=10)
            fig.canvas.draw()
            images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    finally:
        plt.close(fig)
    return write_images(images, path, fps=fps)


def _checked(positions, times, fps: float) -> tuple[np.ndarray, np.ndarray | None]:
    """``(positions (T, N, d) float, times (T,) or None)``; VizError for a wrong shape or a ``fps`` <= 0."""
    pos = np.asarray(positions, dtype=float)
    if pos.ndim != 3 or pos.shape[2] not in (2, 3) or pos.shape[0] == 0:
        raise VizError(f"positions must have shape (T, N, 2|3) with T >= 1, got {pos.shape}")
    if fps <= 0:
        raise VizError(f"fps must be positive, got {fps}")
    if times is not None:
        times = np.asarray(times, float).ravel()
        if times.shape != (pos.shape[0],):
            raise VizError(f"times must have shape ({pos.shape[0]},), got {times.shape}")
    return pos, times


def _view(p: np.ndarray, pad: float, span: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` (d,) corners of the view of one frame's agents ``p`` (N, d): the whole trajectory's ``span``
    padded by ``pad``, or (``span`` None: following the flock) a cube about the finite agents' mean."""
    if span is not None:
        return span[0] - pad, span[1] + pad
    ok = np.isfinite(p).all(1)
    c = p[ok].mean(0) if ok.any() else np.zeros(p.shape[1])
    half = 0.5 * float(np.max(p[ok].max(0) - p[ok].min(0))) + pad if ok.any() else 1.0
    return c - half, c + half


def _draw_agents(ax, pos: np.ndarray, i: int, trails: int, links: float | None, size: float) -> None:
    """Frame ``i`` of ``pos`` (T, N, d): each agent's trail over the ``trails`` frames before it, the links between
    agents closer than ``links``, and the agents as dots of ``size`` points²."""
    p, dim = pos[i], pos.shape[2]
    if trails > 0 and i > 0:
        seg = pos[max(0, i - trails) : i + 1]
        for j in range(seg.shape[1]):
            ax.plot(*seg[:, j].T, color="0.65", lw=0.6)
    if links:
        _draw_links(ax, p, links, dim)
    ax.scatter(*p.T, s=size, c="C0", depthshade=False) if dim == 3 else ax.scatter(*p.T, s=size, c="C0", zorder=3)


def _set_view(ax, lo: np.ndarray, hi: np.ndarray, unit: str) -> None:
    """The axes' limits ``lo``..``hi`` (d,), equal aspect, and x/y labels in ``unit``."""
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if len(lo) == 3:
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect((1, 1, 1))
    else:
        ax.set_aspect("equal", adjustable="box")
    u = f" ({unit})" if unit else ""
    ax.set_xlabel(f"x{u}")
    ax.set_ylabel(f"y{u}")


def _draw_links(ax, p: np.ndarray, r: float, dim: int) -> None:
    from scipy.spatial import cKDTree

    ok = np.isfinite(p).all(1)
    idx = np.flatnonzero(ok)
    if idx.size < 2:
        return
    pairs = cKDTree(p[idx]).query_pairs(r, output_type="ndarray")
    if pairs.size == 0:
        return
    segs = np.stack([p[idx[pairs[:, 0]]], p[idx[pairs[:, 1]]]], axis=1)
    if dim == 2:
        ax.add_collection(LineCollection(segs, colors="C1", linewidths=0.6, alpha=0.7))
    else:
        from mpl_toolkits.mplot3d.art3d import Line3DCollection

        ax.add_collection3d(Line3DCollection(segs, colors="C1", linewidths=0.6, alpha=0.7))


def _draw_obstacles(ax, obstacles: Mapping[str, Any], dim: int) -> None:
    for s in obstacles.get("spheres", []):
        c, rad = np.asarray(s["center"], float), float(s["radius"])
        if dim == 2:
            ax.add_patch(plt.Circle(tuple(c), rad, color="C3", alpha=0.35, zorder=1))
        else:
            u, v = np.mgrid[0 : 2 * np.pi : 16j, 0 : np.pi : 9j]
            ax.plot_wireframe(
                c[0] + rad * np.cos(u) * np.sin(v),
                c[1] + rad * np.sin(u) * np.sin(v),
                c[2] + rad * np.cos(v),
                color="C3",
                lw=0.4,
                alpha=0.5,
            )
    for w in obstacles.get("walls", []):
        pt, nrm = np.asarray(w["point"], float), np.asarray(w["normal"], float)
        if dim == 2:
            ax.axline(tuple(pt), tuple(pt + np.array([-nrm[1], nrm[0]])), color="C3", lw=2, zorder=1)
        else:
            ax.scatter(*pt, marker="s", c="C3", s=30)
