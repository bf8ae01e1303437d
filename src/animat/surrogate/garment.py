"""Garments on a moving character: a cape pinned at the shoulders (``cape-character``) and a skirt pinned at the
waist (``skirt-character``) on DeepMimic's humanoid3d (:mod:`animat.character`), played kinematically from motion
clips chained with blends, random heading changes and random playback speeds (Holden et al. 2019, section 6).

The model (``mujoco.MjSpec``): the character of :func:`animat.character.model.build_spec` (its collision geoms,
the floor) plus a flex cloth. The character is driven: before every physics substep its ``qpos``/``qvel`` are set
from the playback (linear between recorded frames, quaternions renormalised), so the cloth meets bodies that
move with their true velocities; an armature of ``KINEMATIC_ARMATURE`` on its dofs keeps the cloth's contacts
from moving it within the substep. The cloth is a ``<flex dim=2>`` with membrane elasticity, as the other cloth
scenes (:mod:`animat.surrogate.sheet`); every vertex is a world body (a point mass) with three slide joints. The
pinned vertices (the top row) are driven too: before every substep each is put at its fixed point ``p + R l`` of
the pin bone's frame (the chest for the cape, the pelvis for the skirt), with that point's velocity
``v_p + omega x R l``, so it follows the bone exactly and the cloth's implicit step knows where it goes. (A flex
vertex owned by the bone itself couples the character's dofs into MuJoCo's M + K solve, which then fails to
converge at every step; a moved jointless body has no velocity, and the cloth trails it by a substep's travel;
MuJoCo refuses flex elasticity on a mocap body.)

Warm-up: the character stands still in its rest pose (the model's ``qpos0``, where the cloth is built) for
``warmup_frames`` while the cloth settles; recording starts as the first clip blends in.

Per recorded frame: X (V, 3) float32 m, the cloth in the character's root frame
(:mod:`animat.surrogate.root_frame`); Y (105,) float32, the world frames of the 15 bodies (position m and
quaternion each, the root first). The external path that :meth:`SheetScene.simulate` steps through
(:meth:`GarmentScene.controls`) holds the character's ``qpos`` (43) and ``qvel`` (34) per frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from animat.character.bones import body_frames, body_ids, body_shapes
from animat.character.clip import NUM_JOINTS, Clip, load_clip, resolve_clip
from animat.character.playback import Playback, Segment, random_segments
from animat.config import require
from animat.errors import ConfigError
from animat.surrogate import cloth_mesh
from animat.surrogate.root_frame import from_root, to_root
from animat.surrogate.sheet import SheetScene, compile_flex_model

CHARACTER_BODIES = 15  # the humanoid's bodies: MuJoCo body ids 1..15 (in MuJoCo's order), the cloth's after
KINEMATIC_ARMATURE = 1e5  # kg (m²) on the driven dofs (character, pins): the cloth's contacts cannot move them
# The cloth's contacts: time constant 0.01 s instead of MuJoCo's 0.02 (still above two substeps, MuJoCo's floor
# for stability). Measured over 600 frames of each garment (seed 0): the deepest vertex of a frame inside the
# character's proxies, median / 90th percentile, cape 1.5 / 8.0 -> 0.6 / 5.1 mm, skirt 8.0 / 18 -> 4.4 / 11 mm; the
# largest stretch of a frame (99th percentile) cape 1.28 -> 1.40, skirt 1.15 -> 1.15. Stiffer still (solimp
# 0.95-0.99 as well): skirt 2.8 / 8.8 mm, but cape stretch 1.79 (the cloth pinched between limb and body).
CONTACT_SOLREF = (0.01, 1.0)
GARMENT_SCENES = ("cape-character", "skirt-character")  # the scenes below, by name
TRAINING_CLIPS = tuple(
    f"shared:humanoid3d_{name}.txt"
    for name in ("walk", "run", "jump", "kick", "punch", "spin", "roll", "getup_faceup", "getup_facedown")
)  # held out for evaluation: humanoid3d_jog and humanoid3d_dance_a


@dataclass(frozen=True)
class GarmentScene(SheetScene):
    """A garment of ``size`` x ``rows`` vertices (across or around, and from top to bottom) on the character
    playing random chains of ``clips`` (``shared:NAME`` or clip files in DeepMimic's format)."""

    name: str = "garment"
    size: int = 13
    rows: int = 25
    side_m: float = 0.9  # the garment's length from its pinned top down (the scale of errors in %)
    mass_kg: float = 0.3
    warmup_frames: int = 60
    gap_m: float = 0.03  # between the rest garment and the body it hangs from
    clips: tuple[str, ...] = TRAINING_CLIPS
    segment_seconds: tuple[float, float] = (2.0, 5.0)
    speeds: tuple[float, float] = (0.8, 1.2)
    max_turn_deg: float = 90.0
    blend_seconds: float = 0.3
    pin_body: ClassVar[str] = "root"
    POSITIVE: ClassVar[tuple[str, ...]] = (
        *SheetScene.POSITIVE,
        "blend_seconds",
        "width_m",
        "top_radius_m",
        "bottom_radius_m",
    )

    @classmethod
    def build(cls, **overrides: Any) -> GarmentScene:
        scene = super().build(**overrides)
        require("rows (vertices from top to bottom)", scene.rows, ge=3)
        require("speeds (lowest)", scene.speeds[0], gt=0)
        require("blend_seconds", scene.blend_seconds, gt=0, le=scene.segment_seconds[0])
        require("max_turn_deg", scene.max_turn_deg, le=360)
        scene.load_clips()  # a missing clip or one of another skeleton fails here, before anything is written
        return scene

    def load_clips(self) -> dict:
        """{name: Clip} of :attr:`clips`; ConfigError (none given, not found) or ClipError (not a humanoid3d clip)."""

        if not self.clips:
            raise ConfigError(f"{self.name}: give at least one clip in 'clips'")
        return {name: load_clip(resolve_clip(name)) for name in self.clips}

    @property
    def n_vertices(self) -> int:
        return int(self.size) * int(self.rows)

    @property
    def pinned(self) -> np.ndarray:
        return np.arange(int(self.size))  # the top row

    @cached_property
    def contact_radius_m(self) -> float:
        """The vertices' collision radius, m: a quarter of the top row's spacing, at most 5 mm (as the sheet's)."""
        vertices, _ = self.mesh()
        spacing = float(np.linalg.norm(vertices[1] - vertices[0]))
        return min(0.005, spacing / 4)

    def mesh(self) -> tuple[np.ndarray, np.ndarray]:
        """The garment at rest on the standing character: vertices (V, 3) m (world) and triangles (F, 3)."""
        raise NotImplementedError

    # --- the model -----------------------------------------------------------------------------
    def model(self):
        import mujoco

        from animat.character.model import build_spec

        spec = build_spec(ball_actuators=False)
        spec.option.timestep = self.timestep
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE  # flex elasticity needs it (sheet.py)
        spec.option.solver = mujoco.mjtSolver.mjSOL_CG
        spec.option.iterations = int(self.solver_iterations)
        spec.option.tolerance = 1e-6
        spec.memory = max(16, self.n_vertices // 10) * 2**20
        self._add_vertices(spec)
        m = compile_flex_model(spec.compile)
        cloth = np.arange(m.nbody) > CHARACTER_BODIES
        m.dof_damping[m.body_dofadr[cloth][:, None] + np.arange(3)] = self.air_damping_per_s * self._vertex_mass
        driven = np.isin(m.dof_bodyid, np.arange(CHARACTER_BODIES + 1)) | np.isin(
            m.dof_bodyid, CHARACTER_BODIES + 1 + self.pinned
        )
        m.dof_armature[driven] = KINEMATIC_ARMATURE  # the character and the pinned vertices
        m.flex_solref[:], m.geom_solref[:] = CONTACT_SOLREF, CONTACT_SOLREF
        return m

    @property
    def _vertex_mass(self) -> float:
        return self.mass_kg / self.n_vertices

    def _add_vertices(self, spec) -> None:
        """Every vertex a world body (a point mass) with three slide joints along the world axes, at its rest
        position, and the flex over them."""
        import mujoco

        vertices, triangles = self.mesh()
        for i, x in enumerate(vertices):
            body = spec.worldbody.add_body(name=f"cloth_{i}", pos=x.tolist())
            body.explicitinertial = True
            body.mass, body.inertia = self._vertex_mass, [1e-9] * 3
            for axis in np.eye(3):
                body.add_joint(type=mujoco.mjtJoint.mjJNT_SLIDE, axis=axis.tolist())
        flex = spec.add_flex()
        flex.name, flex.dim, flex.radius = "cloth", 2, self.contact_radius_m
        flex.vertbody, flex.elem = [f"cloth_{i}" for i in range(len(vertices))], triangles.ravel().tolist()
        flex.young, flex.poisson, flex.thickness = self.young_pa, self.poisson, self.thickness_m
        flex.elastic2d = {"stretch": 2, "both": 3}[self.elastic2d]  # MJCF's none | bend | stretch | both
        flex.condim, flex.selfcollide = 3, mujoco.mjtFlexSelf.mjFLEXSELF_NONE
        flex.rgba = [0.75, 0.2, 0.2, 1.0]

    # --- the character's motion ----------------------------------------------------------------
    def controls(self, frames: int, rng: np.random.Generator) -> np.ndarray:
        """(warmup + frames, 77) the character's ``qpos`` then ``qvel`` per frame: standing for the warm-up, then
        random clips chained (:func:`animat.character.playback.random_segments`)."""

        segments, _ = random_segments(
            self.load_clips(),
            int(frames) / self.fps + self.blend_seconds,
            rng,
            segment_seconds=self.segment_seconds,
            speeds=self.speeds,
            max_turn_deg=self.max_turn_deg,
            blend=self.blend_seconds,
        )
        return self.playback_path(segments, int(frames))

    def playback_path(self, segments: list, frames: int) -> np.ndarray:
        """(warmup + frames, 77) ``qpos`` and ``qvel`` of the standing warm-up followed by ``segments``
        (:class:`animat.character.playback.Segment`, the first not turned from the standing heading, +x),
        sampled at ``fps``; quaternions kept on one hemisphere from frame to frame."""
        import mujoco

        from animat.character.model import Layout, build_model, set_pose

        m = build_model(ball_actuators=False)
        d, layout = mujoco.MjData(m), Layout.of(m)
        warmup = self.warmup_frames / self.fps
        stand = Segment(standing_clip(m), max(warmup, 1e-3))
        blend = min([self.blend_seconds, stand.seconds] + [s.seconds for s in segments])
        playback = Playback([stand, *segments], blend=blend)
        total = int(frames) + self.warmup_frames
        path = np.empty((total, m.nq + m.nv))
        for i in range(total):
            set_pose(m, d, playback.sample(i / self.fps), layout)
            path[i] = np.concatenate([d.qpos, d.qvel])
        for q in _quaternion_slots(m, layout):
            flip = np.cumprod(np.where(np.sum(path[1:, q] * path[:-1, q], axis=1) < 0, -1.0, 1.0))
            path[1:, q] *= flip[:, None]
        return path

    def _setup(self, m, d) -> dict:
        """Called at the standing pose: where the character's qpos/qvel end, the quaternions among them, the pin
        bone, and the pinned vertices' qpos/dof addresses (P, 3), rest positions (P, 3) m and coordinates in the
        bone's frame (P, 3) m."""
        import mujoco

        from animat.character.model import Layout

        first = int(np.argmax(m.jnt_bodyid > CHARACTER_BODIES))  # the first vertex's joint
        bone = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, self.pin_body)
        joints = m.body_jntadr[CHARACTER_BODIES + 1 + self.pinned][:, None] + np.arange(3)
        rest = m.body_pos[CHARACTER_BODIES + 1 + self.pinned].copy()
        return {
            "nq": int(m.jnt_qposadr[first]),
            "nv": int(m.jnt_dofadr[first]),
            "quats": _quaternion_slots(m, Layout.of(m)),
            "bone": bone,
            "bodies": body_ids(m),
            "pin_qpos": m.jnt_qposadr[joints],
            "pin_dof": m.jnt_dofadr[joints],
            "pin_rest": rest,
            "pin_local": to_root(rest, d.xpos[bone], d.xquat[bone]),
            "jacp": np.zeros((3, m.nv)),
            "jacr": np.zeros((3, m.nv)),
        }

    def _apply(self, m, d, state: dict, y: np.ndarray) -> None:
        """Pose the character (``y``: a path row, qpos then qvel) and carry the pinned vertices with their bone:
        at its frame's point ``x = p + R l`` with the velocity ``v_p + omega x R l`` of that point."""
        import mujoco

        nq, nv = state["nq"], state["nv"]
        qpos = y[:nq].copy()
        for q in state["quats"]:
            qpos[q] /= np.linalg.norm(qpos[q])
        d.qpos[:nq] = qpos
        d.qvel[:nv] = y[nq : nq + nv]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        bone, jacp, jacr = state["bone"], state["jacp"], state["jacr"]
        mujoco.mj_jacBody(m, d, jacp, jacr, bone)
        arm = state["pin_local"] @ d.xmat[bone].reshape(3, 3).T  # R l, (P, 3) m
        d.qpos[state["pin_qpos"]] = d.xpos[bone] + arm - state["pin_rest"]
        d.qvel[state["pin_dof"]] = jacp[:, :nv] @ d.qvel[:nv] + np.cross(jacr[:, :nv] @ d.qvel[:nv], arm)

    def warmup_state(self) -> np.ndarray:
        """(105,) float32: the body frames of the standing character (the model's ``qpos0``)."""
        import mujoco

        from animat.character.model import build_model

        m = build_model(ball_actuators=False)
        d = mujoco.MjData(m)
        mujoco.mj_kinematics(m, d)
        return self._observed(m, d, {"bodies": body_ids(m)}, np.zeros(0)).astype(np.float32)

    def y_size(self, path_width: int) -> int:
        return CHARACTER_BODIES * 7

    def _observed(self, m, d, state: dict, y: np.ndarray) -> np.ndarray:
        """Y: the bodies' world frames in skeleton order as the last substep's kinematics placed them (the pose
        of ``y``)."""
        return body_frames(d, state["bodies"])

    def recorded_states(self, path: np.ndarray) -> np.ndarray:
        """(T, 105) float32: the body frames that :meth:`simulate` records for path rows ``path`` (T, 77), placed by
        the character's kinematics alone (quaternions renormalised, as :meth:`_apply` does)."""
        import mujoco

        from animat.character.model import Layout, build_model

        m = build_model(ball_actuators=False)
        d, state = mujoco.MjData(m), {"bodies": body_ids(m)}
        quats = _quaternion_slots(m, Layout.of(m))
        out = np.empty((len(path), CHARACTER_BODIES * 7), np.float32)
        for i, row in enumerate(np.asarray(path, np.float64)):
            d.qpos[:] = row[: m.nq]
            for q in quats:
                d.qpos[q] /= np.linalg.norm(d.qpos[q])
            mujoco.mj_kinematics(m, d)
            out[i] = self._observed(m, d, state, row)
        return out

    def model_qpos(self, m, X: np.ndarray, Y: np.ndarray, path: np.ndarray) -> np.ndarray:
        """(T, nq) full ``qpos`` of :meth:`model` ``m`` at recorded frames: the character's from the external path
        rows ``path`` (T, 77) of those frames, each vertex's slide joints from X (T, V, 3) (root frame) placed in the
        world by Y (T, 105) (e.g. to render the reference)."""
        first = int(np.argmax(m.jnt_bodyid > CHARACTER_BODIES))
        nq, rest = int(m.jnt_qposadr[first]), m.body_pos[CHARACTER_BODIES + 1 :][: self.n_vertices]
        world = np.stack([self.world(x, y) for x, y in zip(X, Y)])
        return np.concatenate([np.asarray(path)[:, :nq], (world - rest).reshape(len(X), -1)], axis=1)

    # --- frames and proxies ------------------------------------------------------------------------
    def record(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """World X (V, 3) -> the root frame of ``y`` (a path row or a recorded Y: both start with the root's
        position and quaternion)."""
        return to_root(x, y[:3], y[3:7])

    def world(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return from_root(X, y[:3], y[3:7])

    def stopped(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y)

    def proxies(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The character's spheres and capsules (:mod:`animat.character.bones`) in the root frame of Y (105,), grown by
        the cloth's contact radius: ``place_shapes(*bodies_in_root(y), pad)`` in one pass (:class:`RootShapes`)."""
        return self._root_shapes(y)

    @cached_property
    def _root_shapes(self) -> RootShapes:
        return RootShapes(self.contact_radius_m)


class RootShapes:
    """The character's shapes placed in the root frame of its body frames in one compiled call
    (:func:`animat.surrogate.kernel.place_in_root`), as the runtime needs them every frame: ~2 us, where the
    definition, ``place_shapes(*bodies_in_root(y), pad)``, takes ~100 us of NumPy calls."""

    def __init__(self, pad: float):

        sh = body_shapes()
        self.body = np.concatenate([sh.sphere_body, sh.capsule_body, sh.capsule_body]).astype(np.int64)  # (P,)
        self.local = np.ascontiguousarray(np.concatenate([sh.sphere_centre, sh.capsule_a, sh.capsule_b]), np.float64)
        self.spheres = np.zeros((len(sh.sphere_body), 4), np.float32)  # the radii, grown by pad; centres per call
        self.spheres[:, 3] = sh.sphere_radius + pad
        self.capsules = np.zeros((len(sh.capsule_body), 7), np.float32)
        self.capsules[:, 6] = sh.capsule_radius + pad

    def __call__(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Y (105,) -> new spheres (S, 4) and capsules (C, 7) float32 in the root frame (as ``proxies``)."""
        from animat.surrogate.kernel import place_in_root

        frames = np.ascontiguousarray(np.asarray(y, np.float64).reshape(CHARACTER_BODIES, 7))
        spheres, capsules = self.spheres.copy(), self.capsules.copy()
        place_in_root(frames, self.body, self.local, spheres, capsules)
        return spheres, capsules


def standing_clip(m) -> Any:
    """A two-frame one-shot clip of the model's rest pose (``qpos0``: root at its default height, every joint at
    identity), standing still, facing +x."""

    identity = np.array([1.0, 0.0, 0.0, 0.0])
    return Clip(
        loop="none",
        times=np.array([0.0, 1.0]),
        root_pos=np.repeat(np.asarray(m.qpos0[None, :3]), 2, axis=0),
        root_quat=np.repeat(identity[None], 2, axis=0),
        joint_quats=np.tile(identity, (2, NUM_JOINTS, 1)),
    )


def _quaternion_slots(m, layout) -> list[np.ndarray]:
    """qpos indices (4,) of the root's and each ball joint's quaternion."""
    return [np.arange(3, 7), *layout.ball_qpos]


@dataclass(frozen=True)
class CapeCharacterScene(GarmentScene):
    """A cape: a rectangle ``width_m`` wide and ``side_m`` long behind the back, its top row pinned to the chest
    at the height of the neck's base, ``gap_m`` behind the chest sphere."""

    name: str = "cape-character"
    width_m: float = 0.45
    pin_body: ClassVar[str] = "chest"

    def mesh(self) -> tuple[np.ndarray, np.ndarray]:
        from animat.character.model import DEFAULT_ROOT_HEIGHT, default_skeleton

        joints, bodies = default_skeleton().joints, default_skeleton().bodies
        chest_z = DEFAULT_ROOT_HEIGHT + joints[1].offset[1]  # Y-up offsets: y is up
        chest_radius = bodies[1].params[0] / 2
        top = chest_z + joints[2].offset[1]  # the neck joint's height
        x = bodies[1].offset[0] - chest_radius - self.gap_m
        return cloth_mesh.rectangle(int(self.size), int(self.rows), self.width_m, self.side_m, x, top)


@dataclass(frozen=True)
class SkirtCharacterScene(GarmentScene):
    """A skirt: a cone band around the pelvis, ``size`` vertices around and ``rows`` down, ``side_m`` high, from
    ``top_radius_m`` at ``waist_m`` above the root joint (its top ring pinned to the pelvis) out to
    ``bottom_radius_m``. The waist sits above the hip joints so that a thigh raised high meets the cloth, not the
    pinned ring (at the pelvis sphere's centre, 0.07 m, the ring was inside a thigh by up to 5 cm in deep hip
    flexion)."""

    name: str = "skirt-character"
    size: int = 32
    rows: int = 12
    side_m: float = 0.5
    waist_m: float = 0.12
    top_radius_m: float = 0.12
    bottom_radius_m: float = 0.32

    def mesh(self) -> tuple[np.ndarray, np.ndarray]:
        from animat.character.model import DEFAULT_ROOT_HEIGHT

        top = DEFAULT_ROOT_HEIGHT + self.waist_m
        return cloth_mesh.band(
            int(self.size), int(self.rows), self.top_radius_m, self.bottom_radius_m, self.side_m, top
        )
