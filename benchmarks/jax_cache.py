"""JAX's persistent compilation cache (animat.jax_cache): the same command run twice on an empty cache.

``animat fly train -p 8 -g 2 -s 1`` (issue 52, acceptance 3) runs twice, one after the other, in fresh
processes sharing a new cache folder. The first compiles every program and stores it; the second loads
them. Reported: generation 0's seconds from each run's metrics.csv (compilation included: the time
until the first generation is done) and each command's whole wall time (replay and media included),
with the ratios first / second. The two runs' best fitness must agree. Prints one JSON line.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

COMMAND = ["fly", "train", "-p", "8", "-g", "2", "-s", "1"]


def _run(work: Path, name: str, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")} | {"ANIMAT_JAX_CACHE": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "animat.cli", *COMMAND, "--out", str(work / name)],
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    with open(work / name / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    return {"generation0_s": float(rows[0]["seconds"]), "wall_s": wall, "best": float(rows[-1]["best"])}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="animat-bench-cache-") as tmp:
        work = Path(tmp)
        first = _run(work, "first", work / "cache")
        second = _run(work, "second", work / "cache")
    if first["best"] != second["best"]:
        raise SystemExit(f"the cached run differs: best {first['best']} vs {second['best']}")
    result = {
        "benchmark": "jax_cache",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": "animat " + " ".join(COMMAND),
        "first": first,
        "second": second,
        "generation0_ratio": round(first["generation0_s"] / second["generation0_s"], 2),
        "wall_ratio": round(first["wall_s"] / second["wall_s"], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
