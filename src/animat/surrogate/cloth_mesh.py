"""Triangle meshes of the garments, in the character's standing pose: a rectangle (the cape) and a band around
a vertical axis (the skirt). Vertex ``r * columns + c`` is row ``r`` (0 at the top) and column ``c``; the top row
is the one pinned. Each quad is split into two triangles along the same diagonal."""

from __future__ import annotations

import numpy as np


def _quads(columns: int, rows: int, wrap: bool) -> np.ndarray:
    """(F, 3) int32 triangles of a ``rows`` x ``columns`` grid; with ``wrap`` the last column joins the first."""
    span = columns if wrap else columns - 1
    r, c = np.meshgrid(np.arange(rows - 1), np.arange(span), indexing="ij")
    a = r * columns + c
    b = r * columns + (c + 1) % columns
    lower_a, lower_b = a + columns, b + columns
    tri = np.stack([np.stack([a, lower_a, b], -1), np.stack([b, lower_a, lower_b], -1)], axis=-2)
    return tri.reshape(-1, 3).astype(np.int32)


def rectangle(columns: int, rows: int, width_m: float, length_m: float, x_m: float, top_z_m: float):
    """A cape: ``columns`` x ``rows`` vertices in the plane x = ``x_m``, ``width_m`` wide along y (centred on
    y = 0) and ``length_m`` long downwards from z = ``top_z_m``. Returns vertices (V, 3) m and triangles (F, 3)."""
    y = np.linspace(width_m / 2, -width_m / 2, columns)
    z = top_z_m - np.linspace(0.0, length_m, rows)
    zz, yy = np.meshgrid(z, y, indexing="ij")
    vertices = np.stack([np.full(zz.size, x_m), yy.ravel(), zz.ravel()], axis=1)
    return vertices, _quads(columns, rows, wrap=False)


def band(
    around: int, rows: int, top_radius_m: float, bottom_radius_m: float, height_m: float, top_z_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """A skirt: a cone band about the z axis, ``around`` vertices per ring, ``rows`` rings from radius
    ``top_radius_m`` at z = ``top_z_m`` down to ``bottom_radius_m`` ``height_m`` lower. Returns vertices (V, 3) m
    and triangles (F, 3), wrapping around."""
    phi = 2 * np.pi * np.arange(around) / around
    s = np.linspace(0.0, 1.0, rows)[:, None]
    radius = top_radius_m + s * (bottom_radius_m - top_radius_m)
    z = np.broadcast_to(top_z_m - s * height_m, (rows, around))
    vertices = np.stack([(radius * np.cos(phi)).ravel(), (radius * np.sin(phi)).ravel(), z.ravel()], axis=1)
    return vertices, _quads(around, rows, wrap=True)
