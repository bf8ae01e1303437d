"""ImitateEnv throughput (30 Hz control steps per second) on this machine's cores. Prints one JSON line.

Single: one env in this process, the ball-joint servos in MuJoCo (the default) and, side by side, the
Python quaternion PD (``mujoco_servos=False``, the original path), and the default servos with the
task goal and the per-axis ball-joint limits switched on (``goal``, ``joint_limits``). Vectorised: ``SubprocVecEnv``
with as many envs as cores (and ``DummyVecEnv`` with as many, in one process), stepped with random
actions (Gaussian, std 0.37 rad around zero, like the untrained policy), auto-resetting; needs
stable-baselines3 (the ``rl`` extra), else those keys are null. Random episodes are short (the
character falls within ~1 s), so resets (~1 step's cost each) are included at the rate training sees.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

import mujoco
import numpy as np

from animat.imitate.env import ImitateEnv
from animat.imitate.goal import GoalConfig
from animat.imitate.reward import preset

STD = 0.37


def single_rate(steps: int, **env_options) -> float:
    env = ImitateEnv(**env_options)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    acts = rng.normal(0.0, STD, (steps, 28)).astype(np.float32)
    t0 = time.perf_counter()
    for a in acts:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t0)


def vec_rate(kind: str, n_envs: int, steps: int) -> float | None:
    try:
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    except ImportError:
        return None
    venv = (SubprocVecEnv if kind == "subproc" else DummyVecEnv)([ImitateEnv for _ in range(n_envs)])
    try:
        venv.seed(0)
        venv.reset()
        rng = np.random.default_rng(0)
        acts = rng.normal(0.0, STD, (steps, n_envs, 28)).astype(np.float32)
        for a in acts[:20]:  # warm up the workers
            venv.step(a)
        t0 = time.perf_counter()
        for a in acts:
            venv.step(a)
        return steps * n_envs / (time.perf_counter() - t0)
    finally:
        venv.close()


def main() -> None:
    quick = "--quick" in sys.argv
    n = 300 if quick else 2000
    cores = os.cpu_count() or 1
    res = {"benchmark": "imitate_env", "cores": cores, "machine": platform.processor() or platform.machine(),
           "mujoco": mujoco.__version__, "load_average_1min": round(os.getloadavg()[0], 2)}
    res["steps_per_s_single"] = single_rate(n)
    res["steps_per_s_single_python_pd"] = single_rate(max(n // 5, 100), mujoco_servos=False)
    res["speedup_mujoco_servos"] = res["steps_per_s_single"] / res["steps_per_s_single_python_pd"]
    res["steps_per_s_single_goal_limits"] = single_rate(n, goal=GoalConfig(change_seconds=(1.0, 3.0)), joint_limits=True,
                                                       reward=preset("paper", w_imitation=0.7, w_goal=0.3))
    res["vectorised_envs"] = cores
    res["steps_per_s_vectorised"] = vec_rate("subproc", cores, n // cores)
    res["steps_per_s_vectorised_dummy"] = vec_rate("dummy", cores, n // cores)
    res["physics_steps_per_control_step"] = 20
    print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()}))


if __name__ == "__main__":
    main()
