"""The paper's GA against Stable-Baselines3 PPO on the fly's hover task at equal simulated flight time
(issue 21). Prints one JSON line; writes both learning curves (best and mean return against simulated
fly-seconds and against wall time) to ``--out``/fly_ga_vs_ppo.png and the curves to fly_ga_vs_ppo.json.

The same task for both: the paper preset, symmetric wings, ``hover`` fitness over ``--episode``-second
episodes from rest, no sensor noise. A PPO episode's return on ``animat/FlyHover-v0``
(:mod:`animat.fly.env`, ``start_scale = 0``) is the GA's hover fitness of the same flight, so both
curves are on one scale (higher is better, 0 is perfect).

Simulated flight time is counted for every fly either method flew: the GA, population × episode
seconds per generation (every genome is flown, elites again too); PPO, every environment tick
(control interval 10 ms) it collected. Both stop at the first generation or rollout that reaches
``--fly-seconds``. Curves: GA, best and mean fitness of each generation; PPO, best and mean return of
the episodes completed in each rollout (the stochastic policy that collects them). After training, the
PPO policy's deterministic action flies one more episode (reported, not counted: it is not learning).

Wall and CPU time include each method's set-up (JIT compilation of the rollout and of the env tick).

    .venv/bin/python benchmarks/fly_ga_vs_ppo.py [--out bench-out] [--fly-seconds 1800] [--episode 3] [--population 30]
    [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np

from animat.evolve import loop
from animat.evolve.evaluate import make_evaluator
from animat.evolve.network import layer_activations
from animat.evolve.strategies.paper_ga import PaperGA
from animat.fly.options import TrainConfig
from animat.fly.tasks import FlyFitness


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def run_ga(budget: float, episode: float, population: int, seed: int) -> dict:
    """The paper's GA (``animat fly train``'s defaults but the sizes) until ``budget`` fly-seconds."""
    per_generation = population * episode
    generations = max(1, math.ceil(budget / per_generation))
    cfg = TrainConfig.build(
        None, fitness="hover", population=population, generations=generations, seconds=episode, seed=seed
    )
    (w0, c0) = clocks()
    ga = PaperGA(
        cfg.population,
        tuple(cfg.layers),
        cfg.init_std,
        cfg.pool_frac,
        cfg.elite_frac,
        cfg.crossover_prob,
        cfg.mutation_rate,
        cfg.mutation,
        cfg.mutation_std,
    )
    activations = layer_activations(cfg.layers, cfg.activations)
    evaluator = make_evaluator(
        FlyFitness(cfg.fly_params(), episode, "hover", activations), cfg.layers, activations, True
    )
    wall, cpu = [], []
    try:
        state, _ = loop.run(
            ga,
            loop.start(ga, seed),
            evaluator,
            generations,
            on_generation=lambda st: (wall.append(time.perf_counter() - w0), cpu.append(time.process_time() - c0)),
        )
    finally:
        evaluator.close()
    h = state.history
    return {
        "fly_seconds": [per_generation * (i + 1) for i in range(len(h))],
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "best": [r["best"] for r in h],
        "mean": [r["mean"] for r in h],
        "crashes": int(sum(r["crashes"] for r in h)),
        "final_best_ever": float(state.best_fitness),
        "generations": generations,
    }


def run_ppo(budget: float, episode: float, seed: int, n_steps: int) -> dict:
    """PPO (Stable-Baselines3 defaults but ``n_steps``, one torch thread) on FlyHover from rest until ``budget``
    fly-seconds."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    import animat.fly.env  # noqa: F401  (registers the ids)

    torch.set_num_threads(1)
    (w0, c0) = clocks()
    env = Monitor(gym.make("animat/FlyHover-v0", seconds=episode, start_scale=0.0))
    dt = env.unwrapped.params.control_dt
    curve = {"fly_seconds": [], "wall_seconds": [], "cpu_seconds": [], "best": [], "mean": []}

    class Curve(BaseCallback):
        returns: list[float] = []

        def _on_step(self) -> bool:
            self.returns += [info["episode"]["r"] for info in self.locals["infos"] if "episode" in info]
            return True

        def _on_rollout_end(self) -> None:
            if self.returns:
                for key, value in (
                    ("fly_seconds", self.num_timesteps * dt),
                    ("wall_seconds", time.perf_counter() - w0),
                    ("cpu_seconds", time.process_time() - c0),
                    ("best", max(self.returns)),
                    ("mean", float(np.mean(self.returns))),
                ):
                    curve[key].append(value)
            self.returns = []

    ticks = math.ceil(budget / dt / n_steps) * n_steps
    model = PPO("MlpPolicy", env, n_steps=n_steps, seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=ticks, callback=Curve())
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(model.predict(obs, deterministic=True)[0])
        total, done = total + r, term or trunc
    return {
        **curve,
        "ticks": int(model.num_timesteps),
        "deterministic_return": float(total),
        "crashes": int(info["crashes"]),
    }


def plot(ga: dict, ppo: dict, path: Path, title: str) -> None:
    from animat.viz.plots import plt, save_figure

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for ax, x, label in (
        (axes[0], "fly_seconds", "simulated flight time (fly-seconds)"),
        (axes[1], "wall_seconds", "wall time (s, set-up included)"),
    ):
        for run, name, color in ((ga, "GA", "C0"), (ppo, "PPO", "C1")):
            ax.plot(run[x], run["best"], color=color, label=f"{name}: best")
            ax.plot(run[x], run["mean"], color=color, ls="--", alpha=0.7, label=f"{name}: mean")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[1].set_xscale("log")
    axes[0].set_ylabel("return = hover fitness (higher is better)")
    axes[0].set_ylim(bottom=max(axes[0].get_ylim()[0], -60))
    axes[0].legend()
    fig.suptitle(title)
    save_figure(fig, path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--fly-seconds", type=float, default=1800.0, help="simulated flight time per method")
    ap.add_argument("--episode", type=float, default=3.0)
    ap.add_argument("--population", type=int, default=30)
    ap.add_argument("--n-steps", type=int, default=1024, help="PPO ticks per rollout")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    load = round(os.getloadavg()[0], 2)
    ga = run_ga(args.fly_seconds, args.episode, args.population, args.seed)
    ppo = run_ppo(args.fly_seconds, args.episode, args.seed, args.n_steps)
    args.out.mkdir(parents=True, exist_ok=True)
    plot(
        ga,
        ppo,
        args.out / "fly_ga_vs_ppo.png",
        f"fly hover, {args.episode:g} s episodes from rest, {args.fly_seconds:g} fly-seconds each (seed {args.seed})",
    )
    (args.out / "fly_ga_vs_ppo.json").write_text(json.dumps({"ga": ga, "ppo": ppo}))

    def last(run: dict) -> dict:
        return {
            "fly_seconds": round(run["fly_seconds"][-1], 1),
            "wall_seconds": round(run["wall_seconds"][-1], 1),
            "cpu_seconds": round(run["cpu_seconds"][-1], 1),
            "best_last": round(run["best"][-1], 4),
            "best_overall": round(max(run["best"]), 4),
            "mean_last": round(run["mean"][-1], 4),
            "crashes": run["crashes"],
        }

    print(
        json.dumps(
            {
                "benchmark": "fly_ga_vs_ppo",
                "machine": platform.machine(),
                "cores": os.cpu_count(),
                "load_average_1min_at_start": load,
                "episode_seconds": args.episode,
                "fly_seconds_budget": args.fly_seconds,
                "seed": args.seed,
                "ga": {
                    **last(ga),
                    "population": args.population,
                    "generations": ga["generations"],
                    "best_ever": round(ga["final_best_ever"], 4),
                },
                "ppo": {
                    **last(ppo),
                    "ticks": ppo["ticks"],
                    "n_steps": args.n_steps,
                    "deterministic_return": round(ppo["deterministic_return"], 4),
                },
                "plot": str(args.out / "fly_ga_vs_ppo.png"),
            }
        )
    )


if __name__ == "__main__":
    main()
