"""DeepMimic's humanoid3d as a MuJoCo model built in code (``mujoco.MjSpec``), and pose mapping.

Skeleton: 15 links, 45 kg. A free root (pelvis); ball joints at chest, neck, hips, ankles and
shoulders; hinges at knees and elbows; the wrists are fixed (a hand body welded to the forearm).
Offsets, shapes and masses are DeepMimic's ``humanoid3d_character.txt`` (MIT, © 2018 Xue Bin Peng),
transcribed below in its own Y-up frame and mapped to Z-up by :mod:`animat.character.clip`'s R;
:func:`load_skeleton` reads the file itself and a test checks the transcription against it.

Bodies carry DeepMimic's joint names (a body is named after the joint that moves it) and
every body frame is the DeepMimic frame mapped by R, so clip rotations are joint rotations as they
are. Geoms: sphere ``Param0`` is a diameter; capsule ``Param0`` a diameter and ``Param1`` the
length of its straight part, along the body's y_dm (Z-up: z); box ``Param0..2`` full sizes.
Only body–floor contacts are enabled (DeepMimic's character does not collide with itself).

Actuation (chosen here): knees and elbows are MuJoCo position actuators (kp, kv; force limited to
the joint's torque limit). Each ball joint has three MuJoCo position actuators too (the default,
``ball_actuators=True``), one per axis of its child frame (``gear`` = a unit axis): MuJoCo's length
of a joint transmission on a ball joint is the rotation vector ``log(q)`` projected on that axis, so
the three give ``τ = kp · (r_target − log q)`` per axis, clipped per axis to ± the torque limit, all
inside ``mj_step`` (no Python per physics step; the speed against the Python servo is in BENCHMARKS.md,
imitate_env). It has the same fixed
point as DeepMimic's quaternion-difference servo ``kp · log(q⁻¹ q_target)`` and pulls the same way near it, but not
identically: ``log(q_t) − log(q)`` is ``log(q⁻¹ q_t)`` mapped through the exp map's Jacobian at ``q`` (a tilt
growing with the joint's angle; its size on the demo's poses: RESULTS.md, 'Measurements behind the code'), which only
changes which targets a policy learns to send. With ``ball_actuators=False`` the ball joints have no actuator
and :func:`apply_ball_pd` writes the
quaternion-difference servo into ``qfrc_applied`` each physics step (the original, slower path, kept as the reference).
Either way the ball joints' ``kd`` is MuJoCo joint damping, integrated implicitly (``implicitfast``) so that 600 Hz
stays stable with DeepMimic's gains (the damping part is therefore not clipped). Gains are DeepMimic's
``humanoid3d_ctrl.txt`` values. Physics runs at 600 Hz (``TIMESTEP``), the policy at 30 Hz (``CONTROL_HZ``);
:func:`set_pd_targets` sets every actuator's target once per control step.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from animat import quaternions as quat
from animat.character.clip import HINGE_AXIS, JOINT_NAMES, MotionState, vec_dm_to_zup
from animat.errors import ConfigError

TIMESTEP = 1.0 / 600.0  # s
CONTROL_HZ = 30.0
SUBSTEPS = int(round(1.0 / (TIMESTEP * CONTROL_HZ)))  # 20
DEFAULT_ROOT_HEIGHT = 0.9  # m; the walk clip's root starts at 0.85 m

# DeepMimic humanoid3d_ctrl.txt: (kp N·m/rad, kd N·m·s/rad) per joint
PD_GAINS = {
    "chest": (1000.0, 100.0),
    "neck": (100.0, 10.0),
    "right_hip": (500.0, 50.0),
    "right_knee": (500.0, 50.0),
    "right_ankle": (400.0, 40.0),
    "right_shoulder": (400.0, 40.0),
    "right_elbow": (300.0, 30.0),
    "left_hip": (500.0, 50.0),
    "left_knee": (500.0, 50.0),
    "left_ankle": (400.0, 40.0),
    "left_shoulder": (400.0, 40.0),
    "left_elbow": (300.0, 30.0),
}


@dataclass(frozen=True)
class JointDef:
    """A DeepMimic joint; ``offset`` (m) from the parent joint in DeepMimic's Y-up frame."""

    name: str
    type: str  # none (root) | spherical | revolute | fixed
    parent: int
    offset: tuple[float, float, float]
    torque_limit: float  # N·m
    diff_weight: float  # DeepMimic's per-joint reward weight
    end_effector: bool
    limits: tuple[float, float] = (0.0, 0.0)  # rad, revolute only
    ball_limits: tuple[
        tuple[float, float], ...
    ] = ()  # rad, spherical only: (low, high) of log(q) on DeepMimic's x, y, z


@dataclass(frozen=True)
class BodyDef:
    """A link's shape; ``offset`` (m) of the shape from its joint, Y-up; ``params`` as in the file."""

    name: str
    shape: str  # sphere | capsule | box
    mass: float  # kg
    offset: tuple[float, float, float]
    params: tuple[float, float, float]


@dataclass(frozen=True)
class Skeleton:
    joints: tuple[JointDef, ...]
    bodies: tuple[BodyDef, ...]

    @property
    def end_effectors(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints if j.end_effector)

    @property
    def total_mass(self) -> float:
        return float(sum(b.mass for b in self.bodies))


def _side(
    side: str, sign: float, hip: int, knee: int, shoulder: int, elbow: int
) -> tuple[list[JointDef], list[BodyDef]]:
    j = [
        JointDef(
            f"{side}_hip",
            "spherical",
            0,
            (0.0, 0.0, sign * 0.084887),
            200.0,
            0.5,
            False,
            ball_limits=((-1.2, 1.2), (-1.0, 1.0), (-1.57, 2.57)),
        ),
        JointDef(f"{side}_knee", "revolute", hip, (0.0, -0.421546, 0.0), 150.0, 0.3, False, (-3.14, 0.0)),
        JointDef(
            f"{side}_ankle",
            "spherical",
            knee,
            (0.0, -0.40987, 0.0),
            90.0,
            0.2,
            True,
            ball_limits=((-1.0, 1.0), (-1.0, 1.0), (-1.57, 1.57)),
        ),
        JointDef(
            f"{side}_shoulder",
            "spherical",
            1,
            (-0.02405, 0.2435, sign * 0.18311),
            100.0,
            0.3,
            False,
            ball_limits=((-3.14, 0.5) if sign > 0 else (-0.5, 3.14), (-1.5, 1.5), (-0.7, 3.14)),
        ),
        JointDef(f"{side}_elbow", "revolute", shoulder, (0.0, -0.274788, 0.0), 60.0, 0.2, False, (0.0, 3.14)),
        JointDef(f"{side}_wrist", "fixed", elbow, (0.0, -0.258947, 0.0), 0.0, 0.0, True),
    ]
    b = [
        BodyDef(f"{side}_hip", "capsule", 4.5, (0.0, -0.21, 0.0), (0.11, 0.3, 0.11)),
        BodyDef(f"{side}_knee", "capsule", 3.0, (0.0, -0.2, 0.0), (0.1, 0.31, 0.1)),
        BodyDef(f"{side}_ankle", "box", 1.0, (0.045, -0.0225, 0.0), (0.177, 0.055, 0.09)),
        BodyDef(f"{side}_shoulder", "capsule", 1.5, (0.0, -0.14, 0.0), (0.09, 0.18, 0.09)),
        BodyDef(f"{side}_elbow", "capsule", 1.0, (0.0, -0.12, 0.0), (0.08, 0.135, 0.08)),
        BodyDef(f"{side}_wrist", "sphere", 0.5, (0.0, 0.0, 0.0), (0.08, 0.08, 0.08)),
    ]
    return j, b


def default_skeleton() -> Skeleton:
    """humanoid3d, transcribed (DeepMimic's joint order: root, chest, neck, right leg, right arm, left …)."""
    joints = [
        JointDef("root", "none", -1, (0.0, 0.0, 0.0), 0.0, 1.0, False),
        JointDef("chest", "spherical", 0, (0.0, 0.236151, 0.0), 200.0, 0.5, False, ball_limits=((-1.2, 1.2),) * 3),
        JointDef("neck", "spherical", 1, (0.0, 0.223894, 0.0), 50.0, 0.3, False, ball_limits=((-1.0, 1.0),) * 3),
    ]
    bodies = [
        BodyDef("root", "sphere", 6.0, (0.0, 0.07, 0.0), (0.18, 0.18, 0.18)),
        BodyDef("chest", "sphere", 14.0, (0.0, 0.12, 0.0), (0.22, 0.22, 0.22)),
        BodyDef("neck", "sphere", 2.0, (0.0, 0.175, 0.0), (0.205, 0.205, 0.205)),
    ]
    rj, rb = _side("right", 1.0, hip=3, knee=4, shoulder=6, elbow=7)
    lj, lb = _side("left", -1.0, hip=9, knee=10, shoulder=12, elbow=13)
    # DeepMimic order: right hip, knee, ankle, shoulder, elbow, wrist, then the same on the left
    return Skeleton(tuple(joints + rj + lj), tuple(bodies + rb + lb))


def load_skeleton(path: str | os.PathLike) -> Skeleton:
    """Read DeepMimic's ``humanoid3d_character.txt`` (Skeleton.Joints and BodyDefs)."""
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
        joints, bodies = [], []
        for j in obj["Skeleton"]["Joints"]:
            if any(float(j.get(f"AttachTheta{a}", 0.0)) != 0.0 for a in "XYZ"):
                raise ConfigError(f"{str(path)!r}: joint {j['Name']!r} has a non-zero AttachTheta; not supported")
            joints.append(
                JointDef(
                    str(j["Name"]),
                    str(j["Type"]),
                    int(j["Parent"]),
                    (float(j["AttachX"]), float(j["AttachY"]), float(j["AttachZ"])),
                    float(j.get("TorqueLim", 0.0)),
                    float(j.get("DiffWeight", 0.0)),
                    bool(j.get("IsEndEffector", 0)),
                    (float(j["LimLow0"]), float(j["LimHigh0"])) if j["Type"] == "revolute" else (0.0, 0.0),
                    tuple((float(j[f"LimLow{k}"]), float(j[f"LimHigh{k}"])) for k in range(3))
                    if j["Type"] == "spherical"
                    else (),
                )
            )
        for b in obj["BodyDefs"]:
            bodies.append(
                BodyDef(
                    str(b["Name"]),
                    str(b["Shape"]),
                    float(b["Mass"]),
                    (float(b["AttachX"]), float(b["AttachY"]), float(b["AttachZ"])),
                    (float(b["Param0"]), float(b["Param1"]), float(b["Param2"])),
                )
            )
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{str(path)!r}: not a DeepMimic character file ({type(exc).__name__}: {exc})") from None
    skel = Skeleton(tuple(joints), tuple(bodies))
    names = [j.name for j in skel.joints if j.type in ("spherical", "revolute")]
    if tuple(names) != JOINT_NAMES or [b.name for b in skel.bodies] != [j.name for j in skel.joints]:
        raise ConfigError(
            f"{str(path)!r}: not the humanoid3d skeleton; actuated joints {names}, expected {list(JOINT_NAMES)}"
        )
    return skel


BALL_AXES = ("x", "y", "z")  # ball-joint actuators are named f"{joint}_{axis}" (child-frame axes)
LIMIT_STIFFNESS = 5.0  # ball-joint limit springs: stiffness as a multiple of the joint's kp (N·m/rad)


def build_spec(
    skeleton: Skeleton | None = None,
    timestep: float = TIMESTEP,
    ball_actuators: bool = True,
    joint_limits: bool = False,
) -> mujoco.MjSpec:
    """The humanoid as an editable ``MjSpec`` (floor included); see the module docstring for actuation and
    :func:`add_ball_limits` for ``joint_limits``."""
    skel = skeleton or default_skeleton()
    spec = mujoco.MjSpec()
    spec.modelname = "humanoid3d"
    spec.compiler.degree = False  # ranges in rad
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    floor = spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20.0, 20.0, 0.1])
    floor.contype, floor.conaffinity = 0, 1
    floor.rgba = [0.8, 0.8, 0.8, 1.0]
    bodies = {}
    for i, (jd, bd) in enumerate(zip(skel.joints, skel.bodies)):
        parent = spec.worldbody if jd.parent < 0 else bodies[jd.parent]
        bodies[i] = _add_link(parent, jd, bd)
    _add_actuators(spec, skel, ball_actuators)
    if joint_limits:
        add_ball_limits(spec, skel)
    return spec


def _add_link(parent, jd, bd):
    """One link of the skeleton under ``parent``: its body, its joint (``jd``) and its collision geom (``bd``)."""
    pos = [0.0, 0.0, DEFAULT_ROOT_HEIGHT] if jd.parent < 0 else vec_dm_to_zup(jd.offset).tolist()
    body = parent.add_body(name=jd.name, pos=pos)
    if jd.type == "none":
        body.add_freejoint(name="root")
    elif jd.type == "spherical":
        body.add_joint(name=jd.name, type=mujoco.mjtJoint.mjJNT_BALL, damping=PD_GAINS[jd.name][1])
    elif jd.type == "revolute":
        body.add_joint(
            name=jd.name,
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=HINGE_AXIS.tolist(),
            range=list(jd.limits),
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        )
    geom = body.add_geom(name=bd.name, pos=vec_dm_to_zup(bd.offset).tolist(), mass=bd.mass)
    if bd.shape == "sphere":
        geom.type, geom.size = mujoco.mjtGeom.mjGEOM_SPHERE, [bd.params[0] / 2, 0.0, 0.0]
    elif bd.shape == "capsule":
        geom.type, geom.size = mujoco.mjtGeom.mjGEOM_CAPSULE, [bd.params[0] / 2, bd.params[1] / 2, 0.0]
    elif bd.shape == "box":
        geom.type, geom.size = mujoco.mjtGeom.mjGEOM_BOX, (np.abs(vec_dm_to_zup(bd.params)) / 2).tolist()
    else:
        raise ConfigError(f"body {bd.name!r}: shape {bd.shape!r} not supported (sphere, capsule, box)")
    geom.contype, geom.conaffinity = 1, 0  # touches the floor, not itself
    geom.rgba = [0.47, 0.55, 0.69, 1.0]
    return body


def _add_actuators(spec: mujoco.MjSpec, skel: Skeleton, ball_actuators: bool) -> None:
    """PD position servos: one per hinge, then (``ball_actuators``) three per ball joint, torque-limited."""
    for jd in skel.joints:
        if jd.type == "revolute":
            kp, kd = PD_GAINS[jd.name]
            act = spec.add_actuator(name=jd.name, target=jd.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=kp, kv=kd)
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-jd.torque_limit, jd.torque_limit]
    if not ball_actuators:
        return
    for jd in skel.joints:
        if jd.type == "spherical":
            kp = PD_GAINS[jd.name][0]
            for k, axis in enumerate(BALL_AXES):
                act = spec.add_actuator(name=f"{jd.name}_{axis}", target=jd.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
                act.gear = [1.0 if i == k else 0.0 for i in range(6)]
                act.set_to_position(kp=kp, kv=0.0)  # kd is the joint's (implicit) damping
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = [-jd.torque_limit, jd.torque_limit]


def add_ball_limits(spec: mujoco.MjSpec, skeleton: Skeleton) -> None:
    """Per-axis limits on the ball joints, as in DeepMimic's character file (``LimLow0..2``, ``LimHigh0..2``).

    Read here as bounds on the rotation vector ``log(q)`` of the joint along DeepMimic's x, y, z axes
    of the child frame (mapped to Z-up; the coordinates the ball servos use) — both shipped clips stay
    inside them. MuJoCo limits a ball joint only by a cone on its whole angle, so each bound is a
    one-sided spring inside ``mj_step``: an actuator on that axis (``gear``) with force
    ``k (bound − length)`` clipped to push back only past the bound, ``k`` = ``LIMIT_STIFFNESS`` × the
    joint's kp (a servo at its torque limit overshoots by ``τ_max / k``, 0.04 rad for the chest);
    the joint's damping acts as usual. Named ``<joint>_<axis>_low`` / ``_high``.
    """
    for jd in skeleton.joints:
        if jd.type != "spherical" or not jd.ball_limits:
            continue
        k = LIMIT_STIFFNESS * PD_GAINS[jd.name][0]
        for axis_dm, name, (low, high) in zip(np.eye(3), BALL_AXES, jd.ball_limits):
            gear = np.concatenate([vec_dm_to_zup(axis_dm), np.zeros(3)]).tolist()
            for side, bound, forcerange in (("low", low, [0.0, 1e6]), ("high", high, [-1e6, 0.0])):
                act = spec.add_actuator(
                    name=f"{jd.name}_{name}_{side}", target=jd.name, trntype=mujoco.mjtTrn.mjTRN_JOINT
                )
                act.gear = gear
                act.gaintype, act.biastype = mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtBias.mjBIAS_AFFINE
                act.gainprm = [0.0] * 10
                act.biasprm = [k * bound, -k] + [0.0] * 8
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = forcerange


def build_model(
    skeleton: Skeleton | None = None,
    timestep: float = TIMESTEP,
    ball_actuators: bool = True,
    joint_limits: bool = False,
) -> mujoco.MjModel:
    """Compile the humanoid (default: the transcribed humanoid3d, MuJoCo servos on every joint, no ball-joint
    limits)."""
    return build_spec(skeleton, timestep, ball_actuators, joint_limits).compile()


# --------------------------------------------------------------------------------------------
# pose mapping


@dataclass(frozen=True)
class Layout:
    """Where each clip joint lives in a model's qpos/qvel. ``hinge[j]``: scalar joint or ball."""

    qpos: np.ndarray  # (12,) int
    dof: np.ndarray  # (12,) int
    hinge: np.ndarray  # (12,) bool
    actuator: np.ndarray  # (12,) int, -1 for ball joints
    root_body: int
    end_effector_bodies: np.ndarray  # (E,) int: right ankle, right wrist, left ankle, left wrist
    torque_limit: np.ndarray  # (12,) N·m
    kp: np.ndarray  # (12,)
    ball_actuators: np.ndarray = None  # (B, 3) int actuator ids of the ball joints' x, y, z servos, or (0, 3)

    @property
    def balls(self) -> np.ndarray:
        """(B,) clip-joint indices of the ball joints."""
        return np.nonzero(~self.hinge)[0]

    @property
    def ball_qpos(self) -> np.ndarray:
        """(B, 4) int qpos addresses of the ball joints' quaternions."""
        return self.qpos[self.balls][:, None] + np.arange(4)

    @property
    def ball_dof(self) -> np.ndarray:
        """(B, 3) int dof addresses of the ball joints."""
        return self.dof[self.balls][:, None] + np.arange(3)

    @staticmethod
    def of(model: mujoco.MjModel, skeleton: Skeleton | None = None) -> Layout:
        skel = skeleton or default_skeleton()
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in JOINT_NAMES]
        if min(ids) < 0:
            raise ConfigError(f"model lacks joint(s) {[n for n, i in zip(JOINT_NAMES, ids) if i < 0]}")
        limits = {j.name: j.torque_limit for j in skel.joints}
        return Layout(
            qpos=np.array([model.jnt_qposadr[i] for i in ids]),
            dof=np.array([model.jnt_dofadr[i] for i in ids]),
            hinge=np.array([model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE for i in ids]),
            actuator=np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in JOINT_NAMES]),
            root_body=mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "root"),
            end_effector_bodies=np.array(
                [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in skel.end_effectors]
            ),
            torque_limit=np.array([limits[n] for n in JOINT_NAMES]),
            kp=np.array([PD_GAINS[n][0] for n in JOINT_NAMES]),
            ball_actuators=_ball_actuator_ids(
                model, [n for n, i in zip(JOINT_NAMES, ids) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_BALL]
            ),
        )


def _ball_actuator_ids(model: mujoco.MjModel, balls: list[str]) -> np.ndarray:
    ids = np.array(
        [[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{n}_{a}") for a in BALL_AXES] for n in balls],
        dtype=int,
    ).reshape(-1, 3)
    if (ids < 0).all():
        return np.zeros((0, 3), dtype=int)
    if (ids < 0).any():
        raise ConfigError("model has servos on some ball joints but not all; build it with build_model()")
    return ids


def set_pose(model: mujoco.MjModel, data: mujoco.MjData, state: MotionState, layout: Layout | None = None) -> None:
    """Write a clip state (Z-up) into ``data.qpos``/``qvel``; call ``mj_forward`` for kinematics.

    A revolute joint takes the angle of its rotation about ``HINGE_AXIS`` (any off-axis part of the
    given rotation is dropped) and the component of its angular velocity along that axis.
    """
    lay = layout or Layout.of(model)
    data.qpos[0:3] = state.root_pos
    data.qpos[3:7] = quat.normalize(state.root_quat)
    data.qvel[0:3] = state.root_vel
    data.qvel[3:6] = state.root_angvel
    jq, jw = np.asarray(state.joint_quats), np.asarray(state.joint_angvel)
    h, b = np.nonzero(lay.hinge)[0], lay.balls
    data.qpos[lay.qpos[h]] = quat.angle_about(jq[h], HINGE_AXIS)
    data.qvel[lay.dof[h]] = jw[h] @ HINGE_AXIS
    data.qpos[lay.ball_qpos] = quat.normalize(jq[b])
    data.qvel[lay.ball_dof] = jw[b]


def get_pose(model: mujoco.MjModel, data: mujoco.MjData, layout: Layout | None = None) -> MotionState:
    """Read ``data.qpos``/``qvel`` back as a clip state (the inverse of :func:`set_pose`)."""
    lay = layout or Layout.of(model)
    jq = np.empty((len(JOINT_NAMES), 4))
    jw = np.empty((len(JOINT_NAMES), 3))
    h, b = np.nonzero(lay.hinge)[0], lay.balls
    jq[h] = quat.about_axis(HINGE_AXIS, data.qpos[lay.qpos[h]])
    jw[h] = data.qvel[lay.dof[h]][:, None] * HINGE_AXIS
    jq[b] = data.qpos[lay.ball_qpos]
    jw[b] = data.qvel[lay.ball_dof]
    return MotionState(
        root_pos=data.qpos[0:3].copy(),
        root_quat=data.qpos[3:7].copy(),
        joint_quats=jq,
        root_vel=data.qvel[0:3].copy(),
        root_angvel=data.qvel[3:6].copy(),
        joint_angvel=jw,
    )


@dataclass(frozen=True)
class Kinematics:
    """What the imitation reward compares. ``end_effectors``: (E, 3) m world (feet = ankle joints,
    hands = wrist joints); ``com``: (3,) m; ``com_vel``: (3,) m/s."""

    state: MotionState
    end_effectors: np.ndarray
    com: np.ndarray
    com_vel: np.ndarray


def kinematics(model: mujoco.MjModel, data: mujoco.MjData, layout: Layout | None = None) -> Kinematics:
    """Kinematic quantities of ``data`` (needs ``mj_forward`` or a step to have run)."""
    lay = layout or Layout.of(model)
    mujoco.mj_subtreeVel(model, data)
    return Kinematics(
        state=get_pose(model, data, lay),
        end_effectors=data.xpos[lay.end_effector_bodies].copy(),
        com=data.subtree_com[lay.root_body].copy(),
        com_vel=data.subtree_linvel[lay.root_body].copy(),
    )


def pose_kinematics(
    model: mujoco.MjModel, data: mujoco.MjData, state: MotionState, layout: Layout | None = None
) -> Kinematics:
    """Set ``state``, run forward kinematics, and return its :class:`Kinematics`."""
    lay = layout or Layout.of(model)
    set_pose(model, data, state, lay)
    mujoco.mj_forward(model, data)
    return kinematics(model, data, lay)


def set_pd_targets(
    model: mujoco.MjModel, data: mujoco.MjData, targets: np.ndarray, layout: Layout | None = None
) -> None:
    """Set the servos' targets from ``targets (12, 4)`` (rotations, clip order): the hinge actuators
    always; the ball joints' actuators (to ``log(target)``, rad) when the model has them."""
    lay = layout or Layout.of(model)
    targets = np.asarray(targets, dtype=np.float64)
    hinges = np.nonzero(lay.hinge)[0]
    data.ctrl[lay.actuator[hinges]] = quat.angle_about(targets[hinges], HINGE_AXIS)
    if lay.ball_actuators is not None and lay.ball_actuators.size:
        data.ctrl[lay.ball_actuators.ravel()] = quat.log(targets[lay.balls]).ravel()


def apply_ball_pd(
    model: mujoco.MjModel, data: mujoco.MjData, targets: np.ndarray, layout: Layout | None = None
) -> np.ndarray:
    """Write the ball joints' quaternion-difference PD torques into ``data.qfrc_applied``; returns them (8, 3) N·m.

    τ = kp · log(q⁻¹ ⊗ q_target) in the child frame, clipped per axis to ± the torque limit; the
    kd part is the joints' MuJoCo damping (implicit). Call before every physics step. For models
    built with ``ball_actuators=False``; with MuJoCo ball servos (the default) do not call it.
    """
    lay = layout or Layout.of(model)
    b = lay.balls
    q = data.qpos[lay.ball_qpos]  # (B, 4)
    err = quat.log(quat.mul(quat.conj(q), np.asarray(targets, dtype=np.float64)[b]))
    lim = lay.torque_limit[b][:, None]
    tau = np.clip(lay.kp[b][:, None] * err, -lim, lim)
    data.qfrc_applied[lay.ball_dof] = tau
    return tau
