"""3D animations of rigid bodies made of polygons, written as GIF (or MP4 with imageio-ffmpeg).

A body is drawn from a list of polygons per frame; a polygon is a dict
``{"vertices": (k, 3) array m, "color": str, "alpha": float}`` -- e.g. the 6 faces of a box
(see :func:`box_faces`) and 2 wing triangles. Physics-agnostic: callers turn their states into
polygons. Rendering uses matplotlib's Agg backend on one reused figure (no display needed); each
frame is grabbed from the canvas buffer and the finished file is written atomically.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never need a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402

from animat.console import console
from animat.runs import atomic_write_bytes  # noqa: E402
from animat.viz.plots import VizError  # noqa: E402

__all__ = [
    "animate_body",
    "box_faces",
    "check_animation_path",
    "ffmpeg_available",
    "write_animation",
    "write_gif",
    "write_images",
]

Polygon = Mapping[str, Any]

# Quads of a cuboid whose corners are ordered as itertools.product((-1, 1), repeat=3) over
# (x, y, z), i.e. index = 4*ix + 2*iy + iz. Each quad is listed in cyclic order around the face.
_BOX_FACES = (
    (0, 1, 3, 2),  # x-
    (4, 6, 7, 5),  # x+
    (0, 4, 5, 1),  # y-
    (2, 3, 7, 6),  # y+
    (0, 2, 6, 4),  # z-
    (1, 5, 7, 3),  # z+
)

_LIGHT = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
_FIG_PX = (544, 448)  # at dpi=80: 6.8 x 5.6 in; scaled with dpi, rounded to multiples of 16


def box_faces(corners: np.ndarray) -> list[np.ndarray]:
    """The 6 quad faces ((4, 3) arrays, vertices in cyclic order) of a cuboid.

    corners: (8, 3) m, ordered as ``itertools.product((-, +), repeat=3)`` over x, y, z of the
    body frame, i.e. index = 4*ix + 2*iy + iz (rotation and translation already applied).
    """
    corners = np.asarray(corners, dtype=float)
    if corners.shape != (8, 3):
        raise VizError(f"box_faces expects corners of shape (8, 3), got {corners.shape}")
    return [corners[list(face)] for face in _BOX_FACES]


def ffmpeg_available() -> bool:
    """Whether an MP4 writer (the ``imageio-ffmpeg`` package) is installed."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def animate_body(
    frames: Sequence[Sequence[Polygon]],
    path: str | os.PathLike,
    *,
    fps: float = 30,
    trail: np.ndarray | None = None,
    times: Sequence[float] | np.ndarray | None = None,
    captions: Sequence[str] | None = None,
    title: str | None = None,
    elev: float = 20,
    azim: float = -60,
    view_size: float | None = None,
    dpi: int = 80,
    ground: float | None = None,
    unit: str = "m",
    mp4: bool = False,
) -> Path:
    """Render a polygon body over time to ``path`` (``.gif``, or ``.mp4`` if imageio-ffmpeg is
    installed) and return the path; with ``mp4``, a GIF ``path`` gets the MP4 beside it
    (:func:`write_animation`).

    frames: T lists of polygons ``{"vertices": (k, 3) m, "color": str, "alpha": float}``
        (``color`` defaults to "C0", ``alpha`` to 1). The number of polygons may vary.
    trail: (T, 3) m centre positions; drawn as a line up to the current frame, plus its
        projection on the floor of the view (or on ``ground`` when that height is in view).
    times: (T,) s; each frame is titled "t = 1.23 s" (else "frame i / T").
    captions: (T,) strings shown after that title (e.g. the active command).
    view_size: half-width (m) of the cubic view box, which follows the body (centred on
        ``trail[i]``, else on the mean vertex of frame i). Default: twice the body's largest
        bounding radius about that centre over all frames, so the view is 2x the body wide.
    elev, azim: camera angles in degrees (matplotlib's convention).
    dpi: resolution; the default 80 gives 544x448 pixels.
    unit: length unit of the axis labels (default m; the fly's paper preset uses "u").

    Faces are shaded by their angle to a fixed light, so rotations read clearly. The GIF loops
    forever. Raises :class:`VizError` (a ValueError) on an unsupported suffix or inconsistent
    input, and on ``.mp4`` without imageio-ffmpeg.
    """
    path = check_animation_path(path)
    if fps <= 0:
        raise VizError(f"fps must be positive, got {fps}")
    frames = list(frames)
    n = len(frames)
    if n == 0:
        raise VizError("animate_body needs at least one frame, got none")
    verts = [[_vertices(p, i) for p in polys] for i, polys in enumerate(frames)]
    trail, times = _per_frame(n, trail, times, captions)
    centres, half = _view_box(verts, trail, view_size)
    images = _render(verts, frames, centres, trail, times, captions, title, elev, azim, half, dpi, ground, unit)
    return write_animation(images, path, fps=fps)[0] if mp4 else write_images(images, path, fps=fps)


def _per_frame(n: int, trail, times, captions) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(trail (n, 3), times (n,))`` as float arrays (None stays None); VizError where ``trail``, ``times`` or
    ``captions`` has not one entry per frame of ``n``."""
    if trail is not None:
        trail = np.asarray(trail, dtype=float)
        if trail.shape != (n, 3):
            raise VizError(f"trail must have shape ({n}, 3) to match the frames, got {trail.shape}")
    if times is not None:
        times = np.asarray(times, dtype=float).ravel()
        if times.shape != (n,):
            raise VizError(f"times must have shape ({n},) to match the frames, got {times.shape}")
    if captions is not None and len(captions) != n:
        raise VizError(f"captions must have one entry per frame ({n}), got {len(captions)}")
    return trail, times


def _view_box(verts: list[list[np.ndarray]], trail: np.ndarray | None, view_size: float | None):
    """``(centres (T, 3) m, half-width m)`` of the view that follows the body: centred on ``trail``, else on each
    frame's mean vertex; ``view_size``, else twice the body's largest bounding radius about its centre (1 for a
    body of no size). VizError for a ``view_size`` that is not a positive number."""
    if trail is not None:
        centres = trail
    else:
        centres = np.array([np.concatenate(v).mean(axis=0) if v else np.zeros(3) for v in verts], dtype=float)
    if view_size is None:
        # bounding radius of the body about its centre, largest over the frames
        radius = max(
            (np.linalg.norm(np.concatenate(v) - c, axis=1).max() for v, c in zip(verts, centres) if v),
            default=0.0,
        )
        view_size = 2.0 * radius if radius > 0 else 1.0
    half = float(view_size)
    if not np.isfinite(half) or half <= 0:
        raise VizError(f"view_size must be a positive number of metres, got {view_size}")
    return centres, half


def _vertices(poly: Polygon, i: int) -> np.ndarray:
    try:
        v = np.asarray(poly["vertices"], dtype=float)
    except (KeyError, TypeError) as exc:
        raise VizError(f"frame {i}: each polygon must be a dict with 'vertices', got {poly!r}") from exc
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 3:
        raise VizError(f"frame {i}: polygon vertices must have shape (k>=3, 3), got {v.shape}")
    return v


def _shade(v: np.ndarray, color: str, alpha: float) -> tuple[float, float, float, float]:
    """Face colour dimmed by the angle between the polygon's normal and the light (two-sided)."""
    r, g, b, _ = to_rgba(color)
    n = np.cross(v[1] - v[0], v[2] - v[0])
    norm = np.linalg.norm(n)
    k = 0.55 + 0.45 * abs(float(n @ _LIGHT) / norm) if norm > 0 else 1.0
    return (r * k, g * k, b * k, float(alpha))


def _render(verts, frames, centres, trail, times, captions, title, elev, azim, half, dpi, ground, unit):
    """Draw every frame on one reused figure; returns a list of (H, W, 3) uint8 images."""
    w_px, h_px = (int(16 * round(s * dpi / 80 / 16)) or 16 for s in _FIG_PX)
    fig = plt.figure(figsize=(w_px / dpi, h_px / dpi), dpi=dpi)
    try:
        ax = fig.add_subplot(projection="3d", computed_zorder=False)
        fig.subplots_adjust(left=0.0, right=0.95, bottom=0.02, top=0.95)
        ax.view_init(elev=elev, azim=azim)
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel(f"x ({unit})", labelpad=-2)
        ax.set_ylabel(f"y ({unit})", labelpad=-2)
        ax.set_zlabel(f"z ({unit})", labelpad=-2)
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_major_locator(MaxNLocator(4))
        ax.tick_params(labelsize=7, pad=0)
        if title:
            fig.suptitle(title, fontsize=11, y=0.99)
        label = fig.text(0.5, 0.93, "", ha="center", va="top", fontsize=10, family="monospace")

        clip = {"axlim_clip": True} if _supports_axlim_clip() else {}
        shadow = Poly3DCollection([], facecolors=(0, 0, 0, 0.18), edgecolors="none", zorder=1)
        ax.add_collection3d(shadow)
        if trail is not None:
            (ground_line,) = ax.plot([], [], [], color="0.55", lw=1.2, ls="--", zorder=2, **clip)
            (trail_line,) = ax.plot([], [], [], color="C3", lw=1.5, zorder=3, **clip)
        body = Poly3DCollection([], linewidths=0.5, zorder=4)
        ax.add_collection3d(body)

        images = []
        for i, (vs, polys) in enumerate(zip(verts, frames)):
            c = centres[i]
            ax.set_xlim(c[0] - half, c[0] + half)
            ax.set_ylim(c[1] - half, c[1] + half)
            ax.set_zlim(c[2] - half, c[2] + half)
            floor = c[2] - half
            if ground is not None and c[2] - half <= ground <= c[2] + half:
                floor = float(ground)

            colours = [_shade(v, p.get("color", "C0"), p.get("alpha", 1.0)) for v, p in zip(vs, polys)]
            body.set_verts(vs)
            body.set_facecolor(colours)
            body.set_edgecolor([(0.1 * r, 0.1 * g, 0.1 * b, min(1.0, a + 0.2)) for r, g, b, a in colours])
            shadow.set_verts([np.column_stack([v[:, :2], np.full(len(v), floor)]) for v in vs])

            if trail is not None:
                seg = trail[: i + 1]
                trail_line.set_data_3d(seg[:, 0], seg[:, 1], seg[:, 2])
                ground_line.set_data_3d(seg[:, 0], seg[:, 1], np.full(len(seg), floor))
            label.set_text(
                (f"t = {times[i]:.2f} s" if times is not None else f"frame {i + 1} / {len(frames)}")
                + (f"   {captions[i]}" if captions is not None else "")
            )

            fig.canvas.draw()
            images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
        return images
    finally:
        plt.close(fig)


def stick_figure_gif(
    t: np.ndarray,
    joints: np.ndarray,
    bones: Sequence[tuple[int, int]],
    sticks: np.ndarray,
    stick_colors: Sequence[str],
    track: np.ndarray,
    path: str | os.PathLike,
    *,
    frames: Sequence[int],
    fps: float,
    title: str = "",
    half: float = 1.2,
    height: float = 2.4,
    mp4: bool = False,
) -> Path:
    """A 3D stick figure GIF (with ``mp4``, the MP4 beside it: :func:`write_animation`): at each of the sample
    indices ``frames``, lines between the ``joints (T, J, 3)`` m that ``bones`` pairs, the segments
    ``sticks (T, S, 2, 3)`` m in ``stick_colors``, and the path of ``track (T, 3)`` m so far on the floor; the
    view (``half`` m either side, 0 to ``height`` m) follows ``track``; each frame titled with ``title``, the
    time ``t (T,)`` s and ``track``'s x. Played at ``fps``."""
    images = []
    fig = plt.figure(figsize=(5, 5), dpi=70)
    ax = fig.add_subplot(projection="3d")
    for i in frames:
        ax.cla()
        c = track[i]
        for a, b in bones:
            p, q = joints[i, a], joints[i, b]
            ax.plot([p[0], q[0]], [p[1], q[1]], [p[2], q[2]], color="C0", lw=3)
        for (p, q), colour in zip(sticks[i], stick_colors):
            ax.plot([p[0], q[0]], [p[1], q[1]], [p[2], q[2]], color=colour, lw=2)
        ax.plot(track[: i + 1, 0], track[: i + 1, 1], np.zeros(i + 1), color="C2", lw=1)
        ax.set_xlim(c[0] - half, c[0] + half)
        ax.set_ylim(c[1] - half, c[1] + half)
        ax.set_zlim(0, height)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_title(f"{title}  t = {t[i]:.2f} s  x = {c[0]:.2f} m", fontsize=9)
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    return write_animation(images, path, fps=fps)[0] if mp4 else write_gif(images, path, fps=fps)


def _supports_axlim_clip() -> bool:
    """matplotlib >= 3.10 can clip 3D lines to the axes limits (the trail leaves the view)."""
    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return (major, minor) >= (3, 10)


def check_animation_path(path: str | os.PathLike) -> Path:
    """``path`` as a Path if it names a writable animation (.gif, or .mp4 with imageio-ffmpeg); VizError otherwise."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise VizError(f"animation path must end in .gif or .mp4, got {str(path)!r}")
    if suffix == ".mp4" and not ffmpeg_available():
        raise VizError(
            f"writing {path.name!r} needs an ffmpeg writer: install imageio-ffmpeg "
            "(pip install imageio-ffmpeg) or use a .gif path"
        )
    return path


def frame_stride(sample_dt: float, fps: float) -> tuple[int, float]:
    """``(every, real_fps)``: draw every ``every``-th sample (``sample_dt`` s apart) for about ``fps`` frames
    per second, and the rate that plays those frames in real time (``every`` is rounded to whole samples)."""
    every = max(1, int(round(1.0 / (fps * sample_dt))))
    return every, 1.0 / (every * sample_dt)


def write_images(images: list[np.ndarray], path: str | os.PathLike, *, fps: float) -> Path:
    """Write ``images`` (each (H, W, 3) uint8) as a GIF or an MP4 (by ``path``'s suffix) at ``fps``, atomically."""
    if Path(path).suffix.lower() == ".gif":
        return write_gif(images, path, fps=fps)
    return atomic_write_bytes(path, _mp4_bytes(images, fps))


def write_animation(images: list[np.ndarray], path: str | os.PathLike, *, fps: float) -> list[Path]:
    """Write ``images`` (each (H, W, 3) uint8) as the GIF ``path`` and, where imageio-ffmpeg is installed, as an
    MP4 beside it (``path`` with suffix ``.mp4``; else a note on the console); the paths written, the GIF first."""

    if Path(path).suffix.lower() != ".gif":
        raise VizError(f"write_animation writes a .gif and the .mp4 beside it; got {str(path)!r}")
    mp4 = Path(path).with_suffix(".mp4")
    written = [write_gif(images, path, fps=fps)]
    if ffmpeg_available():
        written.append(atomic_write_bytes(mp4, _mp4_bytes(images, fps)))
    else:
        console.print(f"no {mp4.name}: writing MP4 needs imageio-ffmpeg (pip install imageio-ffmpeg)", markup=False)
    return written


def write_gif(images: list[np.ndarray], path: str | os.PathLike, *, fps: float) -> Path:
    """Write ``images`` (each (H, W, 3) uint8) as a looping GIF at ``fps`` frames per second, atomically."""
    return atomic_write_bytes(path, _gif_bytes(images, fps))


def _gif_bytes(images: list[np.ndarray], fps: float) -> bytes:
    import imageio.v3 as iio

    buf = io.BytesIO()
    # Pillow stores durations in 10 ms units; loop=0 repeats forever.
    iio.imwrite(buf, images, extension=".gif", duration=1000.0 / fps, loop=0)
    return buf.getvalue()


def _mp4_bytes(images: list[np.ndarray], fps: float) -> bytes:
    import imageio.v3 as iio

    # The ffmpeg plugin needs a real file; write it privately, then hand the bytes back. It starts ffmpeg in a
    # subprocess, which JAX's fork hook warns of; the child runs ffmpeg at once, no JAX code.
    with tempfile.TemporaryDirectory(prefix="animat-mp4-") as tmp, warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        out = Path(tmp) / "anim.mp4"
        # macro_block_size 2: libx264 wants even sides; any other size is kept as it is
        iio.imwrite(out, images, plugin="FFMPEG", fps=fps, codec="libx264", quality=7, macro_block_size=2)
        return out.read_bytes()
