"""Fly-steps per second: the batched JAX rollout vs a plain per-fly NumPy loop of the same physics.

Both run the same random networks from the same start, side by side in one process (the batched
rollout at 1000 and at 100 flies; the headline ratio uses 1000, a generation size evolution runs use,
and the ratio at 100 is reported beside it); the NumPy
baseline is a direct transcription of animat.fly.physics (one fly, one step at a time, as the
original project did), and its trajectory is checked against the JAX one before timing counts.
Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import UTC, datetime

import jax
import numpy as np

from animat.evolve import network
from animat.fly.model import FlyParams, wing_elements
from animat.fly.rollout import VEL_SCALE, simulate_population
from animat.fly.tasks import FlyFitness

LAYERS = [15, 20, 20, 3]


# ---------------------------------------------------------------- NumPy baseline (per fly, per step)
def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _qmat(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _qmul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def numpy_fly(p: FlyParams, net: dict, seconds: float) -> np.ndarray:
    """One fly, Python loop over ticks and steps; returns positions (T, 3) after each control tick."""
    cents, areas = wing_elements(p)
    cents, areas = cents.astype(np.float64), np.tile(areas, 2).astype(np.float64)
    lim, vmax = np.array(p.angle_limits), np.array(p.speed_limits)
    inertia, hinge = p.inertia(), np.array(p.hinge)
    a, b, c = p.body_size
    faces = np.array([b * c, a * c, a * b])
    pos, vel, omega = np.zeros(3), np.zeros(3), np.zeros(3)
    quat, wing = np.array([1.0, 0, 0, 0]), np.zeros((2, 3))
    out = []
    for _ in range(int(round(seconds / p.control_dt))):
        q = quat
        euler = [
            np.arctan2(2 * (q[0] * q[1] + q[2] * q[3]), 1 - 2 * (q[1] ** 2 + q[2] ** 2)),
            np.arcsin(np.clip(2 * (q[0] * q[2] - q[3] * q[1]), -1, 1)),
            np.arctan2(2 * (q[0] * q[3] + q[1] * q[2]), 1 - 2 * (q[2] ** 2 + q[3] ** 2)),
        ]
        obs = np.concatenate([pos / p.body_length, euler, vel / VEL_SCALE, omega / VEL_SCALE, wing[0] / lim])[:, None]
        act = obs
        for k in range(1, len(LAYERS)):
            act = np.tanh(net[f"W{k}"] @ act + net[f"b{k}"])
        target = np.clip(act[:, 0], -1, 1) * lim
        for _ in range(p.steps_per_control):
            rates = np.clip((target - wing) / p.dt, -vmax, vmax)
            R = _qmat(quat)
            pts, vrel, nrm = [], [], []
            for side, sign in ((0, 1.0), (1, -1.0)):
                f, fe, sw = wing[side]
                Rw = _rz(sw) @ _ry(-f) @ _rx(fe)
                w_ang = (
                    rates[side, 2] * np.array([0, 0, 1.0])
                    - rates[side, 0] * _rz(sw)[:, 1]
                    + rates[side, 1] * (_rz(sw) @ _ry(-f))[:, 0]
                )
                arm = cents @ Rw.T
                m = np.array([sign, 1.0, 1.0])
                pts.append((hinge + arm) * m)
                vrel.append(np.cross(w_ang, arm) * m)
                nrm.append(np.tile(Rw[:, 2], (len(cents), 1)) * m)
            pts, vrel, nrm = np.concatenate(pts), np.concatenate(vrel), np.concatenate(nrm)
            v_el = R.T @ vel + np.cross(omega, pts) + vrel
            vn = np.sum(v_el * nrm, axis=1, keepdims=True)
            f_body = -0.5 * p.rho * p.cd_wing * areas[:, None] * vn * np.abs(vn) * nrm
            v_b = R.T @ vel
            force = R @ f_body.sum(0) - 0.5 * p.rho * p.cd_body * np.sum(faces * np.abs(v_b)) * vel
            acc = force / p.mass + np.array([0, 0, -p.gravity])
            torque = np.cross(pts, f_body).sum(0)
            omega = omega + (torque - np.cross(omega, inertia * omega)) / inertia * p.dt
            pos = pos + vel * p.dt + 0.5 * acc * p.dt**2
            vel = vel + acc * p.dt
            rv = omega * p.dt
            ang = np.linalg.norm(rv)
            dq = (
                np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) / ang * rv]) if ang > 0 else np.array([1.0, 0, 0, 0])
            )
            quat = _qmul(quat, dq)
            quat /= np.linalg.norm(quat)
            wing = np.clip(wing + rates * p.dt, -lim, lim)
        out.append(pos.copy())
    return np.array(out)


def jax_rate(params: FlyParams, population: int, seconds: float) -> tuple[float, dict]:
    """Fly-steps per second of the jitted, vmapped rollout (median of 5 after compiling)."""
    genes = np.asarray(network.init_genes(jax.random.PRNGKey(0), population, LAYERS, 0.5))
    nets = network.unflatten(genes, LAYERS)
    acts = ("tanh",) * (len(LAYERS) - 1)
    simulate_population(params, nets, acts, seconds)  # compile
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        simulate_population(params, nets, acts, seconds)
        times.append(time.perf_counter() - t0)
    return population * seconds / params.dt / float(np.median(times)), nets


def main() -> None:
    params = FlyParams()
    seconds = 3.0
    acts = ("tanh",) * (len(LAYERS) - 1)
    rate_100, nets = jax_rate(params, 100, seconds)
    rate_1000, _ = jax_rate(params, 1000, seconds)
    traj = simulate_population(params, nets, acts, seconds)

    n_np, np_seconds = 2, 0.5  # the baseline is slow: time a few flies for a short episode
    t0 = time.perf_counter()
    ref = [numpy_fly(params, {k: v[i].astype(np.float64) for k, v in nets.items()}, np_seconds) for i in range(n_np)]
    np_rate = n_np * np_seconds / params.dt / (time.perf_counter() - t0)
    ticks = ref[0].shape[0]
    agreement = float(max(np.abs(ref[i] - traj.pos[i, :ticks]).max() for i in range(n_np)))

    fit = FlyFitness(params, seconds, "lateral", acts)
    fit(nets)
    gen_times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fit(nets)
        gen_times.append(time.perf_counter() - t0)

    print(
        json.dumps(
            {
                "benchmark": "fly_rollout",
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.processor() or platform.platform()}",
                "jax_backend": jax.default_backend(),
                "episode_seconds": seconds,
                "fly_steps_per_second_jax_pop1000": rate_1000,
                "fly_steps_per_second_jax_pop100": rate_100,
                "fly_steps_per_second_numpy_loop": np_rate,
                "speedup_vs_numpy_loop": rate_1000 / np_rate,
                "speedup_vs_numpy_loop_pop100": rate_100 / np_rate,
                "seconds_per_generation": float(np.median(gen_times)),
                "seconds_per_generation_note": "100 flies x 3 s, fitness included",
                "numpy_vs_jax_max_position_difference": agreement,
            }
        )
    )


if __name__ == "__main__":
    main()
