"""Skier generation time: one GA generation (50 skiers x 20 s) scored by ``mujoco.rollout`` on a thread
pool, against the original's 20 s of real time per generation, and the batched rollout's steps/s
against a Python ``mj_step`` loop over the same model, same run. Prints one JSON line.

Three populations, all timed in this run: ``seconds_per_generation`` is the training's generation 0
(half standing-pose seeds, half random genes; fallen skiers stop being simulated after their 2-s
chunk); ``no_falls`` is 50 copies of the standing pose, which never fall, so every skier runs the
full 20 s (the worst case, as in a late generation where all skiers stay up); ``unchunked`` is
generation 0 in one rollout without dropping anyone. CPU seconds are given too, since wall time on
a shared machine depends on the others' load.

    .venv/bin/python benchmarks/skier_generation.py [--threads N] [--population P] [--seconds S] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from animat.skier.rollout import Evaluator, step_loop_states
from animat.skier.train import TrainConfig, first_generation

# the one-axis symmetric skier, the default when these figures were recorded (the default V-skates since issue 49)
SYMMETRIC = Path(__file__).resolve().parents[1] / "configs" / "skier_symmetric.toml"


def timed(ev: Evaluator, genes: np.ndarray, repeat: int) -> tuple[float, float]:
    """(best wall s, best CPU s) of ``repeat`` evaluations."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        ev.evaluate(genes)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--population", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--loop-genes", type=int, default=2)
    args = ap.parse_args()
    cfg = TrainConfig.build(SYMMETRIC, population=args.population, seconds=args.seconds)
    gen0 = first_generation(np.random.default_rng(cfg.seed), cfg)
    standing = np.zeros_like(gen0)
    out = {
        "benchmark": "skier_generation",
        "population": args.population,
        "seconds_per_evaluation": args.seconds,
        "threads": args.threads,
    }
    with (
        Evaluator(cfg.skier_params(), args.seconds, nthread=args.threads) as ev,
        Evaluator(cfg.skier_params(), args.seconds, nthread=args.threads, chunk_seconds=None) as whole,
    ):
        ev.evaluate(gen0[:2])  # start the pool
        for name, e, genes in (("", ev, gen0), ("no_falls_", ev, standing), ("unchunked_", whole, gen0)):
            wall, cpu = timed(e, genes, args.repeat)
            out[f"{name}seconds_per_generation"] = round(wall, 3)
            out[f"{name}cpu_seconds_per_generation"] = round(cpu, 3)
        fell = int(ev.evaluate(gen0).fell.sum())
        # rollout vs Python loop: the same skiers (standing, full length), steps per wall second and per CPU second
        t0, c0 = time.perf_counter(), time.process_time()
        ev.evaluate(standing)
        rollout_sps, rollout_cpu_sps = (
            args.population * ev.nstep / d for d in (time.perf_counter() - t0, time.process_time() - c0)
        )
        t0, c0 = time.perf_counter(), time.process_time()
        step_loop_states(ev.model, standing[: args.loop_genes], ev.nstep)
        loop_sps, loop_cpu_sps = (
            args.loop_genes * ev.nstep / d for d in (time.perf_counter() - t0, time.process_time() - c0)
        )
        out.update(timestep_s=ev.dt, chunk_seconds=ev.chunk * ev.dt, generation0_fell=fell)
    gen_s = out["seconds_per_generation"]
    out.update(
        {
            "original_seconds_per_generation": args.seconds,
            "speedup_vs_realtime": round(args.seconds / gen_s, 2),
            "no_falls_speedup_vs_realtime": round(args.seconds / out["no_falls_seconds_per_generation"], 2),
            "target_seconds_per_generation": 2.0,
            "meets_target": gen_s <= 2.0,
            "no_falls_meets_target": out["no_falls_seconds_per_generation"] <= 2.0,
            "rollout_steps_per_second": round(rollout_sps),
            "python_loop_steps_per_second": round(loop_sps),
            "rollout_vs_python_loop": round(rollout_sps / loop_sps, 2),
            "rollout_vs_python_loop_per_cpu_second": round(rollout_cpu_sps / loop_cpu_sps, 2),
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "machine": platform.processor() or platform.machine(),
        }
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
