"""A replay scene for report.html: objects over frames, stored as JSON plus binary buffers.

Every array is kept as float32 (uint32 indices; large meshes float16 positions and normals in 1/127
steps) and written base64 into the page, where
``web/replay.js`` decodes it into typed arrays. Shapes put frames first: ``(F, ...)`` for what moves,
no frame axis for what stands still. World frame z up; lengths in ``units`` (m unless a preset says
otherwise); times in s.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_FRAMES = 1200  # frames a replay keeps at most (a 30 s run at 40 fps)
TARGET_FPS = 30.0  # frames per simulated second a replay keeps where it has more
DTYPES = {
    np.float32: "f4",
    np.float16: "f2",
    np.int8: "n1",
    np.uint32: "u4",
    np.int32: "i4",
}  # n1: int8 / 127 (unit vectors)


def frame_indices(t: np.ndarray, fps: float = TARGET_FPS, most: int = MAX_FRAMES) -> np.ndarray:
    """Indices into samples at times ``t (T,)`` s keeping about ``fps`` per second, at most ``most``, the last
    included."""
    t = np.asarray(t, float)
    if len(t) < 2:
        return np.arange(len(t))
    dt = max(float(np.median(np.diff(t))), 1e-9)
    every = max(1, int(round(1.0 / (fps * dt))), -(-len(t) // most))
    idx = np.arange(0, len(t), every)
    return idx if idx[-1] == len(t) - 1 else np.append(idx, len(t) - 1)


def quat_between_z(p0: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre ``(..., 3)``, half-length ``(...)`` and quaternion ``(..., 4)`` [w, x, y, z] turning +z onto
    ``p1 - p0``: the pose of a capsule or cylinder between two points ``(..., 3)``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = p1 - p0
    half = 0.5 * np.linalg.norm(d, axis=-1)
    u = d / np.maximum(2 * half, 1e-12)[..., None]
    z = np.zeros_like(u)
    z[..., 2] = 1.0
    q = np.concatenate([1.0 + u[..., 2:3], np.cross(z, u)], axis=-1)
    flipped = q[..., 0] < 1e-9  # pointing down -z: half a turn about x
    q[flipped] = [0.0, 1.0, 0.0, 0.0]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return 0.5 * (p0 + p1), half, q


@dataclass
class Scene:
    """Objects to draw over the frames at ``times (F,)`` s; build with the ``add_*`` methods, then :meth:`to_json`."""

    times: np.ndarray
    units: str = "m"
    objects: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    captions: list | None = None
    follow: np.ndarray | None = None  # (F, 3): the point the "follow" camera keeps in view
    view: Sequence[float] | None = None  # direction from the scene's centre to the camera
    focus: float | None = (
        None  # size of what the camera frames at first (default: the whole scene); with follow, it follows
    )
    ground: float | None = None  # height of the grid (default: the lowest point)
    notes: list = field(default_factory=list)  # lines shown under the replay (what is approximated, left out)
    _buffers: list = field(default_factory=list)
    _points: list = field(default_factory=list)  # every drawn position, for the bounds

    def __post_init__(self) -> None:
        self.times = np.asarray(self.times, np.float32)

    @property
    def frames(self) -> int:
        return len(self.times)

    def _buf(self, arr: np.ndarray | None, dtype=np.float32) -> dict | None:
        if arr is None:
            return None
        a = np.asarray(arr)
        if dtype is np.int8:  # unit vectors, 1/127 steps
            a = np.round(np.clip(np.nan_to_num(a), -1.0, 1.0) * 127)
        a = np.ascontiguousarray(a, dtype=dtype)
        self._buffers.append(base64.b64encode(a.tobytes()).decode("ascii"))
        return {"b": len(self._buffers) - 1, "dtype": DTYPES[dtype], "shape": list(a.shape)}

    def _check_frames(self, arr: np.ndarray, what: str) -> None:
        if arr.shape[0] != self.frames:
            raise ValueError(f"{what} has {arr.shape[0]} frames, the scene {self.frames}")

    def _seen(self, pts: np.ndarray) -> None:
        p = np.asarray(pts, float).reshape(-1, 3)
        p = p[np.isfinite(p).all(axis=1)]
        if len(p):
            self._points.append(np.stack([p.min(axis=0), p.max(axis=0)]))

    def add_mesh(
        self,
        name: str,
        positions: np.ndarray,
        faces: np.ndarray,
        *,
        normals: np.ndarray | None = None,
        color=(0.6, 0.6, 0.6),
        opacity: float = 1.0,
        flat: bool = False,
        edges: bool = False,
        compact: bool = False,
    ) -> None:
        """Triangles ``faces (K, 3)`` over vertices ``positions`` ``(F, V, 3)`` (moving) or ``(V, 3)``;
        unit ``normals`` of the same shape shade it (else the browser computes them). ``compact`` stores the
        positions as float16 and the normals in 1/127 steps (for large meshes)."""
        positions = np.asarray(positions, np.float32)
        if positions.ndim == 3:
            self._check_frames(positions, name)
        self._seen(positions)
        self.objects.append(
            {
                "type": "mesh",
                "name": name,
                "positions": self._buf(positions, np.float16 if compact else np.float32),
                "faces": self._buf(np.asarray(faces).reshape(-1), np.uint32),
                "normals": self._buf(normals, np.int8 if compact else np.float32),
                "color": list(color),
                "opacity": opacity,
                "flat": flat,
                "edges": edges,
            }
        )

    def add_prims(
        self,
        name: str,
        kinds: Sequence[str],
        sizes: np.ndarray,
        pos: np.ndarray,
        quat: np.ndarray | None = None,
        *,
        colors: np.ndarray | None = None,
        color=(0.6, 0.6, 0.6),
        opacity: float = 1.0,
    ) -> None:
        """Solid primitives (MuJoCo's: ``box`` half-sizes, ``sphere`` radius, ``capsule``/``cylinder`` radius and
        half-length along local z, ``ellipsoid`` radii): ``sizes (G, 3)``, centres ``pos (F, G, 3)`` or ``(G, 3)``,
        orientations ``quat`` [w, x, y, z] of the same leading shape, ``colors (G, 4)`` RGBA in [0, 1]."""
        pos = np.asarray(pos, np.float32)
        if pos.ndim == 3:
            self._check_frames(pos, name)
        sizes = np.asarray(sizes, np.float32).reshape(len(kinds), 3)
        self._seen(pos)
        self.objects.append(
            {
                "type": "prims",
                "name": name,
                "kinds": list(kinds),
                "sizes": self._buf(sizes),
                "pos": self._buf(pos),
                "quat": self._buf(quat),
                "colors": self._buf(colors),
                "color": list(color),
                "opacity": opacity,
            }
        )

    def add_points(
        self, name: str, positions: np.ndarray, *, radius: float, color=(0.12, 0.47, 0.71), opacity: float = 1.0
    ) -> None:
        """Spheres of ``radius`` at ``positions (F, N, 3)``."""
        positions = np.asarray(positions, np.float32)
        self._check_frames(positions, name)
        self._seen(positions)
        self.objects.append(
            {
                "type": "points",
                "name": name,
                "positions": self._buf(positions),
                "radius": float(radius),
                "color": list(color),
                "opacity": opacity,
            }
        )

    def add_links(
        self, points: str, pairs: Sequence[np.ndarray], *, color=(0.4, 0.4, 0.4), opacity: float = 0.5
    ) -> None:
        """Line segments between the points named ``points``: ``pairs[f] (K_f, 2)`` indices for frame f."""
        if len(pairs) != self.frames:
            raise ValueError(f"links have {len(pairs)} frames, the scene {self.frames}")
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in pairs])])
        flat = (
            np.concatenate([np.asarray(p, np.uint32).reshape(-1, 2) for p in pairs])
            if offsets[-1]
            else np.zeros((0, 2), np.uint32)
        )
        self.objects.append(
            {
                "type": "links",
                "points": points,
                "pairs": self._buf(flat, np.uint32),
                "offsets": self._buf(offsets, np.uint32),
                "color": list(color),
                "opacity": opacity,
            }
        )

    def add_path(self, name: str, positions: np.ndarray, *, color=(0.84, 0.15, 0.16), tail: int | None = None) -> None:
        """A point's path ``(F, 3)``: drawn faint in full and bright up to the current frame (the trail;
        only its last ``tail`` frames if given)."""
        positions = np.asarray(positions, np.float32)
        self._check_frames(positions, name)
        self._seen(positions)
        self.objects.append(
            {"type": "path", "name": name, "positions": self._buf(positions), "color": list(color), "tail": tail}
        )

    def add_label(self, text: str, pos: Sequence[float]) -> None:
        self.labels.append({"text": text, "pos": [float(x) for x in pos]})

    def bounds(self) -> list[list[float]]:
        if not self._points:
            return [[-1.0, -1.0, 0.0], [1.0, 1.0, 1.0]]
        b = np.stack(self._points)
        return [b[:, 0].min(axis=0).tolist(), b[:, 1].max(axis=0).tolist()]

    def to_json(self) -> tuple[dict, list[str]]:
        """(the scene description, its base64 buffers) as report.html embeds them."""
        desc = {
            "times": self._buf(self.times),
            "units": self.units,
            "objects": self.objects,
            "labels": self.labels,
            "captions": self.captions,
            "follow": self._buf(self.follow),
            "view": list(self.view) if self.view is not None else None,
            "ground": self.ground,
            "focus": self.focus,
            "bounds": self.bounds(),
            "notes": self.notes,
        }
        return desc, self._buffers


def box_triangles() -> np.ndarray:
    """Triangles ``(12, 3)`` of a box whose 8 corners are indexed 4*ix + 2*iy + iz (0 = minus side)."""
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.uint32)
