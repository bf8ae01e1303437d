"""Imitate environment throughput (30 Hz control steps per second) against the physics limit. Prints one JSON line.

Usage: ``python benchmarks/imitate_env.py [--quick] [--ppo] [--skills] [--envs N] [--substeps S] [--threads T]``

- ``physics_limit_steps_per_s``: raw ``mj_step`` calls per second of the character (the walk clip's
  humanoid, N characters from reference-state starts, one ``MjData`` each, stepped
  ``mj_step(nstep=S)`` on T threads with nothing else: ``raw_mj_steps_per_s``), divided by the S
  physics substeps per control step. Episodes of 1 s, restarted outside the timing.
- ``steps_per_s_vectorised``: everything training needs per step, through the SB3 ``VecEnv`` PPO uses
  (:class:`animat.imitate.vecenv.BatchVecEnv` over :class:`animat.imitate.batch.ImitateBatch`):
  physics, reference poses, observations, rewards, terminations, auto-resets and infos, for N
  characters on T threads, with the recipe's environment options (``configs/imitate_walk_cpu.toml``:
  ``residual``, its pose termination, ``target_obs``; the substeps as given) and its actions (the clip's
  pose plus N(0, 0.05) rad noise); ``fraction_of_physics_limit`` is their ratio. The two
  are measured in alternating rounds (best of each kept) so that other load on the machine hits both.
- Baselines: one ``ImitateEnv`` in this process (``steps_per_s_single``), ``SubprocVecEnv`` of T
  ``ImitateEnv`` processes (``steps_per_s_subproc``), both at 20 substeps (the old path).
- ``tracking``: open-loop clip tracking (residual, zero action) per substep count: mean r_I and mean
  key-body error (m) over the first 0.5 s from 16 reference-state starts: what fewer substeps cost.
- ``--ppo``: ``ppo_fps``: PPO's own samples per second (``fps`` of ``metrics.csv``, updates included)
  over a short run of ``configs/imitate_walk_cpu.toml`` (its network, batch and epochs), and its
  fraction of the physics limit; beside it the same run with the rollouts' policy forward on the update's
  torch threads (``rollout_torch_threads = 0``, as before 2026-12-04: ``ppo_fps_rollouts_on_update_threads``).
- ``--skills``: the same for the skill selector on walk, jog and run (``configs/imitate_locomotion_cpu.toml``,
  issue 47): ``steps_per_s_vectorised_locomotion`` and its ``fraction_of_physics_limit_locomotion`` (measured
  in the same alternating rounds as the walk's, at the given substeps), and with ``--ppo`` its PPO samples per
  second ``ppo_fps_locomotion`` and ``ppo_fraction_of_physics_limit_locomotion``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mujoco
import numpy as np

from animat.character.clip import load_clip, resolve_clip
from animat.imitate.batch import ImitateBatch
from animat.imitate.env import ImitateEnv
from animat.imitate.vecenv import BatchVecEnv

RECIPE = Path(__file__).resolve().parents[1] / "configs" / "imitate_walk_cpu.toml"
LOCOMOTION = RECIPE.with_name("imitate_locomotion_cpu.toml")
STD = 0.05


def arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def raw_rate(clip, n: int, substeps: int, threads: int, control_steps: int) -> float:
    """mj_step calls per second: n characters, ``control_steps`` × ``substeps`` steps each, on ``threads`` threads."""
    batch = ImitateBatch(clip, n, seed=1, substeps=substeps)
    model, datas = batch.model, batch.datas
    spans = [c for c in np.array_split(np.arange(n), threads) if c.size]
    elapsed, done = 0.0, 0
    with ThreadPoolExecutor(threads) as pool:
        for start in range(0, control_steps, 30):  # 1 s episodes from fresh reference states
            batch.reset()
            k = min(30, control_steps - start)
            t0 = time.perf_counter()
            list(pool.map(lambda c: [mujoco.mj_step(model, datas[i], nstep=substeps * k) for i in c], spans))
            elapsed += time.perf_counter() - t0
            done += n * substeps * k
    batch.close()
    return done / elapsed


def recipe_options(recipe: Path = RECIPE) -> dict:
    """ImitateBatch's options in the recipe (``RECIPE``, or ``recipe``)."""
    from animat.imitate.options import TrainConfig
    from animat.imitate.train import batch_options

    return batch_options(TrainConfig.build(recipe))


def vectorised_rate(clip, n: int, substeps: int, threads: int, control_steps: int, recipe: Path = RECIPE) -> float:
    venv = BatchVecEnv(ImitateBatch(clip, n, threads=threads, **{**recipe_options(recipe), "substeps": substeps}))
    venv.seed(0)
    venv.reset()
    acts = np.random.default_rng(0).normal(0.0, STD, (control_steps, n, 28)).astype(np.float32)
    t0 = time.perf_counter()
    for a in acts:
        venv.step(a)
    rate = control_steps * n / (time.perf_counter() - t0)
    venv.close()
    return rate


def single_rate(clip, steps: int) -> float:
    env = ImitateEnv(clip, residual=True)
    env.reset(seed=0)
    acts = np.random.default_rng(0).normal(0.0, STD, (steps, 28)).astype(np.float32)
    t0 = time.perf_counter()
    for a in acts:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t0)


def subproc_rate(clip, n: int, steps: int) -> float | None:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = SubprocVecEnv([lambda: ImitateEnv(clip, residual=True) for _ in range(n)])
    try:
        venv.seed(0)
        venv.reset()
        acts = np.random.default_rng(0).normal(0.0, STD, (steps, n, 28)).astype(np.float32)
        for a in acts[:20]:  # warm up the workers
            venv.step(a)
        t0 = time.perf_counter()
        for a in acts:
            venv.step(a)
        return steps * n / (time.perf_counter() - t0)
    finally:
        venv.close()


def tracking(clip, substeps: int) -> dict:
    batch = ImitateBatch(clip, 16, seed=0, residual=True, substeps=substeps, early_termination=False, max_seconds=100.0)
    r, err = [], []
    for _ in range(15):
        r.append(batch.step(np.zeros((16, 28)))[5])
        err.append(batch.key_error())
    batch.close()
    return {"r_i_mean": round(float(np.mean(r)), 4), "key_error_m": round(float(np.mean(err)), 4)}


def ppo_fps(minutes: float, key: str = "ppo_fps", recipe: Path = RECIPE, **overrides) -> dict:
    from animat.imitate.options import TrainConfig
    from animat.imitate.train import read_metrics, train

    with tempfile.TemporaryDirectory(prefix="imitate-bench-") as tmp:
        cfg = TrainConfig.build(recipe, max_minutes=minutes, eval_episodes=0, checkpoint_every=0, **overrides)
        train(cfg, Path(tmp))
        rows = read_metrics(Path(tmp) / "metrics.csv")
    steps, seconds = rows[-1]["timesteps"], rows[-1]["seconds"]
    if overrides or recipe != RECIPE:
        return {key: round(steps / seconds, 1)}
    return {
        key: round(steps / seconds, 1),
        "ppo_iteration_fps": [r["fps"] for r in rows],
        "ppo_samples": steps,
        "ppo_envs": cfg.envs,
        "ppo_substeps": cfg.substeps,
        "ppo_net_arch": cfg.net_arch,
        "ppo_torch_threads": {"rollout": cfg.rollout_torch_threads, "update": cfg.torch_threads},
    }


def main() -> None:
    quick = "--quick" in sys.argv
    n, substeps, threads = arg("--envs", 32), arg("--substeps", 10), arg("--threads", 2)
    clip = load_clip(resolve_clip("shared:humanoid3d_walk.txt"))
    res = {
        "benchmark": "imitate_env",
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "cores": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "mujoco": mujoco.__version__,
        "load_average_1min_before": round(os.getloadavg()[0], 2),
        "envs": n,
        "threads": threads,
    }
    steps, skills = (30 if quick else 90), "--skills" in sys.argv
    for s in sorted({substeps, 20}):
        raw, vec, loco = [], [], []
        for _ in range(2 if quick else 3):  # alternate, so that load elsewhere hits both
            raw.append(raw_rate(clip, n, s, threads, steps))
            vec.append(vectorised_rate(clip, n, s, threads, steps))
            if skills and s == substeps:
                loco.append(vectorised_rate(clip, n, s, threads, steps, LOCOMOTION))
        if loco:
            res["steps_per_s_vectorised_locomotion"] = round(max(loco), 1)
            res["fraction_of_physics_limit_locomotion"] = round(max(loco) / (max(raw) / s), 3)
        key = "" if s == substeps else f"_{s}_substeps"
        res[f"substeps{key}"] = s
        res[f"raw_mj_steps_per_s{key}"] = round(max(raw))
        res[f"physics_limit_steps_per_s{key}"] = round(max(raw) / s, 1)
        res[f"steps_per_s_vectorised{key}"] = round(max(vec), 1)
        res[f"fraction_of_physics_limit{key}"] = round(max(vec) / (max(raw) / s), 3)
    res["steps_per_s_single"] = round(single_rate(clip, 300 if quick else 1000), 1)
    res["steps_per_s_subproc"] = round(subproc_rate(clip, threads, 100 if quick else 400), 1)
    res["tracking_first_0.5s"] = {str(s): tracking(clip, s) for s in (5, 10, 20, 40)}
    if "--ppo" in sys.argv:
        res.update(ppo_fps(0.5 if quick else 2.0))
        res.update(ppo_fps(0.5 if quick else 2.0, "ppo_fps_rollouts_on_update_threads", rollout_torch_threads=0))
        res["ppo_fraction_of_physics_limit"] = round(res["ppo_fps"] / res["physics_limit_steps_per_s"], 3)
        if skills:
            res.update(ppo_fps(0.5 if quick else 2.0, "ppo_fps_locomotion", LOCOMOTION))
            limit = res["physics_limit_steps_per_s"]
            res["ppo_fraction_of_physics_limit_locomotion"] = round(res["ppo_fps_locomotion"] / limit, 3)
        res["ppo_fraction_rollouts_on_update_threads"] = round(
            res["ppo_fps_rollouts_on_update_threads"] / res["physics_limit_steps_per_s"], 3
        )
    res["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
