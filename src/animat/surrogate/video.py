"""Side-by-side GIF of one held-out rollout: reference | surrogate | alpha/beta only.

Each panel is the cloth seen from the front (x right, z up), its triangles shaded by depth y
(matplotlib ``tripcolor``, Agg backend, one reused figure); the sheet's sphere is drawn as a
circle, the flag's wind as an arrow (its x, y components; y drawn upwards). Written atomically with imageio's GIF writer.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from animat.runs import atomic_write_bytes  # noqa: E402


def side_by_side_gif(
    panels: Mapping[str, np.ndarray],
    triangles: np.ndarray,
    Y: np.ndarray,
    path: str | os.PathLike,
    *,
    scene: str = "sheet",
    ball_radius: float = 0.1,
    fps: float = 30.0,
    every: int = 2,
    dpi: int = 60,
) -> Path:
    """panels: name -> (T, V, 3) positions m; triangles (F, 3); Y (T, 3) sphere centre or wind."""
    import imageio.v3 as iio
    from matplotlib.tri import Triangulation

    names = list(panels)
    allpos = np.concatenate([np.asarray(p)[np.isfinite(p).all(axis=(1, 2))] for p in panels.values()])
    lo, hi = allpos.min(axis=(0, 1)), allpos.max(axis=(0, 1))
    pad = 0.15 * float(max(hi[0] - lo[0], hi[2] - lo[2]))
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.4))
    axes = np.atleast_1d(axes)
    images = []
    T = min(len(p) for p in panels.values())
    for t in range(0, T, every):
        for ax, name in zip(axes, names):
            ax.clear()
            x = np.asarray(panels[name][t])
            if np.isfinite(x).all():
                tri = Triangulation(x[:, 0], x[:, 2], triangles)
                ax.tripcolor(tri, x[:, 1], shading="gouraud", cmap="viridis", vmin=lo[1], vmax=hi[1])
            if scene == "sheet":
                ax.add_patch(plt.Circle((Y[t, 0], Y[t, 2]), ball_radius, color="C3", alpha=0.6 if Y[t, 1] < 0 else 0.25))
            else:
                ax.annotate("", xy=(lo[0] + 0.1 * Y[t, 0], hi[2] + pad * 0.5 + 0.05 * Y[t, 1]), xytext=(lo[0], hi[2] + pad * 0.5),
                            arrowprops={"arrowstyle": "->", "color": "C3"})
            ax.set_xlim(lo[0] - pad, hi[0] + pad)
            ax.set_ylim(lo[2] - pad, hi[2] + pad)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{name}  {t / 60:.2f} s", fontsize=9)
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    buf = io.BytesIO()
    iio.imwrite(buf, images, extension=".gif", duration=1000.0 * every / 60.0 if fps is None else 1000.0 / fps, loop=0)
    return atomic_write_bytes(path, buf.getvalue())
