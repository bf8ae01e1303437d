"""Cost and health of the garments' MuJoCo reference (issue 48): frames per second per core and the time that a
dataset of ``configs/surrogate_<garment>.toml`` (1e5 frames) takes on 2 cores.

Each garment scene at its config's ``[scene]`` settings simulates ``--frames`` frames of chained clips from a fixed
seed (after its warm-up). Per scene: wall and CPU seconds per recorded frame (the CPU time of this process: on a
shared machine the wall time also counts the other jobs; the reference is single-threaded), frames per CPU second,
the warm-up's share, the projected hours of one 2-worker generation of the config's ``[generate]`` (episodes x
(warm-up + frames) at the CPU rate, split over the workers), frames dropped, and the cloth's largest stretch
(edge length / rest length; 99th percentile over frames of each frame's largest). The 1-minute load average is
recorded. The older ``cape`` scene (a capsule torso) runs in the same process as a yardstick: its cost at idle is
known (BENCHMARKS.md), so the ratio carries these figures to an idle machine. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the per-frame NumPy of the drive stays on one core

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GARMENTS = ("cape-character", "skirt-character")
BASELINE = "cape"  # the capsule-torso cape (BENCHMARKS.md, surrogate_speed: 7.6 ms a frame at idle), same run


def measure(scene_name: str, frames: int, seed: int) -> dict:
    from animat.config import load_toml
    from animat.surrogate.scenes import get_scene

    config = load_toml(ROOT / "configs" / f"surrogate_{scene_name.replace('-', '_')}.toml")
    scene = get_scene(scene_name, **config["scene"])
    wall, cpu = time.perf_counter(), time.process_time()
    run = scene.simulate(frames, seed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stepped = frames + scene.warmup_frames
    X, edges = run["X"].astype(np.float64), scene.topology()["edges"]
    rest = scene.topology()["rest"].astype(np.float64)
    stretch = np.linalg.norm(X[:, edges[:, 0]] - X[:, edges[:, 1]], axis=-1) / np.linalg.norm(
        rest[edges[:, 0]] - rest[edges[:, 1]], axis=-1
    )
    gen = config["generate"]
    cpu_per_frame = cpu / stepped
    dataset_seconds = gen["episodes"] * (gen["frames"] + scene.warmup_frames) * cpu_per_frame / gen["workers"]
    return {
        f"{scene_name}_vertices": scene.n_vertices,
        f"{scene_name}_wall_ms_per_frame": 1e3 * wall / stepped,
        f"{scene_name}_cpu_ms_per_frame": 1e3 * cpu_per_frame,
        f"{scene_name}_frames_per_cpu_second": 1.0 / cpu_per_frame,
        f"{scene_name}_dataset_frames": gen["episodes"] * gen["frames"],
        f"{scene_name}_dataset_hours_on_{gen['workers']}_cores": dataset_seconds / 3600,
        f"{scene_name}_dropped_frames": run["dropped"],
        f"{scene_name}_stretch_max": float(stretch.max()),
        f"{scene_name}_stretch_p99": float(np.percentile(stretch.max(axis=1), 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenes", nargs="+", default=[BASELINE, *GARMENTS], choices=[BASELINE, *GARMENTS])
    args = parser.parse_args()
    out = {"benchmark": "surrogate_garment_reference", "frames": args.frames, "seed": args.seed}
    for name in args.scenes:
        out.update(measure(name, args.frames, args.seed))
    out.update(
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=platform.processor() or platform.machine(),
        cores=os.cpu_count(),
        load_1min=os.getloadavg()[0],
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
