"""More skiers, more generations (issue 49): the skier's GA with populations of 50, 200 and 500 on ``--backend ray``
for the same wall time each; the best skier's distance against population size. Prints one JSON line and writes
the curves of the best skier's distance against wall time to ``bench-out/skier_population.png``.

Each population runs ``animat skier train``'s own strategy, evaluator and generation loop
(:mod:`animat.skier.train`, :func:`animat.evolve.loop.run`; configs/skier_symmetric.toml's settings, the default
before the V-skate; one seed) on one local Ray of ``--workers`` CPUs, started before the clocks start. A population
stops before a generation that, at its
previous generation's pace, would end past ``--minutes`` (the first always runs; a generation can take longer than
the one before, its skiers falling later, so the last may end past the budget: the JSON line gives the time used). The
distance: net forward metres in the 20 s episode of the best skier so far (the generation's best when it beats the
best so far), as ``animat skier train`` reports ``best_net_forward_m``. The machine is shared: the JSON line gives
the load average at the end.

    .venv/bin/python benchmarks/skier_population.py [--populations 50 200 500] [--minutes 4] [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from operator import attrgetter
from pathlib import Path

import numpy as np

from animat.evolve import loop
from animat.skier import train as skier_train

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "skier_symmetric.toml"


def run_population(population: int, budget_s: float, seed: int, workers: int) -> dict:
    """Generations of ``population`` skiers within ``budget_s`` wall seconds: per generation its end (s since the
    start), the best fitness so far and that skier's distance (m)."""
    cfg = skier_train.TrainConfig.build(CONFIG, population=population, seed=seed, backend="ray", nthread=workers)
    strategy = skier_train.strategy(cfg)
    state = loop.start(strategy, cfg.seed)
    ends, best, distance = [], [], []
    with skier_train.make_evaluator(cfg, cfg.skier_params()) as ev:
        t0 = time.perf_counter()
        last = 0.0
        while time.perf_counter() - t0 + last <= budget_s:
            state, _ = loop.run(
                strategy, state, ev, state.generation + 1, fitness_of=attrgetter("fitness"), metrics=skier_train._row
            )
            row = state.history[-1]
            last = row["seconds"]
            improved = not best or row["best"] > best[-1]
            ends.append(time.perf_counter() - t0)
            best.append(row["best_ever"])
            distance.append(row["best_net_forward_m"] if improved else distance[-1])
    print(json.dumps({"population": population, "generations": len(ends), "distance_m": distance[-1]}), file=sys.stderr)
    return {"end_seconds": ends, "best_fitness": best, "best_distance_m": distance}


def plot(results: dict, path: Path, minutes: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (population, r) in enumerate(results.items()):
        ax.step(
            np.array(r["end_seconds"]) / 60,
            r["best_distance_m"],
            "o-",
            where="post",
            ms=3,
            color=f"C{i}",
            label=population,
        )
    ax.set_xlabel("wall time (min)")
    ax.set_ylabel("best skier's distance (m, 20 s)")
    ax.set_xlim(0, max(minutes, max(r["end_seconds"][-1] for r in results.values()) / 60 + 0.1))
    ax.legend(title="population")
    sizes = [int(p) for p in results]
    bx.plot(sizes, [r["best_distance_m"][-1] for r in results.values()], "o-")
    for p, r in results.items():
        bx.annotate(
            f"{len(r['end_seconds'])} gen",
            (int(p), r["best_distance_m"][-1]),
            textcoords="offset points",
            xytext=(4, -12),
        )
    bx.set_xticks(sizes)
    bx.set_xlabel("population")
    bx.set_ylabel(f"best distance after {minutes:g} min (m)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--populations", type=int, nargs="+", default=[50, 200, 500])
    ap.add_argument("--minutes", type=float, default=4.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    args = ap.parse_args()
    import ray

    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        results = {str(p): run_population(p, 60 * args.minutes, args.seed, args.workers) for p in args.populations}
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        ray.shutdown()
    plot(results, args.out / "skier_population.png", args.minutes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "skier_population.json").write_text(json.dumps(results))
    print(
        json.dumps(
            {
                "benchmark": "skier_population",
                "minutes_each": args.minutes,
                "workers": args.workers,
                "seed": args.seed,
                "results": {
                    p: {
                        "generations": len(r["end_seconds"]),
                        "evaluations": int(p) * len(r["end_seconds"]),
                        "best_distance_m": round(r["best_distance_m"][-1], 3),
                        "best_fitness": round(r["best_fitness"][-1], 3),
                        "wall_seconds_used": round(r["end_seconds"][-1], 1),
                    }
                    for p, r in results.items()
                },
                "driver_cpu_seconds": round(cpu, 1),
                "wall_seconds": round(wall, 1),
                "cpus": os.cpu_count(),
                "load_average_1min": round(os.getloadavg()[0], 2),
                "machine": platform.processor() or platform.machine(),
                "plot": str(args.out / "skier_population.png"),
            }
        )
    )


if __name__ == "__main__":
    main()
