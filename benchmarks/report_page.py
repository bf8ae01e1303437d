"""report.html of a 30 s fly replay: its size (with the plots it loads) and the time to its first 3D frame in
headless Chromium (Debian's ``chromium``, driven by playwright; software WebGL, SwiftShader). Prints one
JSON line.

The fly is a random network's (what matters here is the page, not the flight): ``animat fly replay``'s
files are written by :func:`animat.fly.replay.write_replay`, then :func:`animat.viz.report.write_report`.
``first_frame_ms`` is ``performance.now()`` at the first rendered frame, i.e. from the start of navigation
(parsing the page and three.js, decoding the buffers, building the scene, one render); the best and the
median of five fresh page loads in one browser. The issue's bounds: under 5 MB, under 2 s.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

LOADS = 5


def main() -> None:
    import jax
    from playwright.sync_api import sync_playwright

    from animat.evolve.genome import Genome
    from animat.fly.model import FlyParams
    from animat.fly.replay import write_replay
    from animat.viz.report import three_dir, write_report

    exe = shutil.which("chromium")
    if exe is None or three_dir() is None:
        print(json.dumps({"benchmark": "report_page", "skipped": "needs Debian's chromium and three.js (make setup)"}))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "viz"))
    from test_report_browser import FLAGS, loaded_bytes

    with tempfile.TemporaryDirectory(prefix="animat-report-bench-") as tmp:
        run = Path(tmp)
        params = FlyParams()
        write_replay(
            params,
            Genome.random(jax.random.PRNGKey(0), [params.n_inputs, 8, params.n_outputs]),
            30.0,
            run,
            anim_seconds=0.2,
        )
        start = time.perf_counter()
        write_report(run, params=params)
        write_seconds = time.perf_counter() - start
        times = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, headless=True, args=FLAGS)
            for _ in range(LOADS):
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.goto((run / "report.html").as_uri())
                page.wait_for_function("window.__replay && window.__replay.ready", timeout=60_000)
                times.append(page.evaluate("window.__replay.state.firstFrameMs"))
                frames = page.evaluate("window.__replay.frames")
                page.close()
            browser.close()
        print(
            json.dumps(
                {
                    "benchmark": "report_page",
                    "date": time.strftime("%Y-%m-%d"),
                    "machine": platform.machine(),
                    "cpus": os.cpu_count(),
                    "replay_seconds": 30.0,
                    "frames": frames,
                    "report_html_bytes": (run / "report.html").stat().st_size,
                    "page_and_plots_bytes": loaded_bytes(run),
                    "first_frame_ms_best": min(times),
                    "first_frame_ms_median": statistics.median(times),
                    "write_report_seconds": round(write_seconds, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
