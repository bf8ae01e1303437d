"""Cloth videos: a side-by-side GIF of one held-out rollout (reference | surrogate | error colour map),
and the live surrogate of ``animat surrogate play`` shaded with its predicted normals.

Each panel is the cloth seen from the front (x right, z up; the cape in its torso's frame), its
triangles shaded by depth y (matplotlib ``tripcolor``, Agg backend, one reused figure); the last
panel shades the surrogate's mesh by its per-vertex distance to the reference (cm). The scene's
collision proxies are drawn as circles (spheres; capsules as a row of circles), the flag's wind as
an arrow (its x, y components; y drawn upwards). Written atomically by :func:`animat.viz.animate.write_gif`.

:func:`play_video` draws one surrogate cloth from the front (x-z) and the side (y-z), each vertex
lit by its predicted normal (two-sided Lambert, ``AMBIENT + (1 - AMBIENT) |n . l|``) with Gouraud
interpolation, the proxies and a caption per frame; written by :func:`animat.viz.animate.write_images`
(MP4 with imageio-ffmpeg, else GIF). The axes are kept and only the cloth and proxy artists are
replaced per frame.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from animat.viz.animate import write_gif, write_images  # noqa: E402

AMBIENT = 0.25
FRONT_LIGHT = np.array(
    [-0.3, -1.0, 0.5]
)  # light direction of the front (x-z) view (two-sided lighting: its sign does not matter)
_VIEWS = ((0, 2, FRONT_LIGHT), (1, 2, np.array([1.0, -0.3, 0.5])))  # (horizontal, vertical axis, light)


def draw_proxies(ax, scene, y: np.ndarray, wind_at: tuple[float, float], axes: tuple[int, int] = (0, 2)) -> list:
    """Draw the scene's proxies for external state y on ``ax`` seen along the remaining axis (spheres
    as circles, darker in front; capsules as rows of circles) and, for the flag, the wind's (x, y) as
    an arrow from ``wind_at``; returns the artists."""
    h, v = axes
    depth = 3 - h - v
    spheres, capsules = scene.proxies(y)
    artists = [
        ax.add_patch(plt.Circle((c[h], c[v]), c[3], color="C3", alpha=0.6 if c[depth] < 0 else 0.25)) for c in spheres
    ]
    for c in capsules:
        for s in np.linspace(0.0, 1.0, 6):
            p = c[:3] + s * (c[3:6] - c[:3])
            artists.append(ax.add_patch(plt.Circle((p[h], p[v]), c[6], color="C0", alpha=0.15)))
    if scene.name == "flag":
        artists.append(
            ax.annotate(
                "",
                xy=(wind_at[0] + 0.1 * y[h], wind_at[1] + 0.1 * y[v]),
                xytext=wind_at,  # the view's wind components, one scale
                arrowprops={"arrowstyle": "->", "color": "C3"},
            )
        )
    return artists


def lit(normals: np.ndarray, light: np.ndarray) -> np.ndarray:
    """Unit normals (V, 3) -> brightness (V,) in [AMBIENT, 1] under a directional light (two-sided)."""
    return AMBIENT + (1 - AMBIENT) * np.abs(normals @ (light / np.linalg.norm(light)))


def _extent(points: np.ndarray, Y: np.ndarray, scene) -> tuple[np.ndarray, np.ndarray]:
    """Bounding box (lo, hi) (3,) m of the finite cloth points (P, 3) and of every proxy over Y."""
    boxes = [points.min(0), points.max(0)] if len(points) else []
    for y in Y:
        spheres, capsules = scene.proxies(y)
        for c in spheres:
            boxes += [c[:3] - c[3], c[:3] + c[3]]
        for c in capsules:
            boxes += [np.minimum(c[:3], c[3:6]) - c[6], np.maximum(c[:3], c[3:6]) + c[6]]
    boxes = np.array(boxes) if boxes else np.zeros((1, 3))
    return boxes.min(0), boxes.max(0)


def play_video(
    X: np.ndarray,
    N: np.ndarray,
    Y: np.ndarray,
    triangles: np.ndarray,
    path: str | os.PathLike,
    *,
    scene,
    captions: list[str],
    fps: float = 30.0,
    dpi: int = 70,
    on_frame: Callable[[int], None] | None = None,
) -> Path:
    """X, N (T, V, 3) positions m and unit normals; Y (T, y) external states; triangles (F, 3);
    captions (T,); ``on_frame(t)`` after each frame is drawn. Non-finite frames are drawn without the cloth."""
    from matplotlib.tri import Triangulation

    finite = np.isfinite(X).all(axis=(1, 2))
    lo, hi = _extent(X[finite].reshape(-1, 3), Y, scene)
    pad = 0.2 * float(max(hi - lo)) + 0.05
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.9), dpi=dpi)
    for ax, (h, v, _) in zip(axes, _VIEWS):
        ax.set_xlim(lo[h] - pad, hi[h] + pad)
        ax.set_ylim(lo[v] - pad, hi[v] + pad)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{'xyz'[h]}-{'xyz'[v]} ({'front' if h == 0 else 'side'})", fontsize=9)
    title = fig.suptitle("", fontsize=10, family="monospace")
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.93))
    images, drawn = [], []
    for t in range(len(X)):
        for artist in drawn:
            artist.remove()
        drawn = []
        for ax, (h, v, light) in zip(axes, _VIEWS):
            if finite[t]:
                tri = Triangulation(X[t, :, h], X[t, :, v], triangles)
                drawn.append(ax.tripcolor(tri, lit(N[t], light), shading="gouraud", cmap="bone", vmin=-0.2, vmax=1.3))
            drawn += draw_proxies(ax, scene, Y[t], (lo[h], hi[v] + 0.5 * pad), (h, v))
        title.set_text(captions[t] + ("" if finite[t] else "  NON-FINITE"))
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
        if on_frame is not None:
            on_frame(t)
    plt.close(fig)
    return write_images(images, path, fps=fps)


def side_by_side_gif(
    panels: Mapping[str, np.ndarray],
    triangles: np.ndarray,
    Y: np.ndarray,
    path: str | os.PathLike,
    *,
    scene,
    error: np.ndarray | None = None,
    fps: float = 30.0,
    every: int = 2,
    dpi: int = 100,
) -> Path:
    """panels: name -> (T, V, 3) positions m; triangles (F, 3); Y (T, y) the scene's external
    state; scene: a scene object (its ``proxies``); error (T, V) m adds the error panel, drawn on
    the last panel's mesh."""
    from matplotlib.tri import Triangulation

    names = list(panels) + (["error (cm)"] if error is not None else [])
    allpos = np.concatenate([np.asarray(p)[np.isfinite(p).all(axis=(1, 2))] for p in panels.values()])
    lo, hi = allpos.min(axis=(0, 1)), allpos.max(axis=(0, 1))
    pad = 0.15 * float(max(hi[0] - lo[0], hi[2] - lo[2]))
    err_max = float(np.nanmax(error)) * 100 if error is not None else 1.0
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.4), dpi=dpi)
    axes = np.atleast_1d(axes)
    images = []
    T = min(len(p) for p in panels.values())
    last = list(panels)[-1]
    for t in range(0, T, every):
        for ax, name in zip(axes, names):
            ax.clear()
            x = np.asarray(panels.get(name, panels[last])[t])
            if np.isfinite(x).all():
                tri = Triangulation(x[:, 0], x[:, 2], triangles)
                if name in panels:
                    ax.tripcolor(tri, x[:, 1], shading="gouraud", cmap="viridis", vmin=lo[1], vmax=hi[1])
                else:
                    ax.tripcolor(
                        tri, 100 * error[t], shading="gouraud", cmap="magma", vmin=0.0, vmax=max(err_max, 1e-6)
                    )
            draw_proxies(ax, scene, Y[t], (lo[0], hi[2] + pad * 0.5))
            ax.set_xlim(lo[0] - pad, hi[0] + pad)
            ax.set_ylim(lo[2] - pad, hi[2] + pad)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            title = f"{name}  {t / scene.fps:.2f} s" if name in panels else f"error 0-{err_max:.1f} cm"
            ax.set_title(title, fontsize=9)
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    return write_gif(images, path, fps=fps)


def garment_images(scene, X: np.ndarray, Y: np.ndarray, path: np.ndarray, captions: list[str]) -> list | None:
    """Images (480 x 360) of a garment scene (:mod:`animat.surrogate.garment`) rendered by MuJoCo offscreen: the
    character and its cloth at frames X (F, V, 3) (root frame, m), Y (F, 105), with the character's path rows
    ``path`` (F, 77) of those frames, the camera following the pelvis, one caption a frame; None where no offscreen
    GL context can be made."""
    from animat.viz.mujoco_render import View, render_frames

    m = scene.model()
    qpos = scene.model_qpos(m, X, Y, path)
    view = View(distance=3.0, azimuth=200.0, elevation=-10.0, lookat_z=0.9)
    got = render_frames(m, qpos, track_body=1, view=view, captions=captions, width=480, height=360)
    return None if got is None else got[1]


def garment_video(
    scene,
    X: np.ndarray | Mapping[str, np.ndarray],
    Y: np.ndarray,
    path: np.ndarray,
    out: str | os.PathLike,
    *,
    fps: float = 30.0,
    sample_fps: float | None = None,
) -> list[Path] | None:
    """The character and its garment at recorded frames X (T, V, 3) root frame m, Y (T, 105), with the external path
    rows ``path`` (T, 77) of those frames (:func:`garment_images`), every ``sample_fps / fps``-th frame
    (``sample_fps``: the frames' rate, default the scene's); X a mapping name -> (T, V, 3): one panel per garment on
    its own character, side by side, each captioned with its name. Written as the GIF ``out`` and an MP4 beside it
    (:func:`animat.viz.animate.write_animation`); None where no offscreen GL context can be made (nothing written)."""
    from animat.viz.animate import frame_stride, write_animation

    panels = X if isinstance(X, Mapping) else {scene.name: X}
    rate = float(sample_fps or scene.fps)
    every, shown_fps = frame_stride(1.0 / rate, fps)
    columns = []
    for name, frames in panels.items():
        captions = [f"{name}  t = {t / rate:5.2f} s" for t in range(0, len(frames), every)]
        images = garment_images(scene, frames[::every], Y[::every], path[::every], captions)
        if images is None:
            return None
        columns.append(images)
    return write_animation([np.concatenate(row, axis=1) for row in zip(*columns)], out, fps=shown_fps)
