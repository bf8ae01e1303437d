"""The skier: a 57.4 kg humanoid on skis with poles, and its flat slippery world, built with ``mujoco.MjSpec``.

Frames: world z up, skiing direction +x, y to the skier's left. Joint angles in radians in code,
degrees in genes and configs.

Joints (the gene's 12 columns, in order), ranges in degrees, axes in the parent's frame:

============  =========  ===================================================================
column        range      axis (positive direction)
============  =========  ===================================================================
head          -30..30    lateral (-y): positive tilts the head back
torso         0..40      lateral (+y) at the waist: positive leans forward
l/r shoulder  -80..80    lateral (-y): positive swings the arm forward
l/r elbow     0..160     lateral (-y): positive bends the forearm forward/up
l/r hand      0..90      the forearm's long axis (z; mirrored, -z, on the right): positive turns
                         the pole tip inwards (towards the body's midline; at 90 it points across
                         behind the body)
l/r hip       -45..45    one axis in the hip's x-z (forward-vertical) plane, tilted ``hip_tilt_deg``
                         from vertical towards +x (default -45: towards -x); the same axis on both
                         legs, so with the default a positive angle turns the left leg's toe out and
                         draws the leg in, a negative one turns the toe in and spreads the leg, and
                         the right leg needs the opposite sign for the mirror-image motion (see
                         :mod:`animat.skier.gene`)
l/r knee      0..60      lateral (+y): positive flexes the knee (shank backwards)
============  =========  ===================================================================

Two-axis hip (``hip = "two-axis"``, the issue's option): each hip has two independent hinges, and
the gene two more columns, appended (``left_hip_spread``, ``right_hip_spread``, -45..45) so the
first 12 keep their meaning. ``l/r hip`` then turns about the vertical axis (positive: left toe
out) and ``l/r hip_spread`` about the forward axis (positive: left leg out); both are the same axis
on both legs, so the mirror flips both signs; each spread column joins its leg's crossover group.
The one-axis hip is the two combined with a fixed ratio (a 45 deg tilt: equal parts), so a leg
toes out exactly as much as it spreads (tilt +45) or closes (tilt -45): on skis that only glide along
their length and stay loaded, opening and closing then move the body forward and back by the same
amount, and whatever the hip adds comes from skidding, unloading and momentum. Which sign of the
tilt (the issue leaves it open) is measured, not derived: -45 evolves farther skiers than +45 on every
seed tried, and the hips held still or a vertical or forward axis do worse (RESULTS.md, 'Measurements behind the code').
With -45 the leg spreads toed in while squatting and closes toed out while rising, its foot moving
slightly forward (the second-order motion of a tilted hinge) instead of back. Two axes let a leg open
toed-out and close toed-in (a swizzle, as on roller skates): a hand-made swizzle gene goes far without
falling on anisotropic skis and nowhere on isotropic ones (tests/skier/test_hip.py).

The original program's "X" axis is the lateral (flexion) axis and its "Y" axis is the limb's long
axis (it was Y-up); its "Y-Z plane" of the hip is our x-z plane. Everything else (ankles, the
skis on the boots, the poles in the hands) is rigid. Each moving joint has a PD servo (MuJoCo
position actuator, gain ``kp`` and damping ``kv`` per group) whose control is the target angle.

Friction cone: pyramidal by default, not the issue's elliptic. With MuJoCo's elliptic cone and a 12:1 ratio
of the ski's two coefficients, the skier standing still on anisotropic skis is thrown over within a second
as soon as a joint moves (a slow symmetric hip swing lifts the pelvis 0.6 m in 0.4 s; smaller time
steps, more solver iterations, impratio or stiffer contacts do not cure it), while isotropic skis and
the pyramidal cone with the same coefficients are calm. A single sliding ski decelerates at mu g along and
across its axis, yawed or not, with either cone (tests/skier/test_model.py); ``cone = "elliptic"``
remains an option.

Friction. The original gave static/dynamic pairs: plane 0.6/0.1, skis 0.6/0.3, poles 0.6/0.3, and
its engine (PhysX, "average" combine mode) used ski-plane 0.6 static / 0.2 dynamic. MuJoCo's
friction is one coefficient per tangent direction (Coulomb, no static/dynamic split), and the
contacts are explicit pairs, so the pair carries the coefficients directly:

* ``isotropic`` (reproduces the original): ski-plane mu = 0.2 in every direction (the dynamic
  coefficient, since a ski mostly slides); pole-plane mu = 0.6 (the static one, since a planted
  pole tip does not slide).
* ``anisotropic`` (default; what the original's author lacked for edging): ski-plane
  mu_long = 0.05 along the ski (waxed ski on snow) and mu_lat = 0.6 across it (an edge that
  grips); poles as above.

Why capsules: for a plane-capsule contact MuJoCo aligns the contact frame's first tangent with the
capsule's axis, so ``friction[0]`` acts along the ski whatever its yaw. For a plane-box contact
the tangents are built from the plane normal alone (fixed in the world), so a yawed box-shaped
ski would keep gliding along world x, not along its length (tests/skier/test_model.py shows both).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

import mujoco
import numpy as np

from animat.config import check_instance, check_known, check_types, is_finite_number, option
from animat.errors import ConfigError
from animat.skier import terrain as T
from animat.skier.effort import add_servo_sensors
from animat.skier.modes import FRICTION_MODES, HIP_MODES, TERRAINS

JOINTS: tuple[str, ...] = (
    "head",
    "torso",
    "left_shoulder",
    "left_elbow",
    "left_hand",
    "left_hip",
    "left_knee",
    "right_shoulder",
    "right_elbow",
    "right_hand",
    "right_hip",
    "right_knee",
)
# the two-axis hip's second axis: two more gene columns, appended so the first 12 keep their meaning
SPREAD_JOINTS: tuple[str, ...] = ("left_hip_spread", "right_hip_spread")
# ranges in degrees, integer (the gene holds integers)
RANGES_DEG: dict[str, tuple[int, int]] = {
    "head": (-30, 30),
    "torso": (0, 40),
    "shoulder": (-80, 80),
    "elbow": (0, 160),
    "hand": (0, 90),
    "hip": (-45, 45),
    "knee": (0, 60),
    "hip_spread": (-45, 45),
}
# body groups for crossover: column indices
GROUPS: dict[str, tuple[int, ...]] = {
    "head": (0,),
    "torso": (1,),
    "left_arm": (2, 3, 4),
    "left_leg": (5, 6),
    "right_arm": (7, 8, 9),
    "right_leg": (10, 11),
}
# masses, kg (sum 57.4, skis and poles included)
MASSES: dict[str, float] = {
    "pelvis": 8.0,
    "torso": 17.8,
    "head": 4.5,
    "upper_arm": 1.5,
    "forearm": 1.0,
    "hand": 0.4,
    "thigh": 6.0,
    "shank": 3.0,
    "ski": 1.5,
    "pole": 0.15,
}
TOTAL_MASS = 57.4
CONES = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}
# PD servo gains per joint group, N m/rad (kp) and N m s/rad (kv): stiff enough to hold a 57 kg body and push on
# the poles
DEFAULT_GAINS = {
    "kp": {"head": 20.0, "torso": 400.0, "shoulder": 300.0, "elbow": 200.0, "hand": 20.0, "hip": 500.0, "knee": 500.0},
    "kv": {"head": 2.0, "torso": 40.0, "shoulder": 30.0, "elbow": 20.0, "hand": 2.0, "hip": 50.0, "knee": 50.0},
}
G = 9.81


def joint_kind(name: str) -> str:
    return name.split("_", 1)[1] if "_" in name else name


def joint_names(n_joints: int = len(JOINTS)) -> tuple[str, ...]:
    """The gene's columns: 12 with the one-axis hip, 14 (the two spread axes appended) with the two-axis hip."""
    if n_joints == len(JOINTS):
        return JOINTS
    if n_joints == len(JOINTS) + len(SPREAD_JOINTS):
        return JOINTS + SPREAD_JOINTS
    raise ConfigError(
        f"a skier gene has {len(JOINTS)} (one-axis hip) or {len(JOINTS) + len(SPREAD_JOINTS)} (two-axis hip) joints, "
        f"got {n_joints}"
    )


def hip_joints(hip: str) -> int:
    """Number of gene columns for hip mode ``hip``."""
    return len(JOINTS) + (len(SPREAD_JOINTS) if hip == "two-axis" else 0)


def groups(n_joints: int = len(JOINTS)) -> dict[str, tuple[int, ...]]:
    """Crossover groups: :data:`GROUPS`, with each leg's spread column joining its leg for the two-axis hip."""
    if n_joints == len(JOINTS):
        return GROUPS
    names = joint_names(n_joints)
    return {
        **GROUPS,
        **{f"{side}_leg": GROUPS[f"{side}_leg"] + (names.index(f"{side}_hip_spread"),) for side in ("left", "right")},
    }


def joint_ranges_deg(n_joints: int = len(JOINTS)) -> np.ndarray:
    """(m, 2) int: [low, high] of each gene column, degrees."""
    return np.array([RANGES_DEG[joint_kind(j)] for j in joint_names(n_joints)], dtype=np.int64)


@dataclass
class SkierParams:
    """Body and world parameters (SI units; angles in degrees)."""

    friction: str = option("anisotropic", "anisotropic | isotropic", choices=FRICTION_MODES)
    mu_long: float = option(0.05, "Anisotropic ski: friction along the ski", gt=0)
    mu_lat: float = option(0.6, "Anisotropic ski: friction across the ski (edge grip)", gt=0)
    mu_iso: float = option(0.2, "Isotropic ski (the original's dynamic ski-plane coefficient)", gt=0)
    mu_pole: float = option(0.6, "Pole tip on the plane", gt=0)
    timestep: float = option(
        0.01, "s (0.01 with 10 solver iterations: stable for random genes and 2x faster than 0.005)", gt=0
    )
    hip_tilt_deg: float = option(
        -45.0, "One-axis hip: its axis, from vertical towards +x (-45: towards -x; see the module docstring)"
    )
    ski_length: float = option(1.6, "m", gt=0)
    ski_radius: float = option(0.02, "m", gt=0)
    # pole: tilted backwards from the forearm axis; at 1.05 m its tip hangs 4 cm above the plane behind the feet
    # with the arms
    # hanging, so swinging the arms forward plants and pushes it (at 1.0 m it barely reached the plane)
    pole_length: float = option(1.05, "m", gt=0)
    pole_angle_deg: float = option(30.0, "Pole tilt backwards from the forearm axis, degrees")
    # PD servos (DEFAULT_GAINS; a partial table in [skier] changes only the joints it names)
    kp: dict = option(help="PD servo stiffness per joint kind", factory=lambda: dict(DEFAULT_GAINS["kp"]))
    kv: dict = option(help="PD servo damping per joint kind", factory=lambda: dict(DEFAULT_GAINS["kv"]))
    # rotor-like inertia added to every joint, kg m^2: with 0.02 light limbs (a hand turning a pole) made
    # the 0.01 s step diverge; 0.1 keeps it stable (tests/skier/test_model.py stands still for 20 s)
    armature: float = option(0.1, "Rotor-like inertia added to every joint, kg m^2", gt=0)
    iterations: int = option(10, "Solver iterations", ge=1)
    ls_iterations: int = option(10, "Line-search iterations", ge=1)
    cone: str = option(
        "pyramidal", "Friction cone: pyramidal | elliptic (see the module docstring)", choices=sorted(CONES)
    )
    hip: str = option(
        "one-axis",
        "one-axis: one tilted hinge (the original) | two-axis: vertical and forward hinges",
        choices=HIP_MODES,
    )
    # the ground (issue 49; animat.skier.terrain)
    terrain: str = option("flat", "flat | slope (an inclined plane) | moguls (a height field)", choices=TERRAINS)
    slope_deg: float = option(0.0, "Slope: its angle, degrees (positive: uphill along the course)", gt=-45, lt=45)
    bump_height: float = option(0.2, "Moguls: each bump's height, m", ge=0)
    bump_spacing: float = option(3.0, "Moguls: the pitch of their lattice, m", gt=0)
    irregularity: float = option(0.0, "Moguls: each bump moved by up to this times a quarter pitch", ge=0, le=1)
    terrain_seed: int = option(0, "Moguls: the seed of that jitter", ge=0)
    OPTION_NAME: ClassVar[str] = "skier {name}"
    OPTION_TYPED: ClassVar[bool] = True  # "skier iterations must be an integer >= 1"

    def validate(self) -> SkierParams:
        check_instance(self)
        for name in ("kp", "kv"):
            gains = getattr(self, name)
            if set(gains) != set(DEFAULT_GAINS[name]) or not all(
                is_finite_number(v) and v >= 0 for v in gains.values()
            ):
                raise ConfigError(
                    f"skier {name} must give a finite gain >= 0 for each of {sorted(DEFAULT_GAINS[name])}, got {gains}"
                )
        return self

    def ski_friction(self) -> tuple[float, float]:
        """(along, across) friction coefficients of a ski on the plane."""
        if self.friction == "isotropic":
            return (self.mu_iso, self.mu_iso)
        return (self.mu_long, self.mu_lat)

    def ground(self) -> T.Terrain:
        """The :class:`~animat.skier.terrain.Terrain` these options describe."""
        return T.Terrain(
            self.terrain, self.slope_deg, self.bump_height, self.bump_spacing, self.irregularity, self.terrain_seed
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> SkierParams:
        values = dict(values or {})
        check_known((f.name for f in fields(cls)), values, "skier option")
        check_types(cls, values)  # wrong types, NaN and inf: one line, before any arithmetic
        for name in ("kp", "kv"):  # a partial table changes those gains only
            if name in values:
                values[name] = {**DEFAULT_GAINS[name], **values[name]}
        return cls(**values).validate()


def _geom(body, name, gtype, size, mass, rgba, *, pos=None, fromto=None, quat=None):
    g = body.add_geom()
    g.name = name
    g.type = gtype
    g.size = list(size) + [0.0] * (3 - len(size))
    if fromto is not None:
        g.fromto = fromto
    if pos is not None:
        g.pos = pos
    if quat is not None:
        g.quat = quat
    g.mass = mass
    g.contype = 2  # body parts touch the floor (floor: contype 1, conaffinity 2), never each other;
    g.conaffinity = 1  # skis and poles are switched off here and touch the floor through explicit pairs
    g.rgba = rgba
    return g


def _hinge(body, name, axis, rng_deg, armature, pos=(0, 0, 0)):
    j = body.add_joint()
    j.name = name
    j.type = mujoco.mjtJoint.mjJNT_HINGE
    j.axis = list(axis)
    j.pos = list(pos)
    j.range = [math.radians(rng_deg[0]), math.radians(rng_deg[1])]
    j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
    j.armature = armature
    return j


CAP, SPHERE = mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_SPHERE
SKIN, CLOTH, SKI_RGBA, POLE_RGBA = [0.9, 0.75, 0.6, 1], [0.2, 0.4, 0.8, 1], [0.9, 0.1, 0.1, 1], [0.3, 0.3, 0.3, 1]
SHANK_LEN, THIGH_LEN = 0.45, 0.42  # m


def build_spec(params: SkierParams | None = None) -> mujoco.MjSpec:
    """The skier and its plane as an ``MjSpec`` (see the module docstring)."""
    p = (params or SkierParams()).validate()
    spec = mujoco.MjSpec()
    spec.modelname = "skier"
    _set_options(spec, p)
    _add_world(spec.worldbody)
    ankle_z = 2 * p.ski_radius + 0.03  # ankle height above the ski's running surface
    pelvis = spec.worldbody.add_body()
    pelvis.name = "pelvis"
    pelvis.pos = [0, 0, ankle_z + SHANK_LEN + THIGH_LEN + 0.05]
    fj = pelvis.add_freejoint()
    fj.name = "root"
    _geom(pelvis, "pelvis", CAP, [0.09], MASSES["pelvis"], CLOTH, fromto=[0, -0.09, 0, 0, 0.09, 0])
    torso = _add_trunk(pelvis, p)
    for side, sy in (("left", 1.0), ("right", -1.0)):
        _add_arm(torso, side, sy, p)
        _add_leg(pelvis, side, sy, p, ankle_z)
    _add_contacts(spec, p)
    add_ski_sensors(spec)
    _add_servos(spec, p)
    add_servo_sensors(spec, list(joint_names(hip_joints(p.hip))))  # after the skis' sensors: their columns stay
    T.shape_world(spec, p.ground(), p.ski_friction(), p.mu_pole)
    return spec


def _set_options(spec: mujoco.MjSpec, p: SkierParams) -> None:
    spec.compiler.degree = False  # angles below are in radians
    spec.option.timestep = p.timestep
    spec.option.cone = CONES[p.cone]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.iterations = int(p.iterations)
    spec.option.ls_iterations = int(p.ls_iterations)
    spec.option.gravity = [0, 0, -G]
    # no solver warm start: each step's result depends on the state only, not on the previous step's solver
    # guess, so a rollout continued from a saved state, on any thread, repeats the motion bit for bit
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_WARMSTART


def _add_world(world) -> None:
    """The snow (an infinite plane named ``floor``) and a light above it."""
    floor = world.add_geom()
    floor.name = "floor"
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [0, 0, 0.1]
    floor.contype = 1
    floor.conaffinity = 2
    floor.friction = [0.6, 0.005, 0.0001]
    floor.rgba = [0.92, 0.95, 1.0, 1]
    light = world.add_light()
    light.pos = [0, 0, 5]
    light.dir = [0, 0, -1]


def _add_trunk(pelvis, p: SkierParams):
    """The torso on its waist hinge and the head on the torso; returns the torso body."""
    torso = pelvis.add_body()
    torso.name = "torso"
    torso.pos = [0, 0, 0.08]
    _hinge(torso, "torso", (0, 1, 0), RANGES_DEG["torso"], p.armature)
    _geom(torso, "torso", CAP, [0.11], MASSES["torso"], CLOTH, fromto=[0, 0, 0.08, 0, 0, 0.36])
    head = torso.add_body()
    head.name = "head"
    head.pos = [0, 0, 0.5]
    _hinge(head, "head", (0, -1, 0), RANGES_DEG["head"], p.armature)
    _geom(head, "head", SPHERE, [0.1], MASSES["head"], SKIN, pos=[0, 0, 0.08])
    return torso


def _add_arm(torso, side: str, sy: float, p: SkierParams) -> None:
    """Upper arm, forearm, hand and its pole on one side (``sy`` +1 left, -1 right)."""
    ua = torso.add_body()
    ua.name = f"{side}_upper_arm"
    ua.pos = [0, sy * 0.19, 0.42]
    _hinge(ua, f"{side}_shoulder", (0, -1, 0), RANGES_DEG["shoulder"], p.armature)
    _geom(ua, f"{side}_upper_arm", CAP, [0.04], MASSES["upper_arm"], CLOTH, fromto=[0, 0, 0, 0, 0, -0.28])
    fa = ua.add_body()
    fa.name = f"{side}_forearm"
    fa.pos = [0, 0, -0.28]
    _hinge(fa, f"{side}_elbow", (0, -1, 0), RANGES_DEG["elbow"], p.armature)
    _geom(fa, f"{side}_forearm", CAP, [0.035], MASSES["forearm"], SKIN, fromto=[0, 0, 0, 0, 0, -0.24])
    hand = fa.add_body()
    hand.name = f"{side}_hand"
    hand.pos = [0, 0, -0.26]
    _hinge(hand, f"{side}_hand", (0, 0, sy), RANGES_DEG["hand"], p.armature)  # mirrored axis on the right
    _geom(hand, f"{side}_hand", SPHERE, [0.04], MASSES["hand"], SKIN)
    pole_a = math.radians(p.pole_angle_deg)
    tip = [-p.pole_length * math.sin(pole_a), 0.0, -p.pole_length * math.cos(pole_a)]
    pole = _geom(hand, f"{side}_pole", CAP, [0.012], MASSES["pole"], POLE_RGBA, fromto=[0, 0, 0] + tip)
    pole.contype = pole.conaffinity = 0


def _add_leg(pelvis, side: str, sy: float, p: SkierParams, ankle_z: float) -> None:
    """Thigh on its hip hinge(s), shank on the knee, and the ski fixed under the boot, on one side."""
    th = pelvis.add_body()
    th.name = f"{side}_thigh"
    th.pos = [0, sy * 0.1, -0.05]
    if p.hip == "one-axis":
        tilt = math.radians(p.hip_tilt_deg)
        _hinge(th, f"{side}_hip", (math.sin(tilt), 0, math.cos(tilt)), RANGES_DEG["hip"], p.armature)
    else:  # vertical axis (positive turns the left toe out), then forward axis (positive spreads the left leg)
        _hinge(th, f"{side}_hip", (0, 0, 1), RANGES_DEG["hip"], p.armature)
        _hinge(th, f"{side}_hip_spread", (1, 0, 0), RANGES_DEG["hip_spread"], p.armature)
    _geom(th, f"{side}_thigh", CAP, [0.06], MASSES["thigh"], CLOTH, fromto=[0, 0, 0, 0, 0, -THIGH_LEN])
    sh = th.add_body()
    sh.name = f"{side}_shank"
    sh.pos = [0, 0, -THIGH_LEN]
    _hinge(sh, f"{side}_knee", (0, 1, 0), RANGES_DEG["knee"], p.armature)
    _geom(sh, f"{side}_shank", CAP, [0.05], MASSES["shank"], CLOTH, fromto=[0, 0, 0, 0, 0, -SHANK_LEN])
    r = p.ski_radius
    half = p.ski_length / 2 - r
    sz = -SHANK_LEN - ankle_z + r
    ski = _geom(sh, f"{side}_ski", CAP, [r], MASSES["ski"], SKI_RGBA, fromto=[-half + 0.1, 0, sz, half + 0.1, 0, sz])
    ski.contype = ski.conaffinity = 0


def _add_contacts(spec: mujoco.MjSpec, p: SkierParams) -> None:
    """The explicit contact pairs: each ski and each pole tip with the floor."""
    for side in ("left", "right"):
        add_ski_pair(spec, "floor", f"{side}_ski", p.ski_friction())
        pair = spec.add_pair()
        pair.name = f"{side}_pole_floor"
        pair.geomname1, pair.geomname2 = "floor", f"{side}_pole"
        pair.condim = 3
        pair.friction = [p.mu_pole, p.mu_pole, 0.005, 0.0001, 0.0001]


def _add_servos(spec: mujoco.MjSpec, p: SkierParams) -> None:
    """A PD position servo per moving joint (gains ``kp``, ``kv`` per joint kind), its control the target angle."""
    for j in joint_names(hip_joints(p.hip)):
        kind = joint_kind(j)
        lo, hi = RANGES_DEG[kind]
        gains = kind if kind in p.kp else kind.split("_")[0]  # the spread axis uses the hip's gains unless set
        act = spec.add_actuator()
        act.name = j
        act.target = j
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.set_to_position(kp=float(p.kp[gains]), kv=float(p.kv[gains]))
        act.ctrlrange = [math.radians(lo), math.radians(hi)]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE


def add_ski_sensors(spec: mujoco.MjSpec) -> None:
    """Sensors read by :func:`ski_readings` (they change no physics): per ski (left, right) the net contact force
    of the ski on the floor (``contact`` sensor, ``netforce`` reduction: world frame, N), then per ski its
    capsule's z axis (which points from the ski's tip to its tail, see :func:`animat.skier.rollout.trajectory`)."""
    for side in ("left", "right"):
        s = spec.add_sensor()
        s.name = f"{side}_ski_force"
        s.type = mujoco.mjtSensor.mjSENS_CONTACT
        s.objtype, s.objname = mujoco.mjtObj.mjOBJ_GEOM, f"{side}_ski"
        s.reftype, s.refname = mujoco.mjtObj.mjOBJ_GEOM, "floor"
        s.intprm[0], s.intprm[1], s.intprm[2] = 2, 3, 1  # data: force; reduce: netforce; one slot
    for side in ("left", "right"):
        s = spec.add_sensor()
        s.name = f"{side}_ski_axis"
        s.type = mujoco.mjtSensor.mjSENS_FRAMEZAXIS
        s.objtype, s.objname = mujoco.mjtObj.mjOBJ_GEOM, f"{side}_ski"


def ski_readings(sensordata: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sensordata (..., 12)`` of :func:`add_ski_sensors` (the left and right ski's force, 3 each, then their axes) ->
    the floor's force on each ski ``(..., 2, 3)`` N (world frame; ski 0 the left) and each ski's heading ``(..., 2)``
    rad (its tail-to-tip axis, from +x towards +y)."""
    d = np.asarray(sensordata, dtype=np.float64)
    force = -d[..., 0:6].reshape(*d.shape[:-1], 2, 3)
    tip = -d[..., 6:12].reshape(*d.shape[:-1], 2, 3)
    return force, np.arctan2(tip[..., 1], tip[..., 0])


def add_ski_pair(spec: mujoco.MjSpec, plane: str, ski: str, mu: tuple[float, float]) -> None:
    """Explicit plane-ski contact pair: ``mu[0]`` along the capsule's axis, ``mu[1]`` across it."""
    pair = spec.add_pair()
    pair.name = f"{ski}_{plane}"
    pair.geomname1, pair.geomname2 = plane, ski
    pair.condim = 3
    pair.friction = [float(mu[0]), float(mu[1]), 0.005, 0.0001, 0.0001]


def build_model(params: SkierParams | None = None) -> mujoco.MjModel:
    model = build_spec(params).compile()
    total = float(model.body_mass.sum())
    if abs(total - TOTAL_MASS) > 1e-6:  # a guard for edits to MASSES
        raise AssertionError(f"skier mass {total} kg, expected {TOTAL_MASS}")
    return model


def actuator_order(model: mujoco.MjModel) -> list[int]:
    """Actuator index of each gene column (12 or 14 of them, see :func:`joint_names`)."""
    return [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, j) for j in joint_names(model.nu)]


def sliding_ski_model(
    shape: str,
    mu: tuple[float, float],
    yaw_deg: float = 0.0,
    *,
    mass: float = 20.0,
    timestep: float = 0.002,
    cone: str = "pyramidal",
) -> mujoco.MjModel:
    """A lone ski (capsule or box, 1.6 m, with a test weight of ``mass`` kg) free on a plane, yawed
    ``yaw_deg`` about z; plane-ski pair friction ``mu`` = (along its length, across). For tests.

    The ski translates only (three world-aligned slide joints; ``qvel[:3]`` is its world velocity): on the skier the
    boot keeps it from rolling, whereas a lone capsule pushed sideways would roll about its axis."""
    spec = mujoco.MjSpec()
    spec.option.timestep = timestep
    spec.option.cone = CONES[cone]
    floor = spec.worldbody.add_geom()
    floor.name = "floor"
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [0, 0, 0.1]
    floor.contype = floor.conaffinity = 0
    body = spec.worldbody.add_body()
    body.name = "ski"
    yaw = math.radians(yaw_deg)
    body.pos = [0, 0, 0.02]
    for axis in (
        (1, 0, 0),
        (0, 1, 0),
        (0, 0, 1),
    ):  # world-aligned translation only (a lone capsule would roll sideways)
        j = body.add_joint()
        j.type = mujoco.mjtJoint.mjJNT_SLIDE
        j.axis = list(axis)
    c, s = math.cos(yaw), math.sin(yaw)
    if shape == "capsule":
        g = _geom(
            body,
            "ski",
            mujoco.mjtGeom.mjGEOM_CAPSULE,
            [0.02],
            mass,
            [1, 0, 0, 1],
            fromto=[-0.78 * c, -0.78 * s, 0, 0.78 * c, 0.78 * s, 0],
        )
    elif shape == "box":
        g = _geom(
            body,
            "ski",
            mujoco.mjtGeom.mjGEOM_BOX,
            [0.8, 0.05, 0.02],
            mass,
            [1, 0, 0, 1],
            quat=[math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)],
        )
    else:
        raise ValueError(f"shape must be 'capsule' or 'box', got {shape!r}")
    g.contype = g.conaffinity = 0
    add_ski_pair(spec, "floor", "ski", mu)
    return spec.compile()
