"""Side-by-side GIF of one held-out rollout: reference | surrogate | error colour map.

Each panel is the cloth seen from the front (x right, z up; the cape in its torso's frame), its
triangles shaded by depth y (matplotlib ``tripcolor``, Agg backend, one reused figure); the last
panel shades the surrogate's mesh by its per-vertex distance to the reference (cm). The scene's
collision proxies are drawn as circles (spheres; capsules as a row of circles), the flag's wind as
an arrow (its x, y components; y drawn upwards). Written atomically by :func:`animat.viz.animate.write_gif`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from animat.viz.animate import write_gif  # noqa: E402


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
    dpi: int = 60,
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
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.4))
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
                    ax.tripcolor(tri, 100 * error[t], shading="gouraud", cmap="magma", vmin=0.0, vmax=max(err_max, 1e-6))
            spheres, capsules = scene.proxies(Y[t])
            for c in spheres:
                ax.add_patch(plt.Circle((c[0], c[2]), c[3], color="C3", alpha=0.6 if c[1] < 0 else 0.25))
            for c in capsules:
                for s in np.linspace(0.0, 1.0, 6):
                    p = c[:3] + s * (c[3:6] - c[:3])
                    ax.add_patch(plt.Circle((p[0], p[2]), c[6], color="C0", alpha=0.15))
            if scene.name == "flag":
                ax.annotate("", xy=(lo[0] + 0.1 * Y[t, 0], hi[2] + pad * 0.5 + 0.05 * Y[t, 1]), xytext=(lo[0], hi[2] + pad * 0.5),
                            arrowprops={"arrowstyle": "->", "color": "C3"})
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
