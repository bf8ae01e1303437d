"""The skier's ground (issue 49): flat snow, an inclined slope, or a mogul field; the course along it.

Frames as in :mod:`animat.skier.model`: z up, the course runs along +x. Lengths in m, angles in degrees at the
options (``slope_deg``) and radians in code.

* ``flat``: the infinite plane ``floor`` at z = 0 (the model before this module, unchanged).
* ``slope``: the same plane turned about the y axis, ``slope_deg`` > 0 rising along +x (uphill), < 0 falling
  (downhill); the skier starts standing on it, turned with it. A plane rather than a height field because of
  the ski friction: MuJoCo aligns a contact frame's first tangent with a capsule's axis only for capsule-plane
  contacts (``mjc_PlaneCapsule``); for a capsule on a height field (or a box or a mesh) the tangents follow
  from the normal alone, fixed in the world, so a yawed ski would glide along world x instead of along its
  length. The course coordinate is the distance along the slope, x / cos(slope).
* ``moguls``: a MuJoCo height field ``floor`` whose surface is :meth:`Terrain.height`: smooth bumps
  h cos^2(pi r / spacing) within r < spacing / 2 of their centres (r the horizontal distance), the highest
  bump where two overlap, centred on a square lattice of pitch ``bump_spacing`` (a row on the course's line
  y = 0) whose points move by up to ``irregularity * bump_spacing / 4`` along x and y (a NumPy Generator
  seeded ``terrain_seed``), none nearer the start than :data:`CLEAR_X`. The field is sampled every
  :data:`CELL` m and MuJoCo's surface is linear between samples (its prisms), within a fraction of a
  millimetre of the closed form for bumps of pitch >= 2 m. Since the capsule skis would get the
  wrong friction frame on a height field, each ski rolls on :data:`WHEELS` wheels on hinges across the ski,
  as a roller ski (what cross-country skiers train skating on off snow; Ainegren, Carlsson & Tinnsten,
  "Roller ski rolling resistance", Sports Eng. 11, 2008): a wheel grips across the ski with ``mu_lat``
  (its contact's friction is isotropic, so the wrong frame does not matter) and rolls along it, resisted by
  a rolling-friction torque ``mu_long * WHEEL_RADIUS * N`` (condim 6), the force ``mu_long * N`` of a ski
  gliding. The course coordinate is x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from animat.skier.modes import TERRAINS

CLEAR_X = 3.0  # m: the mogul field's bumps lie beyond this (the skier starts at x = 0 on flat snow)
FIELD_X = (-10.0, 90.0)  # m: the height field's extent along the course
FIELD_Y = 12.0  # m: its half width across it
BASE = 0.5  # m: depth of the solid box under the height field (MuJoCo's base_z)
CELL = 0.1  # m between height samples
WHEELS = (0.08, 0.5, 0.92)  # roller-ski wheels, as fractions of the ski's length from its tail
WHEEL_RADIUS = 0.035  # m; its bottom that far below the ski's running surface
WHEEL_MASS = 0.1  # kg each, taken from the ski's mass (the skier weighs the same on any terrain)
WHEEL_ARMATURE = 0.001  # kg m^2 on each wheel's hinge (a bare 0.1 kg wheel's 5e-5 is stiff at the skier's 10 ms)


__all__ = ["TERRAINS", "Terrain", "shape_world", "ski_geoms"]


@dataclass(frozen=True)
class Terrain:
    """The ground: ``kind`` (:data:`TERRAINS`), the slope's angle ``slope_deg`` (positive: uphill along +x), the
    moguls' ``bump_height`` m, ``bump_spacing`` m, ``irregularity`` (0..1) and ``seed``."""

    kind: str = "flat"
    slope_deg: float = 0.0
    bump_height: float = 0.2
    bump_spacing: float = 3.0
    irregularity: float = 0.0
    seed: int = 0

    @property
    def slope(self) -> float:
        """The slope's angle, rad (0 off a slope)."""
        return math.radians(self.slope_deg) if self.kind == "slope" else 0.0

    def lattice(self) -> tuple[np.ndarray, np.ndarray]:
        """The mogul centres (I, J, 2) m (x, y) on the jittered lattice (see the module docstring), and which of them
        are bumps (I, J) bool (those clear of the start)."""
        s = self.bump_spacing
        x0, y0 = self._origin()
        xs = np.arange(x0, FIELD_X[1] + s, s)
        ys = np.arange(y0, -y0 + s / 2, s)
        centres = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
        jitter = np.random.default_rng(self.seed).uniform(-1.0, 1.0, centres.shape)
        centres = centres + jitter * self.irregularity * s / 4
        return centres, centres[..., 0] - s / 2 >= CLEAR_X

    def height(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Surface height (...) m at horizontal positions ``x``, ``y`` (...) m (the closed form)."""
        x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        if self.kind == "slope":
            return x * math.tan(self.slope)
        h = np.zeros(x.shape)
        if self.kind != "moguls":
            return h
        centres, real = self.lattice()
        s = self.bump_spacing
        # a point is within reach (s / 2) only of bumps whose lattice point is within 3 s / 4 of it along x and y
        # (jitter <= s / 4): those of the nearest lattice point and its eight neighbours
        x0, y0 = self._origin()
        i0, j0 = np.rint((x - x0) / s).astype(np.int64), np.rint((y - y0) / s).astype(np.int64)
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                i = np.clip(i0 + di, 0, centres.shape[0] - 1)
                j = np.clip(j0 + dj, 0, centres.shape[1] - 1)
                c = centres[i, j]
                np.maximum(h, np.where(real[i, j], self._bump(x - c[..., 0], y - c[..., 1]), 0.0), out=h)
        return h

    def _origin(self) -> tuple[float, float]:
        """The first lattice point (x, y) m before jitter (the lattice covers the height field)."""
        return CLEAR_X + self.bump_spacing / 2, -(math.floor(FIELD_Y / self.bump_spacing) + 1) * self.bump_spacing

    def _bump(self, dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
        """One mogul's height (...) m at offsets ``dx``, ``dy`` (...) m from its centre."""
        r = np.minimum(np.hypot(dx, dy), self.bump_spacing / 2)
        return self.bump_height * np.cos(np.pi * r / self.bump_spacing) ** 2

    def course(self, pos: np.ndarray) -> np.ndarray:
        """Distance along the course (...) m of positions ``pos`` (..., 3) m: x, or along the slope x / cos(slope)."""
        x = np.asarray(pos)[..., 0]
        return x / math.cos(self.slope) if self.kind == "slope" else x

    def clearance(self, pos: np.ndarray) -> np.ndarray:
        """Height (...) m of positions ``pos`` (..., 3) m above the surface below them (z on flat snow)."""
        pos = np.asarray(pos)
        return pos[..., 2] if self.kind == "flat" else pos[..., 2] - self.height(pos[..., 0], pos[..., 1])

    def grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The height field's samples: x (ncol,) m, y (nrow,) m and heights (nrow, ncol) m, row 0 at the lowest y
        (MuJoCo's ``hfield_data`` order)."""
        x = np.linspace(*FIELD_X, int(round((FIELD_X[1] - FIELD_X[0]) / CELL)) + 1)
        y = np.linspace(-FIELD_Y, FIELD_Y, int(round(2 * FIELD_Y / CELL)) + 1)
        return x, y, self.height(x[None, :], y[:, None])


def shape_world(spec, terrain: Terrain, ski_mu: tuple[float, float]) -> None:
    """Turn the skier's flat world (``spec`` from :func:`animat.skier.model.build_spec`, a ``mujoco.MjSpec``) into
    ``terrain`` (see the module docstring): tilt the floor and the skier for a slope; for moguls make the floor the
    height field, put the skis on wheels (``ski_mu``: the ski's (along, across) friction) and lift the skier onto
    them. Flat snow is left as it is."""
    if terrain.kind == "slope":
        _tilt(spec, terrain.slope)
    elif terrain.kind == "moguls":
        _mogul_field(spec, terrain)
        for side in ("left", "right"):
            _roller_ski(spec, side, ski_mu)
        spec.body("pelvis").pos = spec.body("pelvis").pos + [0.0, 0.0, WHEEL_RADIUS]


def _tilt(spec, angle: float) -> None:
    """Turn the floor and the skier standing on it by -``angle`` rad about y (the plane rises along +x for
    ``angle`` > 0), about the world origin, where the plane passes."""
    quat = np.array([math.cos(-angle / 2), 0.0, math.sin(-angle / 2), 0.0])
    spec.geom("floor").quat = quat
    pelvis = spec.body("pelvis")
    c, s = math.cos(-angle), math.sin(-angle)
    x, y, z = pelvis.pos
    pelvis.pos = [c * x + s * z, y, -s * x + c * z]
    pelvis.quat = quat


def _mogul_field(spec, terrain: Terrain) -> None:
    """The height field ``moguls`` of :meth:`Terrain.grid` and the floor geom made of it."""
    import mujoco

    _, _, h = terrain.grid()
    top = float(h.max())
    field = spec.add_hfield()
    field.name = "moguls"
    field.nrow, field.ncol = h.shape
    field.size = [(FIELD_X[1] - FIELD_X[0]) / 2, FIELD_Y, max(top, 1e-6), BASE]
    field.userdata = (h / top if top > 0 else h).ravel().tolist()  # MuJoCo scales [0, 1] by size[2]
    floor = spec.geom("floor")
    floor.type = mujoco.mjtGeom.mjGEOM_HFIELD
    floor.hfieldname = "moguls"
    floor.pos = [(FIELD_X[0] + FIELD_X[1]) / 2, 0.0, 0.0]


def _roller_ski(spec, side: str, mu: tuple[float, float]) -> None:
    """Put ``side``'s ski on :data:`WHEELS` free wheels (spheres on hinges across the ski, at its running surface,
    their mass taken from the ski's): each wheel's pair with the floor grips with ``mu[1]`` in every direction and
    resists rolling with ``mu[0] * WHEEL_RADIUS`` m (condim 6); the ski's own pair glides with ``mu[0]`` every way (it
    touches only on a crest); the ski's force sensor counts the whole leg (ski, wheels, shank)."""
    import mujoco

    ski = spec.geom(f"{side}_ski")
    ski.mass = ski.mass - len(WHEELS) * WHEEL_MASS
    tail, tip = np.asarray(ski.fromto[:3]), np.asarray(ski.fromto[3:])
    shank = spec.body(f"{side}_shank")
    for k, frac in enumerate(WHEELS):
        wheel = shank.add_body()
        wheel.name = f"{side}_wheel{k}"
        wheel.pos = tail + frac * (tip - tail) - [0.0, 0.0, ski.size[0]]
        hinge = wheel.add_joint()
        hinge.name, hinge.type, hinge.axis = f"{side}_wheel{k}", mujoco.mjtJoint.mjJNT_HINGE, [0, 1, 0]
        hinge.armature = WHEEL_ARMATURE
        g = wheel.add_geom()
        g.name, g.type, g.size, g.mass = (
            f"{side}_wheel{k}",
            mujoco.mjtGeom.mjGEOM_SPHERE,
            [WHEEL_RADIUS, 0, 0],
            WHEEL_MASS,
        )
        g.contype = g.conaffinity = 0
        g.rgba = [0.2, 0.2, 0.2, 1]
        pair = spec.add_pair()
        pair.name, pair.geomname1, pair.geomname2, pair.condim = f"{side}_wheel{k}_floor", "floor", g.name, 6
        pair.friction = [mu[1], mu[1], 0.005, mu[0] * WHEEL_RADIUS, mu[0] * WHEEL_RADIUS]
    spec.pair(f"{side}_ski_floor").friction = [mu[0], mu[0], 0.005, 0.0001, 0.0001]
    sensor = spec.sensor(f"{side}_ski_force")
    sensor.objtype, sensor.objname = mujoco.mjtObj.mjOBJ_XBODY, f"{side}_shank"


def ski_geoms(model) -> list[set[int]]:
    """Per ski (left, right) the ids of the geoms it runs on in ``model`` (a ``mujoco.MjModel``): the ski, and its
    wheels on moguls."""
    import mujoco

    out = []
    for side in ("left", "right"):
        names = [f"{side}_ski"] + [f"{side}_wheel{k}" for k in range(len(WHEELS))]
        ids = (mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in names)
        out.append({i for i in ids if i >= 0})
    return out
