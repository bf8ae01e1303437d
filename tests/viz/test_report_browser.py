"""report.html of each system in headless Chromium: no console errors, a 3D canvas that is not blank, a
timeline that changes the frame, a screenshot of each kept as a test artefact.

Needs Debian's ``chromium`` (``make test`` installs it where it runs as root), the ``playwright`` package
(the dev extra; its driver only, no browser download) and three.js (``make setup``); skipped, with the
reason, where one is missing. Screenshots go to ``$ANIMAT_TEST_ARTEFACTS`` if set, else pytest's tmp dir.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from animat import systems
from animat.viz.report import three_dir, write_report

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-gl=angle",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]


def _chromium() -> str | None:
    return os.environ.get("ANIMAT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium (Debian's chromium; `make test` installs it when run as root)")
    if three_dir() is None:
        pytest.skip("three.js is not installed (`make setup` runs npm install in src/animat/viz/web)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=FLAGS)  # a fresh profile of its own
        yield b
        b.close()


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("ANIMAT_TEST_ARTEFACTS") or tmp_path_factory.mktemp("report-screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def check_page(browser, page_path: Path, shot: Path) -> dict:
    """Open ``page_path`` from disk; assert no console errors, a canvas that is not blank and a timeline that changes
    it; save the screenshot of the last frame as ``shot``. Returns the first-frame time (ms from navigation) and
    size."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.resolve().as_uri())
    page.wait_for_function("window.__replay && window.__replay.ready", timeout=60_000)
    page.evaluate("window.__replay.pause()")
    canvas = page.locator("#replay-canvas")
    timeline = page.locator("#timeline")
    frames = page.evaluate("window.__replay.frames")

    def move_timeline_to(frame: int) -> np.ndarray:  # as a person drags it: the input event the slider sends
        timeline.evaluate("(el, f) => { el.value = String(f); el.dispatchEvent(new Event('input')); }", frame)
        return _pixels(canvas.screenshot())

    first = move_timeline_to(0)
    background = first[2, 2]
    drawn = (np.abs(first - background).sum(axis=-1) > 30).mean()
    last = move_timeline_to(frames - 1)
    changed = (np.abs(first - last).sum(axis=-1) > 30).mean()
    canvas.screenshot(path=str(shot))
    clock = page.locator("#clock").text_content()
    first_ms = page.evaluate("window.__replay.state.firstFrameMs")
    page.close()
    assert not errors, errors
    assert all(u.startswith(("file:", "data:")) for u in requests), [
        u for u in requests if not u.startswith(("file:", "data:"))
    ]
    assert drawn > 0.005, f"canvas nearly blank: {drawn:.4f} of its pixels differ from the background"
    assert changed > 0.001, f"moving the timeline changed only {changed:.5f} of the pixels"
    assert clock.startswith("t = ")
    return {"first_frame_ms": first_ms, "frames": frames, "drawn_fraction": float(drawn)}


def loaded_bytes(run_dir: Path) -> int:
    """Bytes of report.html and of what it loads beside it (the plots)."""
    text = (run_dir / "report.html").read_text(encoding="utf-8")
    return (run_dir / "report.html").stat().st_size + sum(
        p.stat().st_size for p in (run_dir / "plots").glob("*.png") if p.name in text
    )


def test_fly_replay_30s_report(browser, artefacts, tmp_path):
    """A 30 s fly replay, as `animat fly replay` writes it; its page with the plots beside it stays under 5 MB."""
    import jax

    from animat.evolve.genome import Genome
    from animat.fly.model import FlyParams
    from animat.fly.replay import write_replay

    params = FlyParams()
    genome = Genome.random(jax.random.PRNGKey(0), [params.n_inputs, 8, params.n_outputs])
    write_replay(params, genome, 30.0, tmp_path, anim_seconds=0.2)
    write_report(tmp_path, builders=systems.scene_builders(), params=params)
    size = loaded_bytes(tmp_path)
    result = check_page(browser, tmp_path / "report.html", artefacts / "fly.png")
    (artefacts / "fly.json").write_text(json.dumps({**result, "page_and_plots_bytes": size}))
    assert size < 5_000_000
    assert result["frames"] >= 30 * 25  # the whole 30 s, not a clip of it


def test_skier_report(browser, artefacts, tmp_path):
    from animat.skier.gene import mirror
    from animat.skier.replay import write_replay
    from animat.skier.train import TrainConfig

    cfg = TrainConfig.build(None)
    params = cfg.skier_params()
    gene = mirror(np.random.default_rng(1).uniform(-0.3, 0.3, (cfg.n_states, cfg.n_joints)))
    write_replay(params, gene, 1.0, tmp_path, anim_seconds=0.1, frame_dt=cfg.frame_dt, tau=cfg.tau)
    write_report(tmp_path, builders=systems.scene_builders(), params=params)
    check_page(browser, tmp_path / "report.html", artefacts / "skier.png")


def test_swarm_3d_report(browser, artefacts, tmp_path):
    from animat.swarm.run import SwarmConfig, write_run

    cfg = SwarmConfig.build(
        None,
        scheme="flocking",
        agents=20,
        steps=300,
        algorithm=3,
        dim=3,
        spheres=[[3.0, 3.0, 0.0, 1.0]],
        animation=False,
    )
    write_run(cfg, tmp_path)  # writes report.html itself
    check_page(browser, tmp_path / "report.html", artefacts / "swarm.png")


def test_surrogate_side_by_side_report(browser, artefacts, tmp_path):
    """Reference and learned cloth as evaluate hands them over (here: the rest sheet, the learned one bent)."""
    from animat.surrogate.play import rest_frame
    from animat.surrogate.report import side_by_side
    from animat.surrogate.scenes import get_scene

    sc = get_scene("sheet", size=7)
    rest, triangles = rest_frame(sc)
    T = 30
    Y = sc.controls(T, np.random.default_rng(0)).astype(np.float32)
    wave = np.sin(np.linspace(0, np.pi / 2, T))[:, None, None] * np.array([0.0, 0.0, 0.05]) * rest[None, :, :1]
    reference = np.repeat(rest[None], T, axis=0) + wave
    write_report(tmp_path, scene=side_by_side(sc, reference, reference - wave, Y, triangles))
    check_page(browser, tmp_path / "report.html", artefacts / "surrogate.png")


def test_imitate_play_report(browser, artefacts, tmp_path):
    """A play run as `animat imitate play` writes it (the poses of the demo clip for character and ghost)."""
    from animat import runs
    from animat.imitate.report import clip_poses
    from animat.imitate.train import TrainConfig, make_env

    env = make_env(TrainConfig.build(None), rsi=False)
    times, qpos = clip_poses(env, cycles=0.5)
    sunk = qpos.copy()
    sunk[:, 2] -= np.linspace(0, 0.5, len(times))  # the character falls behind its ghost
    runs.atomic_save_npz(
        tmp_path / "trajectory.npz",
        time=times,
        r_imitation=np.ones(len(times)),
        root_pos=sunk[:, :3],
        qpos_time=times,
        qpos=sunk,
        ghost_qpos=qpos,
    )
    write_report(tmp_path, builders=systems.scene_builders(), model=env.model)
    check_page(browser, tmp_path / "report.html", artefacts / "imitate.png")
