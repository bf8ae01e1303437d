"""Reference scenes simulated with MuJoCo flex cloth, recorded frame by frame.

``sheet``: a square cloth (``size`` x ``size`` vertices, ``side_m`` metres) hanging in the x-z plane,
pinned at its two top corners and struck by a sphere (a mocap body) that moves along random
smooth paths at random times. Per recorded frame (``fps``, with ``substeps`` physics steps each):

    X: (V, 3) float32 m   vertex positions (``V = size**2``)
    Y: (3,)   float32 m   sphere centre

The cloth is MuJoCo's ``flexcomp type="grid" dim="2"`` with membrane ``<elasticity>`` integrated by
the ``discrete`` integrator (MuJoCo 4.0 refuses flex elasticity under ``implicit``/``implicitfast``;
``<edge equality>`` was tried as well and stretched badly at 51 x 51 with the CG solver), plus a
little per-vertex viscous damping standing in for air. The MJCF is generated as a string because
``flexcomp`` is a compile-time macro that MjSpec exposes awkwardly.

``flag``: the same cloth pinned along its left edge (a pole) in a wind whose speed and direction
change at random times; ``Y`` (3,) m/s is the wind vector (see :class:`FlagScene`).

``cape``: a cloth attached to a capsule torso moving along random paths; X in the torso's frame,
``Y`` (7,) its position and quaternion (see :class:`CapeScene`).

Each scene also names its collision proxies (:meth:`SheetScene.proxies`) for the runtime.

A frame is *bad* when a vertex is non-finite, an edge is longer than ``max_edge_ratio`` x its rest
length, or MuJoCo flagged an unstable acceleration (it then silently resets the state). The episode
is truncated at the first bad frame, so every stored episode is contiguous in time; the count of
frames lost is returned as ``dropped``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from animat.errors import ConfigError

@dataclass(frozen=True)
class SheetScene:
    """Parameters of the sheet scene (SI units)."""

    name: str = "sheet"
    size: int = 51  # vertices per side
    side_m: float = 1.0
    mass_kg: float = 0.5
    young_pa: float = 1e6
    poisson: float = 0.2
    thickness_m: float = 1e-3
    air_damping_per_s: float = 2.0  # per-vertex viscous damping / vertex mass
    fps: int = 60
    substeps: int = 4
    solver_iterations: int = 30  # MuJoCo CG iterations per substep
    warmup_frames: int = 30
    ball_radius_m: float = 0.1
    top_z_m: float = 2.0
    max_edge_ratio: float = 3.0
    strike_seconds: tuple[float, float] = (0.5, 1.2)  # duration of one path segment
    hold_seconds: tuple[float, float] = (0.0, 1.0)  # pause at a point away from the cloth


    @classmethod
    def build(cls, **overrides: Any) -> "SheetScene":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"unknown {cls.name} scene option(s) {unknown}; expected some of {sorted(known)}")
        values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in overrides.items() if v is not None}
        scene = replace(cls(), **values)
        if int(scene.size) < 3:
            raise ConfigError(f"{scene.name} size must be >= 3 vertices per side, got {scene.size}")
        if int(scene.fps) <= 0 or int(scene.substeps) <= 0:
            raise ConfigError(f"fps and substeps must be > 0, got {scene.fps} and {scene.substeps}")
        return scene

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def n_vertices(self) -> int:
        return int(self.size) ** 2

    @property
    def pinned(self) -> np.ndarray:
        """Indices of the two pinned (top) corner vertices."""
        n = int(self.size)
        return np.array([n - 1, n * n - 1])

    @property
    def timestep(self) -> float:
        return 1.0 / (self.fps * self.substeps)

    def mjcf(self) -> str:
        n = int(self.size)
        centre_z = self.top_z_m - self.side_m / 2
        ball = f"""    <body name="ball" mocap="true" pos="0 {-3 * self.ball_radius_m - 0.3} {centre_z}">
      <geom type="sphere" size="{self.ball_radius_m}" rgba="0.8 0.2 0.2 1"/>
    </body>
"""
        return self._mjcf(ball, (0.0, centre_z), f'<pin id="{n - 1} {n * n - 1}"/>')

    def _mjcf(self, bodies: str, centre_yz: tuple[float, float], pins: str = "", equality: str = "") -> str:
        """The model: ``bodies`` (XML), then the cloth grid in the x-z plane centred at x = 0,
        (y, z) = ``centre_yz``, with ``pins`` inside its flexcomp and ``equality`` constraints."""
        n, sp = int(self.size), self.side_m / (int(self.size) - 1)
        return f"""<mujoco model="{self.name}">
  <option timestep="{self.timestep:.10g}" integrator="discrete" solver="CG" iterations="{int(self.solver_iterations)}" tolerance="1e-6"/>
  <size memory="{max(16, n * n // 20)}M"/>
  <worldbody>
{bodies}    <flexcomp name="cloth" type="grid" count="{n} {n} 1" spacing="{sp:.10g} {sp:.10g} {sp:.10g}" pos="0 {centre_yz[0]:.10g} {centre_yz[1]:.10g}"
              euler="90 0 0" radius="{self.contact_radius_m:.6g}" dim="2" mass="{self.mass_kg}">
      <elasticity young="{self.young_pa}" poisson="{self.poisson}" thickness="{self.thickness_m}" elastic2d="stretch"/>
      <contact condim="3" selfcollide="none"/>
      {pins}
    </flexcomp>
  </worldbody>
  <equality>
{equality}
  </equality>
</mujoco>"""

    def model(self):
        import mujoco

        # MuJoCo 4.0 warns that the flex "has no equality constraints or passive forces" although the
        # discrete integrator applies its <elasticity>; swallow that one message, pass others on.
        messages: list[str] = []
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(messages.append)
        try:
            m = mujoco.MjModel.from_xml_string(self.mjcf())
        finally:
            mujoco.set_mju_user_warning(previous)
        for msg in messages:
            if "no equality constraints or passive forces" not in msg:
                warnings.warn(f"MuJoCo: {msg}", RuntimeWarning, stacklevel=2)
        vertex_mass = self.mass_kg / self.n_vertices
        m.dof_damping[:] = self.air_damping_per_s * vertex_mass
        return m

    # --- the sphere's path ---------------------------------------------------------------------
    def ball_path(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(frames + warmup, 3) sphere centres: waypoints alternating between points away from the
        cloth and points just through it, joined by smoothstep segments of random duration, with
        random holds at the away points."""
        total = frames + self.warmup_frames
        half, cz, r = self.side_m / 2, self.top_z_m - self.side_m / 2, self.ball_radius_m
        away_y = (3 * r + 0.2, 3 * r + 0.6)

        def away(side: float) -> np.ndarray:
            return np.array([rng.uniform(-half, half), side * rng.uniform(*away_y), cz + rng.uniform(-half, half)])

        def through(side: float) -> np.ndarray:  # sphere centre pushed past the cloth plane
            return np.array([rng.uniform(-0.8, 0.8) * half, -side * rng.uniform(0.0, 2 * r), cz + rng.uniform(-0.8, 0.8) * half])

        side = rng.choice([-1.0, 1.0])
        pos = np.array([0.0, side * away_y[1], cz])
        out = [np.repeat(pos[None], self.warmup_frames, axis=0)]
        count = self.warmup_frames
        striking = False
        while count < total:
            hold = int(round(rng.uniform(*self.hold_seconds) * self.fps)) if not striking else 0
            if hold:
                out.append(np.repeat(pos[None], hold, axis=0))
                count += hold
            if striking:
                side = rng.choice([-1.0, 1.0])
                target = away(side)
            else:
                target = through(side)
            steps = max(2, int(round(rng.uniform(*self.strike_seconds) * self.fps)))
            s = np.arange(1, steps + 1) / steps
            s = s * s * (3 - 2 * s)
            out.append(pos[None] + s[:, None] * (target - pos)[None])
            pos, striking, count = target, not striking, count + steps
        return np.concatenate(out)[:total].astype(np.float64)

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(warmup + frames, y) external state per frame (Y, recorded after the warm-up)."""
        return self.ball_path(frames, rng)

    def _setup(self, m, d) -> dict:
        return {}

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        """Impose the external input ``y`` before one physics substep."""
        d.mocap_pos[0] = y

    def _record(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """World vertex positions (V, 3) -> the recorded X frame (the sheet and flag: unchanged)."""
        return x

    @property
    def contact_radius_m(self) -> float:
        """The flex vertices' collision radius (as in :meth:`mjcf`)."""
        return min(0.005, self.side_m / (int(self.size) - 1) / 4)

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Collision proxies in the recorded X frame for external state ``y``: spheres (S, 4)
        ``[centre, radius]`` and capsules (C, 7) ``[a, b, radius]`` in metres (radii include the
        cloth's contact radius)."""
        sphere = np.concatenate([np.asarray(y, np.float32)[:3], [self.ball_radius_m + self.contact_radius_m]])
        return sphere[None].astype(np.float32), np.zeros((0, 7), np.float32)

    # --- one episode ---------------------------------------------------------------------------
    def simulate(self, frames: int, seed: int | np.random.SeedSequence) -> dict:
        """Run one episode; returns X (T, V, 3), Y (T, 3) float32 with T <= frames, ``dropped``
        (frames lost after the reference misbehaved) and ``seconds_per_frame`` (reference cost)."""
        import mujoco

        if int(frames) <= 0:
            raise ConfigError(f"frames must be > 0, got {frames}")
        rng = np.random.default_rng(seed)
        m = self.model()
        d = mujoco.MjData(m)
        path = self.controls(int(frames), rng)
        state = self._setup(m, d)
        edges = m.flex_edge.reshape(-1, 2)
        mujoco.mj_forward(m, d)
        x0 = d.flexvert_xpos.copy()
        rest = np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)
        X = np.empty((frames, self.n_vertices, 3), np.float32)
        Y = np.empty((frames, path.shape[1]), np.float32)
        prev = path[0]
        kept = 0
        bad_qacc = int(mujoco.mjtWarning.mjWARN_BADQACC)
        warnings_before = int(d.warning[bad_qacc].number)
        start = time.perf_counter()
        for i in range(len(path)):
            for k in range(1, self.substeps + 1):
                self._apply(m, d, state, prev + (path[i] - prev) * (k / self.substeps))
                mujoco.mj_step(m, d)
            prev = path[i]
            if i < self.warmup_frames:
                continue
            x = d.flexvert_xpos
            ok = bool(np.isfinite(x).all()) and int(d.warning[bad_qacc].number) == warnings_before
            if ok:
                lengths = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
                ok = bool(np.all(lengths <= self.max_edge_ratio * rest))
            if not ok:
                break
            X[kept] = self._record(x, path[i])
            Y[kept] = path[i]
            kept += 1
        elapsed = time.perf_counter() - start
        return {
            "X": X[:kept],
            "Y": Y[:kept],
            "dropped": int(frames - kept),
            "seconds_per_frame": elapsed / max(1, i + 1),
        }

    def topology(self) -> dict:
        """Static arrays for later use (rendering, normals): rest positions, edges, triangles."""
        m = self.model()
        import mujoco

        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        return {
            "rest": d.flexvert_xpos.astype(np.float32),
            "edges": m.flex_edge.reshape(-1, 2).astype(np.int32),
            "triangles": m.flex_elem.reshape(-1, 3).astype(np.int32),
            "pinned": self.pinned.astype(np.int32),
        }


@dataclass(frozen=True)
class FlagScene(SheetScene):
    """A flag: the same cloth pinned along its whole left edge (the pole) and blown by a wind whose
    speed and horizontal direction change at random times (smoothly, over ``wind_seconds``).

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

    @property
    def pinned(self) -> np.ndarray:
        return np.arange(int(self.size))  # the column at x = -side/2: the pole

    def mjcf(self) -> str:
        pole = " ".join(str(i) for i in range(int(self.size)))
        return self._mjcf("", (0.0, self.top_z_m - self.side_m / 2), f'<pin id="{pole}"/>')

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        total = frames + self.warmup_frames
        def target() -> np.ndarray:
            speed, angle = rng.uniform(*self.wind_speed_mps), np.radians(rng.uniform(-self.wind_angle_deg, self.wind_angle_deg))
            return speed * np.array([np.cos(angle), np.sin(angle), 0.0])

        wind, out, count = target(), [], 0
        while count < total:
            new = target()
            steps = max(2, int(round(rng.uniform(*self.wind_seconds) * self.fps)))
            s = np.arange(1, steps + 1) / steps
            s = s * s * (3 - 2 * s)
            out.append(wind[None] + s[:, None] * (new - wind)[None])
            wind, count = new, count + steps
        return np.concatenate(out)[:total]

    def _setup(self, m, d) -> dict:
        bodies = np.asarray(m.flex_vertbodyid).copy()
        free = np.setdiff1d(np.arange(self.n_vertices), self.pinned)
        return {"triangles": m.flex_elem.reshape(-1, 3).copy(), "bodies": bodies[free], "free": free,
                "prev": d.flexvert_xpos.copy()}

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        x = d.flexvert_xpos
        tri = state["triangles"]
        cross = np.cross(x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 0]])  # 2 area * normal
        normals = np.zeros_like(x)
        for j in range(3):
            np.add.at(normals, tri[:, j], cross)
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        area = length[:, 0] / 6.0  # a third of the adjacent triangles' area
        unit = normals / np.maximum(length, 1e-12)
        velocity = (x - state["prev"]) / m.opt.timestep
        state["prev"] = x.copy()
        un = np.einsum("ij,ij->i", y[None, :] - velocity, unit)
        force = (0.5 * self.air_density * self.drag_coefficient * area * un * np.abs(un))[:, None] * unit
        d.xfrc_applied[state["bodies"], :3] = force[state["free"]]

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32)  # nothing to hit


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) (w, x, y, z) -> rotation matrices (..., 3, 3)."""
    w, x, y, z = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def euler_to_quat(yaw: np.ndarray, pitch: np.ndarray, roll: np.ndarray) -> np.ndarray:
    """Z-Y-X (yaw about z, then pitch about y, then roll about x) angles rad (...) -> (..., 4) (w, x, y, z)."""
    cy, sy, cp, sp, cr, sr = np.cos(yaw / 2), np.sin(yaw / 2), np.cos(pitch / 2), np.sin(pitch / 2), np.cos(roll / 2), np.sin(roll / 2)
    return np.stack([cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy], -1)


def cape_input(Y: np.ndarray) -> np.ndarray:
    """Cape external input (Holden et al. 2019, section 6: the character's motion seen from the
    cloth's moving frame). Y (T, 7) body position m and quaternion -> (T, 15) float32:

        [v_t, omega_t, g_t, v_t - v_{t-1}, omega_t - omega_{t-1}]

    v_t = R_t^T (p_t - p_{t-1}) m/frame, omega_t the rotation vector of R_{t-1}^T R_t rad/frame
    (both in the body frame), g_t = R_t^T (0, 0, -1) the gravity direction in the body frame. The
    body frame is the cloth's frame, so the attachment's own position and rotation in it are
    constant and left out. The first frame has zero velocity and change."""
    Y = np.asarray(Y, np.float64)
    R = quat_to_matrix(Y[:, 3:7])
    dp = np.concatenate([np.zeros((1, 3)), np.diff(Y[:, :3], axis=0)])
    v = np.einsum("tji,tj->ti", R, dp)
    rel = np.concatenate([np.eye(3)[None], np.einsum("tji,tjk->tik", R[:-1], R[1:])])  # R_{t-1}^T R_t
    angle = np.arccos(np.clip((np.trace(rel, axis1=1, axis2=2) - 1) / 2, -1.0, 1.0))
    skew = np.stack([rel[:, 2, 1] - rel[:, 1, 2], rel[:, 0, 2] - rel[:, 2, 0], rel[:, 1, 0] - rel[:, 0, 1]], -1)
    scale = np.where(angle > 1e-8, angle / (2 * np.sin(np.maximum(angle, 1e-8))), 0.5)
    omega = skew * scale[:, None]
    g = np.einsum("tji,j->ti", R, np.array([0.0, 0.0, -1.0]))
    dv = np.concatenate([np.zeros((1, 3)), np.diff(v, axis=0)])
    domega = np.concatenate([np.zeros((1, 3)), np.diff(omega, axis=0)])
    return np.concatenate([v, omega, g, dv, domega], axis=-1).astype(np.float32)


@dataclass(frozen=True)
class CapeScene(SheetScene):
    """A cape: the cloth hangs behind a capsule "torso" (a mocap body) that walks, turns and leans
    along random smooth paths; its top row is attached to the torso by ``connect`` equality
    constraints (the vertices stay free bodies, so the torso's accelerations reach the cloth).

    X is recorded in the torso's frame (``R^T (x - p)``), Y (7,) is the torso's world position m
    and quaternion (w, x, y, z); :func:`cape_input` turns Y into the network input. The torso
    faces +y; the cape hangs in the local x-z plane ``gap_m`` behind the capsule's surface.
    """

    name: str = "cape"
    size: int = 21
    side_m: float = 0.8
    mass_kg: float = 0.3
    torso_radius_m: float = 0.15
    torso_half_m: float = 0.3  # half-length of the capsule's straight part (vertical)
    torso_height_m: float = 1.3
    gap_m: float = 0.03
    walk_m: float = 1.0  # waypoints within +-this of the origin (x, y)
    turn_deg: float = 90.0  # yaw change per segment within +-this
    lean_deg: float = 15.0  # pitch and roll within +-this
    move_seconds: tuple[float, float] = (0.6, 1.5)
    hold_seconds: tuple[float, float] = (0.0, 0.8)

    @property
    def pinned(self) -> np.ndarray:
        n = int(self.size)
        return np.arange(n) * n + (n - 1)  # the top row (attached to the torso)

    def _cloth_origin(self) -> tuple[float, float]:
        """Local (y, z) of the cloth grid's centre in the torso frame."""
        return -(self.torso_radius_m + self.gap_m), self.torso_half_m - self.side_m / 2

    def mjcf(self) -> str:
        n, sp = int(self.size), self.side_m / (int(self.size) - 1)
        y0, z0 = self._cloth_origin()
        h = self.torso_height_m
        torso = f"""    <body name="torso" mocap="true" pos="0 0 {h}">
      <geom type="capsule" size="{self.torso_radius_m} {self.torso_half_m}" rgba="0.3 0.4 0.8 1"/>
    </body>
"""
        anchors = "\n".join(
            f'    <connect body1="torso" body2="cloth_{i * n + n - 1}" anchor="{-self.side_m / 2 + i * sp:.6g} {y0:.6g} {self.torso_half_m:.6g}" solref="0.01 1"/>'
            for i in range(n))
        return self._mjcf(torso, (y0, h + z0), equality=anchors)

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(warmup + frames, 7) torso position and quaternion: smoothstep moves between random
        waypoints (position, yaw, lean) with random holds; the warm-up stands still."""
        total = frames + self.warmup_frames
        lean = np.radians(self.lean_deg)
        pose = np.array([0.0, 0.0, self.torso_height_m, 0.0, 0.0, 0.0])  # x, y, z, yaw, pitch, roll
        out, count = [np.repeat(pose[None], self.warmup_frames, axis=0)], self.warmup_frames
        while count < total:
            target = np.array([*rng.uniform(-self.walk_m, self.walk_m, 2), self.torso_height_m + rng.uniform(-0.1, 0.1),
                               pose[3] + np.radians(rng.uniform(-self.turn_deg, self.turn_deg)), *rng.uniform(-lean, lean, 2)])
            steps = max(2, int(round(rng.uniform(*self.move_seconds) * self.fps)))
            s = np.arange(1, steps + 1) / steps
            s = s * s * (3 - 2 * s)
            hold = int(round(rng.uniform(*self.hold_seconds) * self.fps))
            out += [pose[None] + s[:, None] * (target - pose)[None], np.repeat(target[None], hold, axis=0)]
            pose, count = target, count + steps + hold
        path = np.concatenate(out)[:total]
        return np.concatenate([path[:, :3], euler_to_quat(path[:, 3], path[:, 4], path[:, 5])], axis=1)

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        d.mocap_pos[0] = y[:3]
        d.mocap_quat[0] = y[3:7] / np.linalg.norm(y[3:7])

    def _record(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (x - y[:3]) @ quat_to_matrix(y[3:7] / np.linalg.norm(y[3:7]))

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = self.torso_radius_m + self.contact_radius_m
        capsule = np.array([[0, 0, -self.torso_half_m, 0, 0, self.torso_half_m, r]], np.float32)  # torso frame
        return np.zeros((0, 4), np.float32), capsule


SCENES = {"sheet": SheetScene, "flag": FlagScene, "cape": CapeScene}


def get_scene(name: str, **overrides: Any) -> SheetScene:
    """The scene called ``name`` with option overrides; ConfigError names the choices."""
    if name not in SCENES:
        raise ConfigError(f"unknown scene {name!r}; expected one of {list(SCENES)}")
    return SCENES[name].build(**overrides)


def scene_from_dict(options: dict) -> SheetScene:
    """The scene stored in a dataset's or run's JSON (``name`` plus its options)."""
    options = dict(options)
    return get_scene(options.pop("name"), **options)
