"""``animat play`` in headless Chromium, as a user plays it: the page loads, keys steer, the page's state
(``window.animat.state``) answers, its real-time factor and key-to-state delay are measured and recorded, q ends
the play and the run directory is written. Screenshots go to the ``artefacts`` folder (tests/play/conftest.py).
Cost: the fly about 40 s (JAX start-up, compiling its seven networks, 5 s of play, writing its run directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from animat import systems
from animat.info import describe

SRC = str(Path(__file__).parents[2] / "src")


def start(args: list[str], out: Path) -> tuple[subprocess.Popen, str]:
    """``animat play ARGS`` on a free port, writing into ``out``; (the process, the page's address)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "animat.cli", "play", *args, "--port", "0", "--no-browser", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, PYTHONPATH=SRC),
    )
    for line in proc.stdout:
        if "http://127.0.0.1:" in line:
            return proc, "http://" + line.split("http://")[1].split()[0]
    raise AssertionError(f"animat play ended before serving (exit {proc.wait()})")


def open_page(browser, url: str):
    """The page at ``url`` once it drew its first state; (page, console errors so far and to come)."""
    page = browser.new_page(viewport={"width": 1000, "height": 760})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("window.animat && window.animat.ready", timeout=60_000)
    return page, errors


def sample(page, seconds: float, every_ms: int = 100) -> list[dict]:
    """``window.animat.state`` every ``every_ms`` for ``seconds``."""
    out = []
    for _ in range(int(seconds * 1000 / every_ms)):
        page.wait_for_timeout(every_ms)
        out.append(page.evaluate("JSON.parse(JSON.stringify(window.animat.state))"))
    return out


def hold(page, key: str, seconds: float, last_s: float) -> tuple[list[dict], list[dict]]:
    """Hold ``key`` for ``seconds`` (wall time) sampling the state; (every sample, those of the last ``last_s`` s of
    simulated time)."""
    page.keyboard.down(key)
    held = sample(page, seconds)
    page.keyboard.up(key)
    return held, [s for s in held if s["t"] >= held[-1]["t"] - last_s]


def end(page, proc: subprocess.Popen, out: Path) -> dict:
    """Press q; the process exits 0 and its run directory holds play.json (returned)."""
    page.keyboard.press("q")
    rest = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, rest
    return json.loads((out / "play.json").read_text())


def angle_deg(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.degrees(np.arccos(np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1, 1))))


def test_play_fly(browser, artefacts, tmp_path):
    out = tmp_path / "run"
    proc, url = start(["fly", "pretrained:paper"], out)
    try:
        page, errors = open_page(browser, url)
        held, last = hold(page, "ArrowUp", 2.0, 1.0)
        assert all(s["command"] == "forward" for s in last)
        mean_velocity = np.mean([s["velocity"] for s in last], axis=0)
        assert angle_deg(mean_velocity, last[-1]["direction"]) < 30
        page.keyboard.press("PageUp")
        climb = sample(page, 1.5)
        assert climb[-1]["command"] == "up" and climb[-1]["position"][2] > climb[0]["position"][2]
        assert np.mean([s["velocity"][2] for s in climb[5:]]) > 0
        page.screenshot(path=str(artefacts / "play-fly.png"))
        state = climb[-1]
        assert state["rtf"] is not None and state["lag_ms"] is not None  # measured and shown by the page
        log = end(page, proc, out)
    finally:
        proc.kill()
    assert errors == []
    assert log["ended_by"] == "q" and [c["name"] for c in log["commands"]] == ["forward", "up"]
    assert log["page_realtime_factor"] and any(lag is not None for lag in log["page_command_lag_ms"])
    assert {"trajectory.npz", "summary.json", "report.html", "config.json"} <= {p.name for p in out.iterdir()}
    assert describe(out, systems.run_kinds())["verb"] == "steer"  # animat info: fly steer's
    figures = {"rtf": log["page_realtime_factor"], "lag_ms": log["page_command_lag_ms"], "page": state}
    (artefacts / "play-fly.json").write_text(json.dumps(figures))


def test_play_flock(browser, artefacts, tmp_path):
    """A click on the ground sets the flock's target; its centre moves toward it. Cost: about 20 s."""
    out = tmp_path / "run"
    proc, url = start(["swarm", "flocking", "-n", "200"], out)
    try:
        page, errors = open_page(browser, url)
        box = page.locator("#play-canvas").bounding_box()
        page.mouse.click(box["x"] + 0.9 * box["width"], box["y"] + 0.5 * box["height"])
        page.wait_for_function("window.animat.state.command.startsWith('target (') && window.animat.lags.length > 0")
        first = page.evaluate("JSON.parse(JSON.stringify(window.animat.state))")
        later = sample(page, 3.0)[-1]
        page.screenshot(path=str(artefacts / "play-flock.png"))
        log = end(page, proc, out)
    finally:
        proc.kill()
    target = np.asarray(first["target"][:2])
    start_gap = np.linalg.norm(target - first["position"][:2])
    assert start_gap > 20  # a click far from the flock (the canvas's right edge)
    assert np.linalg.norm(target - later["position"][:2]) < start_gap - 1.0
    assert errors == [] and log["commands"][0]["type"] == "target"
    assert {"trajectory.npz", "summary.json", "report.html", "metrics.csv"} <= {p.name for p in out.iterdir()}
    assert describe(out, systems.run_kinds())["verb"] == "run"  # animat info: a flocking run


def press_in_play(browser, args: list[str], out: Path, key: str, seconds: tuple[float, float]):
    """``animat play ARGS`` into ``out``: sample the page's state ``seconds[0]`` s, press ``key``, sample ``seconds[1]``
    s, take a screenshot, press q. Returns (the states before, after, play.json with the PNG bytes as its
    ``screenshot``, the console errors)."""
    proc, url = start(args, out)
    try:
        page, errors = open_page(browser, url)
        before = sample(page, seconds[0])
        page.keyboard.press(key)
        after = sample(page, seconds[1])
        shot = page.screenshot()
        log = end(page, proc, out)
    finally:
        proc.kill()
    return before, after, {**log, "screenshot": shot}, errors


def _heading_deg(states: list[dict]) -> float:
    """Direction (deg, counter-clockwise from +x) of the mean horizontal velocity of ``states``."""
    vx, vy = np.mean([s["velocity"][:2] for s in states], axis=0)
    return float(np.degrees(np.arctan2(vy, vx)))


def test_play_character(browser, artefacts, tmp_path):
    """pretrained:walk has no speed input (no task goal): ArrowLeft turns its heading 30° left (its reference clip
    turned, :mod:`animat.imitate.live`). Cost: about 20 s."""
    out = tmp_path / "run"
    before, after, log, errors = press_in_play(browser, ["imitate", "pretrained:walk"], out, "ArrowLeft", (1.5, 3.5))
    before, after = before[-10:], after[-10:]
    (artefacts / "play-character.png").write_bytes(log.pop("screenshot"))
    turned = (_heading_deg(after) - _heading_deg(before) + 180) % 360 - 180
    assert 15 < turned < 45, turned
    assert "fell" not in after[-1]["command"] and after[-1]["rtf"] is not None
    assert errors == [] and [c["name"] for c in log["commands"]] == ["left"]
    assert {"trajectory.npz", "summary.json", "report.html"} <= {p.name for p in out.iterdir()}
    assert describe(out, systems.run_kinds())["verb"] == "play"  # animat info: imitate play's


def _speed(samples: list[dict]) -> float:
    """The horizontal speed of the mean velocity of ``samples`` (the page's states)."""
    return float(np.linalg.norm(np.mean([s["velocity"][:2] for s in samples], axis=0)))


def test_play_the_characters_skills(browser, artefacts, tmp_path):
    """``animat play imitate pretrained:locomotion`` (the skill selector): J switches the walk to the jog and the
    character's speed rises (measured: walk 0.8-1.05 m/s, jog 2.6-3.0 m/s over the last 1.5 s of 3 s; the selector
    falls once after the switch, and the page counts it). Cost: about 20 s."""
    out = tmp_path / "run"
    walk, jog, log, errors = press_in_play(browser, ["imitate", "pretrained:locomotion"], out, "j", (2.0, 3.0))
    walk, jog = walk[-10:], jog[-15:]
    (artefacts / "play-skills.png").write_bytes(log.pop("screenshot"))
    assert walk[-1]["command"].startswith("walk") and jog[-1]["command"].startswith("jog")
    assert _speed(jog) > 1.8 * _speed(walk), (_speed(walk), _speed(jog))
    assert errors == [] and log["ended_by"] == "q"
    assert {"trajectory.npz", "summary.json", "report.html"} <= {p.name for p in out.iterdir()}


@pytest.mark.slow  # about 40 s: the fruit fly's networks compile, 8 s of play; the paper fly's test covers the page
def test_play_the_fruit_fly(browser, artefacts, tmp_path):
    """``animat play fly pretrained:drosophila``: the page shows it slowed down 10 times (rate 0.1: 8 s of play are
    0.8 s of flight), in mm; held ArrowUp flies it along +x within 30° at more than half the set's 0.3 m/s."""
    out = tmp_path / "run"
    proc, url = start(["fly", "pretrained:drosophila"], out)
    try:
        page, errors = open_page(browser, url)
        held, last = hold(page, "ArrowUp", 8.0, 0.3)  # the last 0.3 s of flight
        assert all(s["command"] == "forward" for s in last)
        assert held[-1]["t"] - held[0]["t"] < 1.0  # 8 s of play: at most 0.8 s of flight (slowed down)
        mean_velocity = np.mean([s["velocity"] for s in last], axis=0)  # mm/s
        assert angle_deg(mean_velocity, [1.0, 0.0, 0.0]) < 30 and mean_velocity[0] > 150.0, mean_velocity
        page.screenshot(path=str(artefacts / "play-drosophila.png"))
        log = end(page, proc, out)
    finally:
        proc.kill()
    assert errors == []
    assert log["ended_by"] == "q" and [c["name"] for c in log["commands"]] == ["forward"]
    assert json.loads((out / "summary.json").read_text())["preset"] == "drosophila"
