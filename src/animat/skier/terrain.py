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
* ``moguls``: bumps on the flat snow, their surface :meth:`Terrain.height`: spherical caps of height ``bump_height``
  and base radius ``bump_spacing / 2`` (the highest cap where two overlap), centred on a square lattice of pitch
  ``bump_spacing`` (a row on the course's line y = 0) whose points move by up to ``irregularity * bump_spacing / 4``
  along x and y (a NumPy Generator seeded ``terrain_seed``), none nearer the start than :data:`CLEAR_X` nor reaching
  beyond the field (:data:`FIELD_X`, :data:`FIELD_Y`; flat snow beyond). The skier meets that closed form exactly: the
  plane ``floor`` and one buried sphere per cap (``bump<k>``; analytic sphere-plane, sphere-sphere and capsule-sphere
  contacts). The field is drawn as a MuJoCo height field ``moguls`` sampled every :data:`CELL` m, which nothing
  touches: MuJoCo collides a geom with a height field prism by prism with its general convex collider, and at the
  prisms' shared edges a wheel gets contact normals tilted up to horizontal (a standing skier on the flat part of a
  field is pushed sideways, and noisy standing genes fall that stand on a plane:
  RESULTS.md, 'Measurements behind the code'), so the GA would evolve a skier of the triangulation. The drawn
  surface is flat on triangles between the samples: it cuts a crest by up to (CELL / sqrt 2)^2 / (2 cap_radius), under
  3 mm for caps of radius >= 3.4 m. The skis roll on :data:`WHEELS` wheels on hinges across the ski, as roller skis
  (what cross-country skiers train skating on off snow; Ainegren, Carlsson & Tinnsten, "Rolling resistance for
  treadmill roller skiing", Sports Eng. 11, 23-29, 2008), because MuJoCo aligns the friction frame with a capsule's axis
  only on a plane, not on a sphere: a wheel grips across the ski with ``mu_lat`` (its contact's friction is isotropic,
  so the frame does not matter but for the pyramidal cone's corners, see tests/skier/test_terrain.py) and rolls along
  it, resisted by a rolling-friction torque ``mu_long * WHEEL_RADIUS * N`` (condim 6), the force ``mu_long * N`` of a
  ski gliding. The course coordinate is x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from animat.skier.modes import TERRAINS

CLEAR_X = 3.0  # m: the mogul field's bumps lie beyond this (the skier starts at x = 0 on flat snow)
FIELD_X = (-10.0, 60.0)  # m: the mogul field's extent along the course (flat snow beyond)
FIELD_Y = 6.0  # m: its half width across it
BASE = 0.5  # m: depth of the solid box under the height field (MuJoCo's base_z)
RUNNER = 4  # contype of what runs on the snow (skis, wheels, poles) on moguls: it meets the caps (conaffinity)
CELL = 0.2  # m between height samples (the field is drawn: finer costs drawing time, not accuracy)
WHEELS = (0.08, 0.5, 0.92)  # roller-ski wheels, as fractions of the ski's length from its tail
WHEEL_RADIUS = 0.035  # m; its bottom that far below the ski's running surface
WHEEL_MASS = 0.1  # kg each, taken from the ski's mass (the skier weighs the same on any terrain)
WHEEL_ARMATURE = 1e-4  # kg m^2 added on each wheel's hinge (a bare wheel's 5e-5 alone is a stiff joint at 10 ms)


__all__ = ["TERRAINS", "Terrain", "roller_ski", "shape_floor", "shape_world", "ski_geoms"]


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
        are bumps (I, J) bool (those clear of the start and wholly on the field)."""
        s = self.bump_spacing
        x0, y0 = self._origin()
        xs = np.arange(x0, FIELD_X[1] + s, s)
        ys = np.arange(y0, -y0 + s / 2, s)
        centres = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
        jitter = np.random.default_rng(self.seed).uniform(-1.0, 1.0, centres.shape)
        centres = centres + jitter * self.irregularity * s / 4
        x, y = centres[..., 0], centres[..., 1]
        return centres, (x - s / 2 >= CLEAR_X) & (x + s / 2 <= FIELD_X[1]) & (np.abs(y) + s / 2 <= FIELD_Y)

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

    @property
    def cap_radius(self) -> float:
        """Radius m of the sphere whose cap above the snow is a bump (height h, base radius a = spacing / 2):
        (a^2 + h^2) / (2 h); infinite for flat bumps."""
        a, h = self.bump_spacing / 2, self.bump_height
        return (a * a + h * h) / (2 * h) if h > 0 else math.inf

    def _bump(self, dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
        """One mogul's height (...) m at offsets ``dx``, ``dy`` (...) m from its centre: its spherical cap."""
        r2, big = dx * dx + dy * dy, self.cap_radius
        if math.isinf(big):
            return np.zeros(np.shape(r2))
        return np.maximum(np.sqrt(np.maximum(big * big - r2, 0.0)) - (big - self.bump_height), 0.0)

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


def shape_world(spec, terrain: Terrain, ski_mu: tuple[float, float], pole_mu: float) -> None:
    """Turn the skier's flat world (``spec`` from :func:`animat.skier.model.build_spec`, a ``mujoco.MjSpec``) into
    ``terrain`` (see the module docstring): the floor (:func:`shape_floor`); on a slope the skier turned with it;
    on moguls the skis on wheels (``ski_mu``: the ski's (along, across) friction), the skier lifted onto them, and the
    poles meeting the caps with ``pole_mu``.
    Flat snow is left as it is."""
    shape_floor(spec, terrain)
    pelvis = spec.body("pelvis")
    if terrain.kind == "slope":
        c, s = math.cos(terrain.slope), math.sin(terrain.slope)
        x, y, z = pelvis.pos
        pelvis.pos = [c * x - s * z, y, s * x + c * z]  # turned about y with the plane, about the origin
        pelvis.quat = spec.geom("floor").quat
    elif terrain.kind == "moguls":
        for side in ("left", "right"):
            roller_ski(spec, f"{side}_shank", f"{side}_ski", ski_mu)
            runner(spec.geom(f"{side}_pole"), [pole_mu, pole_mu, 0.005, 0.0001, 0.0001], 3)
        pelvis.pos = pelvis.pos + [0.0, 0.0, WHEEL_RADIUS]


def shape_floor(spec, terrain: Terrain) -> None:
    """Make the geom ``floor`` of ``spec`` (a plane at the origin) ``terrain``'s ground: turned about y so that it
    rises along +x by the slope's angle, or the height field ``moguls`` (:func:`_mogul_field`)."""
    if terrain.kind == "slope":
        half = -terrain.slope / 2  # a turn by -slope about y tips the normal z towards -x: the plane rises along +x
        spec.geom("floor").quat = [math.cos(half), 0.0, math.sin(half), 0.0]
    elif terrain.kind == "moguls":
        _mogul_field(spec, terrain)


def _mogul_field(spec, terrain: Terrain) -> None:
    """The height field ``moguls`` of :meth:`Terrain.grid` (drawn; met by the body), the caps ``bump<k>`` (met by
    the runners, :data:`RUNNER`), and the plane ``floor`` left to its explicit pairs (see the module docstring)."""
    import mujoco

    floor = spec.geom("floor")
    _, _, h = terrain.grid()
    top = float(h.max())
    field = spec.add_hfield()
    field.name = "moguls"
    field.nrow, field.ncol = h.shape
    field.size = [(FIELD_X[1] - FIELD_X[0]) / 2, FIELD_Y, max(top, 1e-6), BASE]
    field.userdata = (h / top if top > 0 else h).ravel().tolist()  # MuJoCo scales [0, 1] by size[2]
    ground = spec.worldbody.add_geom()
    ground.name, ground.type, ground.hfieldname = "moguls", mujoco.mjtGeom.mjGEOM_HFIELD, "moguls"
    ground.pos = [(FIELD_X[0] + FIELD_X[1]) / 2, 0.0, 0.0]
    ground.contype = ground.conaffinity = 0  # drawn only
    ground.rgba = floor.rgba
    centres, real = terrain.lattice()
    big = terrain.cap_radius
    for k, (x, y) in enumerate(centres[real] if terrain.bump_height > 0 else []):
        cap = spec.worldbody.add_geom()
        cap.name, cap.type, cap.size = f"bump{k}", mujoco.mjtGeom.mjGEOM_SPHERE, [big, 0, 0]
        cap.pos = [x, y, terrain.bump_height - big]
        cap.contype, cap.conaffinity, cap.condim = 0, RUNNER | floor.conaffinity, 1
        cap.friction = [1e-6, 1e-6, 1e-6]  # the runner's own friction applies (MuJoCo takes the larger)
        cap.group, cap.rgba = 3, [1, 1, 1, 0]  # hidden (MuJoCo draws groups 0-2): the height field draws them


def roller_ski(spec, body: str, ski_name: str, mu: tuple[float, float]) -> None:
    """Put the ski ``ski_name`` (a capsule along x of ``body``, with a pair named ``<ski>_floor`` with the floor and a
    force sensor ``<ski>_force``) on :data:`WHEELS` free wheels (spheres on hinges across the ski, at its running
    surface, their mass taken from the ski's): each wheel grips the floor and the caps with ``mu[1]`` in every
    direction and resists rolling with ``mu[0] * WHEEL_RADIUS`` m (condim 6); the ski itself glides on them with
    ``mu[0]`` every way (it touches only on a crest); the force sensor counts every contact of ``body``'s subtree
    (ski, wheels; the shank on the skier)."""
    import mujoco

    ski = spec.geom(ski_name)
    ski.mass = ski.mass - len(WHEELS) * WHEEL_MASS
    tail, tip = np.asarray(ski.fromto[:3]), np.asarray(ski.fromto[3:])
    side = ski_name.removesuffix("_ski")
    wheel_mu = [mu[1], mu[1], 0.005, mu[0] * WHEEL_RADIUS, mu[0] * WHEEL_RADIUS]
    for k, frac in enumerate(WHEELS):
        wheel = spec.body(body).add_body()
        wheel.name = f"{side}_wheel{k}"
        wheel.pos = tail + frac * (tip - tail) - [0.0, 0.0, ski.size[0]]
        hinge = wheel.add_joint()
        hinge.name, hinge.type, hinge.axis = f"{side}_wheel{k}", mujoco.mjtJoint.mjJNT_HINGE, [0, 1, 0]
        hinge.armature = WHEEL_ARMATURE
        g = wheel.add_geom()
        g.name, g.type, g.size = f"{side}_wheel{k}", mujoco.mjtGeom.mjGEOM_SPHERE, [WHEEL_RADIUS, 0, 0]
        g.mass, g.rgba = WHEEL_MASS, [0.2, 0.2, 0.2, 1]
        pair = spec.add_pair()
        pair.name, pair.geomname1, pair.geomname2, pair.condim = f"{side}_wheel{k}_floor", "floor", g.name, 6
        pair.friction = wheel_mu
        runner(g, wheel_mu, 6)
    glide = [mu[0], mu[0], 0.005, 0.0001, 0.0001]
    spec.pair(f"{ski_name}_floor").friction = glide
    runner(ski, glide, 3)
    sensor = spec.sensor(f"{ski_name}_force")
    sensor.objtype, sensor.objname = mujoco.mjtObj.mjOBJ_XBODY, body
    sensor.reftype, sensor.refname = mujoco.mjtObj.mjOBJ_UNKNOWN, ""


def runner(geom, friction: list[float], condim: int) -> None:
    """Make ``geom`` (an ``MjsGeom``) meet the moguls' caps (contype :data:`RUNNER`) with ``friction`` (a pair's five
    coefficients: two sliding, torsional, two rolling; a geom keeps one of each, MuJoCo takes the larger of two
    geoms') and ``condim``; it meets nothing else but through its pairs."""
    geom.contype, geom.conaffinity, geom.condim = RUNNER, 0, condim
    geom.friction = [friction[1], friction[2], friction[3]]


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
