"""The sheet scene and the machinery every cloth scene shares (MuJoCo flex cloth, recorded frame by frame).

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
change at random times; ``Y`` (3,) m/s is the wind vector (see :mod:`animat.surrogate.flag`).

``cape``: a cloth attached to a capsule torso moving along random paths; X in the torso's frame,
``Y`` (7,) its position and quaternion (see :mod:`animat.surrogate.cape`).

``cape-character``, ``skirt-character``: garments on the humanoid3d character playing chained motion clips; X in
the character's root frame, ``Y`` (105,) its body frames (see :mod:`animat.surrogate.garment`).

Each scene also names its collision proxies (:meth:`SheetScene.proxies`) for the runtime.

A frame is *bad* when a vertex is non-finite, an edge is longer than ``max_edge_ratio`` x its rest
length, or MuJoCo flagged an unstable acceleration (it then silently resets the state). The episode
is truncated at the first bad frame, so every stored episode is contiguous in time; the count of
frames lost is returned as ``dropped``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np

from animat.config import check_known, check_types, require
from animat.errors import ConfigError


def smoothstep_move(
    start: np.ndarray, target: np.ndarray, seconds: tuple[float, float], fps: float, rng: np.random.Generator
) -> np.ndarray:
    """(steps, D) a move from ``start`` (excluded) to ``target`` (the last row) with smoothstep easing
    3s^2 - 2s^3 (zero speed at both ends), lasting a uniform draw from ``seconds`` at ``fps`` (at least 2 frames)."""
    steps = max(2, int(round(rng.uniform(*seconds) * fps)))
    s = np.arange(1, steps + 1) / steps
    s = s * s * (3 - 2 * s)
    return start[None] + s[:, None] * (target - start)[None]


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
    # MuJoCo's 2-D flex elasticity: stretch (membrane only) | both (+ bending, plate stiffness
    # E t^3 / 12(1 - nu^2))
    elastic2d: str = "stretch"
    fps: int = 60
    substeps: int = 4
    solver_iterations: int = 30  # MuJoCo CG iterations per substep
    warmup_frames: int = 30
    ball_radius_m: float = 0.1
    top_z_m: float = 2.0
    max_edge_ratio: float = 3.0
    strike_seconds: tuple[float, float] = (0.5, 1.2)  # duration of one path segment
    hold_seconds: tuple[float, float] = (0.0, 1.0)  # pause at a point away from the cloth
    stop_anywhere: float = (
        0.0  # probability that a path segment also stops part-way for a hold (0: holds only away from the cloth)
    )
    mutable_state: ClassVar[tuple[str, ...]] = ()  # keys of _setup's state that _apply changes (kept in snapshots)
    # float options checked by build(): all >= 0 but SIGNED ones, POSITIVE ones > 0; ranges 0 <= low <= high
    SIGNED: ClassVar[tuple[str, ...]] = ("top_z_m", "torso_height_m")
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "side_m",
        "mass_kg",
        "young_pa",
        "thickness_m",
        "ball_radius_m",
        "max_edge_ratio",
        "torso_radius_m",
    )

    @classmethod
    def build(cls, **overrides: Any) -> SheetScene:
        check_known((f.name for f in fields(cls)), overrides, f"{cls.name} scene option")
        if "name" in overrides:
            raise ConfigError(
                f"scene option 'name' is set by the command's SCENE argument ({cls.name}); remove it from [scene]"
            )
        values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in overrides.items() if v is not None}
        check_types(cls, values)
        scene = replace(cls(), **values)
        for f in fields(cls):
            v = getattr(scene, f.name)
            if isinstance(v, tuple) and v and not isinstance(v[0], str) and not 0.0 <= v[0] <= v[1]:
                raise ConfigError(f"{f.name} must be a range [low, high] with 0 <= low <= high, got {list(v)}")
            if isinstance(v, float) and f.name not in cls.SIGNED:
                require(f.name, v, **({"gt": 0} if f.name in cls.POSITIVE else {"ge": 0}))
        require(f"{scene.name} size (vertices per side)", scene.size, ge=3)
        require("fps", scene.fps, gt=0)
        require("substeps", scene.substeps, gt=0)
        require("elastic2d", scene.elastic2d, choices=("stretch", "both"))
        require("stop_anywhere (a probability)", scene.stop_anywhere, ge=0, le=1)
        if int(scene.warmup_frames) < 0 or int(scene.solver_iterations) < 1 or not float(scene.poisson) < 0.5:
            raise ConfigError(
                f"need warmup_frames >= 0, solver_iterations >= 1 and poisson < 0.5, got {scene.warmup_frames}, "
                f"{scene.solver_iterations} and {scene.poisson}"
            )
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
  <option timestep="{self.timestep:.10g}" integrator="discrete" solver="CG" iterations="{int(self.solver_iterations)}" \
tolerance="1e-6"/>
  <size memory="{max(16, n * n // 20)}M"/>
  <worldbody>
{bodies}    <flexcomp name="cloth" type="grid" count="{n} {n} 1" spacing="{sp:.10g} {sp:.10g} {sp:.10g}" \
pos="0 {centre_yz[0]:.10g} {centre_yz[1]:.10g}"
              euler="90 0 0" radius="{self.contact_radius_m:.6g}" dim="2" mass="{self.mass_kg}">
      <elasticity young="{self.young_pa}" poisson="{self.poisson}" thickness="{self.thickness_m}" \
elastic2d="{self.elastic2d}"/>
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

        m = compile_flex_model(lambda: mujoco.MjModel.from_xml_string(self.mjcf()))
        vertex_mass = self.mass_kg / self.n_vertices
        m.dof_damping[:] = self.air_damping_per_s * vertex_mass
        return m

    # --- the sphere's path ---------------------------------------------------------------------
    def ball_path(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(frames + warmup, 3) sphere centres: waypoints alternating between points away from the
        cloth and points just through it, joined by smoothstep segments of random duration, with
        random holds at the away points; with probability ``stop_anywhere`` a segment also stops at a
        random frame for a hold of ``hold_seconds`` (the sphere stopped near or in the cloth, as when a
        game's object stops anywhere), then goes on to its target."""
        total = frames + self.warmup_frames
        half, cz, r = self.side_m / 2, self.top_z_m - self.side_m / 2, self.ball_radius_m
        away_y = (3 * r + 0.2, 3 * r + 0.6)

        def away(side: float) -> np.ndarray:
            return np.array([rng.uniform(-half, half), side * rng.uniform(*away_y), cz + rng.uniform(-half, half)])

        def through(side: float) -> np.ndarray:  # sphere centre pushed past the cloth plane
            return np.array(
                [rng.uniform(-0.8, 0.8) * half, -side * rng.uniform(0.0, 2 * r), cz + rng.uniform(-0.8, 0.8) * half]
            )

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
            segment = smoothstep_move(pos, target, self.strike_seconds, self.fps, rng)
            if self.stop_anywhere and rng.uniform() < self.stop_anywhere:  # no extra draw when 0: old paths unchanged
                cut = int(rng.integers(1, len(segment)))
                still = int(round(rng.uniform(*self.hold_seconds) * self.fps))
                segment = np.concatenate(
                    [segment[:cut], np.repeat(segment[cut - 1 : cut], still, axis=0), segment[cut:]]
                )
            out.append(segment)
            pos, striking, count = target, not striking, count + len(segment)
        return np.concatenate(out)[:total].astype(np.float64)

    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(warmup + frames, y) external state per frame (Y, recorded after the warm-up)."""
        return self.ball_path(frames, rng)

    def _setup(self, m, d) -> dict:
        return {}

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        """Impose the external input ``y`` before one physics substep."""
        d.mocap_pos[0] = y

    def warmup_state(self) -> np.ndarray:
        """(y_dim,) float32: Y during the warm-up (the first row of a drawn path)."""
        return self.controls(1, np.random.default_rng(0))[0].astype(np.float32)

    def y_size(self, path_width: int) -> int:
        """The width of a recorded Y for an external path of ``path_width`` columns (the sheet's: the same)."""
        return path_width

    def _observed(self, m, d, state: dict, y: np.ndarray) -> np.ndarray:
        """The recorded Y of a frame whose external path row is ``y``, after its last substep (the sheet's: ``y``)."""
        return y

    def recorded_states(self, path: np.ndarray) -> np.ndarray:
        """(T, y_dim) float32: the Y that :meth:`simulate` records for external path rows ``path`` (T, path width),
        without simulating the cloth (the sheet's: the rows themselves)."""
        return np.asarray(path, np.float32)

    def record(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """World vertex positions (V, 3) -> the recorded X frame (the sheet and flag: unchanged)."""
        return x

    def world(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Recorded X frame (V, 3) with external state ``y`` -> world positions: the inverse of :meth:`record`."""
        return np.asarray(X, np.float64)

    def set_vertices(self, m, d, state: dict, x: np.ndarray, v: np.ndarray) -> None:
        """Set the free vertices' world positions ``x`` (V, 3) m and velocities ``v`` (V, 3) m/s (pinned
        vertices keep theirs). Each free flex vertex is a child body of the world with three
        orthogonal slide joints (flexcomp's ``dof="full"``), so ``qpos_j = a_j . (x - body_pos)`` and
        ``qvel_j = a_j . v`` with ``a_j`` the joint's world axis."""
        import mujoco

        bodies = np.asarray(m.flex_vertbodyid)
        free = np.flatnonzero(m.body_jntnum[bodies] > 0)
        b = bodies[free]
        if np.any(m.body_jntnum[b] != 3) or np.any(m.body_parentid[b] != 0):
            raise ConfigError(
                f"{self.name}: set_vertices needs flex vertices that are world bodies with 3 slide joints each"
            )
        for c in range(3):
            j = m.body_jntadr[b] + c
            axis = d.xaxis[j]
            d.qpos[m.jnt_qposadr[j]] = np.einsum("ij,ij->i", axis, x[free] - m.body_pos[b])
            d.qvel[m.jnt_dofadr[j]] = np.einsum("ij,ij->i", axis, v[free])
        mujoco.mj_forward(m, d)

    @property
    def contact_radius_m(self) -> float:
        """The flex vertices' collision radius (as in :meth:`mjcf`)."""
        return min(0.005, self.side_m / (int(self.size) - 1) / 4)

    def stopped(self, y: np.ndarray) -> np.ndarray:
        """External state(s) ``y`` (..., y_dim) with the external objects stopped where they are:
        the sphere (and the cape's torso, whose velocities are differences of Y) held in place."""
        return np.asarray(y)

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Collision proxies in the recorded X frame for external state ``y``: spheres (S, 4)
        ``[centre, radius]`` and capsules (C, 7) ``[a, b, radius]`` in metres (radii include the
        cloth's contact radius)."""
        sphere = np.empty((1, 4), np.float32)  # filled in place: a third of the per-frame cost of concatenating
        sphere[0, :3] = y[:3]
        sphere[0, 3] = self.ball_radius_m + self.contact_radius_m
        return sphere, np.zeros((0, 7), np.float32)

    # --- one episode ---------------------------------------------------------------------------
    def simulate(
        self,
        frames: int,
        seed: int | np.random.SeedSequence | None = None,
        *,
        path: np.ndarray | None = None,
        restart: tuple[int, np.ndarray, np.ndarray] | None = None,
        snapshots: Sequence[int] = (),
        resume: dict | None = None,
    ) -> dict:
        """Run one episode; returns X (T, V, 3), Y (T, y) float32 with T <= frames, ``dropped``
        (frames lost after the reference misbehaved) and ``seconds_per_frame`` (reference cost).

        The external path is drawn by :meth:`controls` from ``seed``, or given as ``path``
        (warmup + frames, y) in Y's units, warm-up included (e.g. a drawn path, perturbed).
        ``restart = (r, x, v)`` sets the free vertices to world positions ``x`` (V, 3) m and
        velocities ``v`` (V, 3) m/s (:meth:`set_vertices`) before recorded frame ``r``'s last
        substep: a recorded frame holds the positions at the start of its last substep (MuJoCo
        computes ``flexvert_xpos`` before integrating), so the recorded ``X[r]`` is ``x``.

        ``snapshots``: recorded frame indices ``r``; the run's state at the point where a restart at
        ``r`` applies (MuJoCo's ``mjSTATE_INTEGRATION`` state, warm start included, the scene's own
        state and the frames recorded so far) is returned in ``result["snapshots"][r]``.
        ``resume``: such a snapshot, of a run whose path agrees with ``path`` up to frame ``r``
        (path index ``warmup + r``): the run continues from there (a ``restart`` at ``r`` still
        applies), bit for bit as if it had been simulated from the start."""
        import mujoco

        path = self._episode_path(frames, seed, path)
        m, d, state, edges, rest, X, Y = self._episode_start(frames, path)
        saved, wanted = {}, {self.warmup_frames + int(r) for r in snapshots}
        kept = self._resume(m, d, state, resume, frames, X, Y) if resume is not None else 0
        first = self.warmup_frames + kept if resume is not None else 0
        prev = path[max(first - 1, 0)]
        warnings_before = _reset_warnings(d)
        start = time.perf_counter()
        for i in range(first, len(path)):
            for k in range(self.substeps if i == first and resume is not None else 1, self.substeps + 1):
                if k == self.substeps:  # where a snapshot is taken and a restart applies
                    self._last_substep(m, d, state, i, saved if i in wanted else None, restart, X[:kept], Y[:kept])
                self._apply(m, d, state, prev + (path[i] - prev) * (k / self.substeps))
                mujoco.mj_step(m, d)
            prev = path[i]
            if i < self.warmup_frames:
                continue
            x = d.flexvert_xpos
            if _reset_warnings(d) != warnings_before or not self._healthy(x, edges, rest):
                break
            X[kept] = self.record(x, path[i])
            Y[kept] = self._observed(m, d, state, path[i])
            kept += 1
        elapsed = time.perf_counter() - start
        return {
            "X": X[:kept],
            "Y": Y[:kept],
            "dropped": int(frames - kept),
            "seconds_per_frame": elapsed / max(1, i + 1 - first),
            **({"snapshots": saved} if snapshots else {}),
        }

    def _episode_start(self, frames: int, path: np.ndarray):
        """``(model, data, state, edges, rest lengths, X, Y)`` of a new episode along ``path`` (warm-up + frames,
        y): MuJoCo's model and data, forwarded, with the scene's state (:meth:`_setup`), the flex's edges (E, 2) and
        their rest lengths (E,) m, and empty buffers X (frames, V, 3) and Y (frames, y) float32."""
        import mujoco

        m = self.model()
        d = mujoco.MjData(m)
        edges = m.flex_edge.reshape(-1, 2)
        mujoco.mj_forward(m, d)
        state = self._setup(m, d)  # after mj_forward: the vertex positions are set
        x0 = d.flexvert_xpos.copy()
        rest = np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)
        X = np.empty((frames, self.n_vertices, 3), np.float32)
        Y = np.empty((frames, self.y_size(path.shape[1])), np.float32)
        return m, d, state, edges, rest, X, Y

    def _last_substep(self, m, d, state, i: int, saved: dict | None, restart, X: np.ndarray, Y: np.ndarray) -> None:
        """Before path frame ``i``'s last substep: its snapshot into ``saved`` (None: none wanted; ``X``, ``Y``: the
        frames recorded so far), then the ``restart`` ``(r, x, v)`` where ``i`` is recorded frame ``r``."""
        if saved is not None:
            saved[i - self.warmup_frames] = self._snapshot(m, d, state, X, Y)
        if restart is not None and i == self.warmup_frames + int(restart[0]):
            self.set_vertices(m, d, state, np.asarray(restart[1], np.float64), np.asarray(restart[2], np.float64))

    def _episode_path(self, frames: int, seed, path: np.ndarray | None) -> np.ndarray:
        """The external path (warm-up + frames, y): drawn from ``seed``, or ``path`` checked."""
        require("frames", frames, gt=0)
        if (seed is None) == (path is None):
            raise ConfigError("simulate needs exactly one of a seed and an external path")
        if path is None:
            return self.controls(int(frames), np.random.default_rng(seed))
        path = np.asarray(path, np.float64)
        if path.ndim != 2 or len(path) != int(frames) + self.warmup_frames or not np.isfinite(path).all():
            raise ConfigError(
                f"the external path must be finite, of shape ({int(frames) + self.warmup_frames}, y) "
                f"(warm-up + frames), got shape {path.shape}"
            )
        return path

    def _resume(self, m, d, state: dict, resume: dict, frames: int, X: np.ndarray, Y: np.ndarray) -> int:
        """Restore :meth:`_snapshot`'s ``resume`` into ``m, d, state`` and the recorded ``X, Y``; returns its frame."""
        import mujoco

        kept = int(resume["frame"])
        if not 0 <= kept < int(frames):
            raise ConfigError(f"cannot resume at frame {kept} a run of {frames} frames")
        X[:kept], Y[:kept] = resume["X"], resume["Y"]
        mujoco.mj_setState(m, d, resume["mj"], mujoco.mjtState.mjSTATE_INTEGRATION)
        d.flexvert_xpos[:] = resume["xpos"]  # as the last mj_step left it: the positions at that substep's start
        state.update({key: np.array(v, copy=True) for key, v in resume["scene"].items()})
        return kept

    def _healthy(self, x: np.ndarray, edges: np.ndarray, rest: np.ndarray) -> bool:
        """Finite vertices ``x`` (V, 3) m and no edge stretched past ``max_edge_ratio`` times its rest length."""
        if not np.isfinite(x).all():
            return False
        lengths = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        return bool(np.all(lengths <= self.max_edge_ratio * rest))

    def _snapshot(self, m, d, state: dict, X: np.ndarray, Y: np.ndarray) -> dict:
        """What :meth:`simulate`'s ``resume`` needs to continue from here: the recorded frames so far
        as views (a run never rewrites them), the rest as copies."""
        import mujoco

        spec = mujoco.mjtState.mjSTATE_INTEGRATION  # everything mj_step reads, warm start included
        mj = np.empty(mujoco.mj_stateSize(m, spec))
        mujoco.mj_getState(m, d, mj, spec)
        scene = {key: v.copy() for key, v in state.items() if key in self.mutable_state}
        return {"frame": len(X), "mj": mj, "xpos": d.flexvert_xpos.copy(), "scene": scene, "X": X, "Y": Y}

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


def compile_flex_model(compile_model: Callable[[], Any]):
    """``compile_model()`` (an MjModel) with MuJoCo's compiler warning that the flex "has no equality constraints
    or passive forces" swallowed (MuJoCo 4.0 gives it although the discrete integrator applies its
    ``<elasticity>``); other warnings are passed on as RuntimeWarnings."""
    import mujoco

    messages: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(messages.append)
    try:
        with warnings.catch_warnings(record=True) as caught:  # MjSpec.compile warns through Python
            warnings.simplefilter("always")
            m = compile_model()
    finally:
        mujoco.set_mju_user_warning(previous)
    for msg in messages + [str(w.message) for w in caught]:
        if "no equality constraints or passive forces" not in msg:
            warnings.warn(f"MuJoCo: {msg}", RuntimeWarning, stacklevel=3)
    return m


def _reset_warnings(d) -> int:
    """How many times MuJoCo reset ``d`` to rest on a bad position, velocity or acceleration (mj_checkPos/Vel/Acc):
    the cloth is then finite with rest-length edges, so only these warning counters show the reset."""
    import mujoco

    bad = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQACC)
    return sum(int(d.warning[int(w)].number) for w in bad)
