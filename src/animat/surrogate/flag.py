"""The flag scene: the sheet's cloth pinned along a pole, blown by a changing wind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from animat.config import require
from animat.surrogate.normals import incidence
from animat.surrogate.sheet import SheetScene, smoothstep_move


@dataclass(frozen=True)
class FlagScene(SheetScene):
    """A flag: the same cloth pinned along its whole left edge (the pole) and blown by a wind whose
    speed and horizontal direction change at random times (smoothly, over ``wind_seconds``). With
    probability ``calm_probability`` a new target is calm air (zero wind), held for ``hold_seconds``
    once reached: the data then shows the cloth coming to rest when the wind stops (0, the default,
    draws no extra numbers, so old seeds give the same winds).

    Y (3,) m/s is the wind vector. MuJoCo's built-in ``opt.wind`` acts on bodies through their
    inertia boxes, which for flex vertices gives almost no force, so the wind is applied as
    per-vertex pressure drag before every substep: ``F_i = 0.5 rho C_d A_i (u.n_i)|u.n_i| n_i`` with
    ``u`` the wind relative to the vertex, ``n_i`` its area-weighted normal and ``A_i`` a third of
    the area of its triangles. The sphere fields of the sheet scene are unused.
    """

    name: str = "flag"
    wind_speed_mps: tuple[float, float] = (0.5, 6.0)
    wind_angle_deg: float = 60.0  # direction within +-this of the +x axis (away from the pole)
    wind_seconds: tuple[float, float] = (0.5, 2.0)
    air_density: float = 1.2
    drag_coefficient: float = 1.0
    calm_probability: float = 0.0  # chance that a wind target is zero wind, held for hold_seconds
    mutable_state: ClassVar[tuple[str, ...]] = ("prev",)  # the vertices at the last substep (the drag's velocity)

    @classmethod
    def build(cls, **overrides) -> FlagScene:
        scene = super().build(**overrides)
        require("calm_probability (a probability)", scene.calm_probability, ge=0, le=1)
        return scene

    @property
    def pinned(self) -> np.ndarray:
        return np.arange(int(self.size))  # the column at x = -side/2: the pole

    def mjcf(self) -> str:
        pole = " ".join(str(i) for i in range(int(self.size)))
        return self._mjcf("", (0.0, self.top_z_m - self.side_m / 2), f'<pin id="{pole}"/>')

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        total = frames + self.warmup_frames

        def target() -> np.ndarray:
            if self.calm_probability and rng.uniform() < self.calm_probability:  # no extra draw when 0
                return np.zeros(3)
            speed, angle = (
                rng.uniform(*self.wind_speed_mps),
                np.radians(rng.uniform(-self.wind_angle_deg, self.wind_angle_deg)),
            )
            return speed * np.array([np.cos(angle), np.sin(angle), 0.0])

        wind, out, count = target(), [], 0
        while count < total:
            new = target()
            out.append(smoothstep_move(wind, new, self.wind_seconds, self.fps, rng))
            count += len(out[-1])
            if self.calm_probability and not new.any():  # calm air reached: hold it
                out.append(np.zeros((int(round(rng.uniform(*self.hold_seconds) * self.fps)), 3)))
                count += len(out[-1])
            wind = new
        return np.concatenate(out)[:total]

    def _setup(self, m, d) -> dict:
        """Called after ``mj_forward``: ``prev`` holds the vertices at rest. ``incidence`` (V, F) sums
        each triangle's ``2 area x normal`` onto its vertices, as in
        :func:`~animat.surrogate.normals.vertex_normals`."""

        bodies = np.asarray(m.flex_vertbodyid).copy()
        free = np.setdiff1d(np.arange(self.n_vertices), self.pinned)
        tri = m.flex_elem.reshape(-1, 3).copy()
        return {
            "triangles": tri,
            "incidence": incidence(tri, self.n_vertices),
            "bodies": bodies[free],
            "free": free,
            "prev": d.flexvert_xpos.copy(),
        }

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        x = d.flexvert_xpos
        tri = state["triangles"]
        normals = state["incidence"] @ np.cross(
            x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 0]]
        )  # area-weighted
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        area = length[:, 0] / 6.0  # a third of the adjacent triangles' area
        unit = normals / np.maximum(length, 1e-12)
        velocity = (x - state["prev"]) / m.opt.timestep
        state["prev"] = x.copy()
        un = np.einsum("ij,ij->i", y[None, :] - velocity, unit)
        force = (0.5 * self.air_density * self.drag_coefficient * area * un * np.abs(un))[:, None] * unit
        d.xfrc_applied[state["bodies"], :3] = force[state["free"]]

    def set_vertices(self, m, d, state: dict, x: np.ndarray, v: np.ndarray) -> None:
        """As the sheet's; the drag's vertex velocity (from ``state["prev"]``) becomes ``v``."""
        super().set_vertices(m, d, state, x, v)
        state["prev"] = d.flexvert_xpos - v * m.opt.timestep

    def stopped(self, y: np.ndarray) -> np.ndarray:
        """The wind stopped: zero wind (a held wind keeps a real flag fluttering, so holding the last
        wind vector is not "the external objects stop")."""
        return np.zeros_like(y)

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32)  # nothing to hit
