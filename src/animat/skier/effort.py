"""The servos' effort: the joint torques they apply, their mechanical work and the skier's cost of transport.

Sensors (:func:`add_servo_sensors`, appended after the skis' so that :func:`animat.skier.model.ski_readings` keeps its
columns; they change no physics): per servo, in actuator order, its force (``actuatorfrc``: with a hinge and gear 1 the
joint torque, N m; a position servo's ``kp (ctrl - q) - kv q'``, clamped to its ``forcerange`` where it has one), then
per servo its velocity (``actuatorvel``: the hinge's angular velocity, rad/s). MuJoCo computes both at the state a step
starts from, so in ``mujoco.rollout``'s readings of step k they belong to the state before step k.

Work: the servos' mechanical power is the sum of the absolute joint powers, ``P = sum_i |tau_i q'_i|`` W: positive
and negative work both cost a muscle (the "absolute" joint work of Winter 1979, J. Appl. Physiol. 46:79-83); the work
``W = integral P dt`` J (a rectangle rule over the physics steps). Cost of transport ``W / (m d)`` J/(kg m), with ``m``
the skier's mass and ``d`` the net forward distance (Tucker 1975, Am. Sci. 63:413-419, the energy per unit weight and
distance; here the mechanical, not the metabolic, energy). The fitness's effort term (``effort_weight``) counts the
work in metres, ``W / (m g)``: the height that work would lift the skier; with an allowance of ``free_cot`` J/(kg m)
only the work beyond ``free_cot * m * d`` counts (d the progress the fitness counted), so a skier within that cost of
transport is scored on its distance alone: a budget of energy per metre (the penalty method of constrained
optimisation, the constraint ``W / (m d) <= free_cot``; Coello 2002, Comput. Methods Appl. Mech. Eng. 191:1245-1287).
"""

from __future__ import annotations

import mujoco
import numpy as np

TORQUE, SPEED = "_torque", "_speed"  # suffixes of the sensors' names (after the actuator's name)


def add_servo_sensors(spec: mujoco.MjSpec, actuators: list[str]) -> None:
    """Per actuator named in ``actuators`` a force sensor (``NAME_torque``), then per actuator a velocity sensor
    (``NAME_speed``), appended to ``spec``'s sensors."""
    for kind, suffix in ((mujoco.mjtSensor.mjSENS_ACTUATORFRC, TORQUE), (mujoco.mjtSensor.mjSENS_ACTUATORVEL, SPEED)):
        for name in actuators:
            s = spec.add_sensor()
            s.name = f"{name}{suffix}"
            s.type = kind
            s.objtype, s.objname = mujoco.mjtObj.mjOBJ_ACTUATOR, name


def servo_columns(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """Columns of ``sensordata`` holding each actuator's torque and velocity, (nu,) int each, in actuator order."""

    def column(suffix: str) -> np.ndarray:
        ids = [
            mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, f"{model.actuator(i).name}{suffix}")
            for i in range(model.nu)
        ]
        return model.sensor_adr[np.array(ids, dtype=np.int64)]

    return column(TORQUE), column(SPEED)


def servo_power(sensordata: np.ndarray, columns: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Mechanical power ``sum_i |tau_i q'_i|`` (...,) W of the servos from ``sensordata (..., nsensordata)`` and
    :func:`servo_columns`."""
    d = np.asarray(sensordata, dtype=np.float64)
    return np.abs(d[..., columns[0]] * d[..., columns[1]]).sum(axis=-1)


def cumulative_work(power: np.ndarray, dt: float, start: np.ndarray | float = 0.0) -> np.ndarray:
    """Work done (..., K) J by the end of each of K steps of ``dt`` s at power ``power (..., K)`` W, starting from
    ``start (...,)`` J; summed in step order, so a run continued in chunks adds up exactly as in one piece."""
    p = np.asarray(power, dtype=np.float64) * dt
    head = np.broadcast_to(np.asarray(start, dtype=np.float64), p.shape[:-1])[..., None]
    return np.cumsum(np.concatenate([head, p], axis=-1), axis=-1)[..., 1:]


def cost_of_transport(work: np.ndarray | float, mass: float, distance: np.ndarray | float) -> np.ndarray:
    """``work / (mass * distance)`` J/(kg m) (mass kg, net forward distance m); NaN where the skier got nowhere
    (distance <= 0)."""
    work, distance = np.asarray(work, dtype=np.float64), np.asarray(distance, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(distance > 0, work / (mass * distance), np.nan)


def effort_metres(
    work: np.ndarray, progress: np.ndarray, mass: float, gravity: float, free_cot: float = 0.0
) -> np.ndarray:
    """The work charged to the fitness, in metres: ``max(0, work - free_cot * mass * progress) / (mass * gravity)``
    (work J, progress m, mass kg, gravity m/s^2, free_cot J/(kg m); arrays broadcast)."""
    work, progress = np.asarray(work, dtype=np.float64), np.asarray(progress, dtype=np.float64)
    return np.maximum(work - free_cot * mass * progress, 0.0) / (mass * gravity)
