"""report.html without a browser: the scene's binary buffers, reports of runs in today's format, `animat view`'s
404s."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from animat import runs, systems
from animat.viz.report import write_report
from animat.viz.scene import Scene, frame_indices, quat_between_z
from animat.viz.serve import resolve_request

SRC = Path(__file__).resolve().parents[2] / "src"


def page_scene(path: Path) -> tuple[dict, list[str]]:
    """The scene JSON and base64 buffers a report.html embeds."""
    text = path.read_text(encoding="utf-8")
    desc = re.search(r"<script type='application/json' id='scene-json'>(.*?)</script>", text, re.S)
    bufs = re.search(r"<script type='application/json' id='scene-buffers'>(.*?)</script>", text, re.S)
    assert desc and bufs, "no replay in the page"
    return json.loads(desc.group(1)), json.loads(bufs.group(1))


def decode(ref: dict, bufs: list[str]) -> np.ndarray:
    """As replay.js decodes a buffer (n1: int8 / 127)."""
    raw = base64.b64decode(bufs[ref["b"]])
    dtype = {"f4": np.float32, "f2": np.float16, "n1": np.int8, "u4": np.uint32, "i4": np.int32}[ref["dtype"]]
    a = np.frombuffer(raw, dtype).reshape(ref["shape"])
    return a / 127.0 if ref["dtype"] == "n1" else a.astype(np.float32)


def test_scene_buffers_round_trip_at_their_precision():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 9, 3)).astype(np.float32)
    N = X / np.linalg.norm(X, axis=-1, keepdims=True)
    s = Scene(np.arange(5) * 0.1)
    s.add_mesh("exact", X, [[0, 1, 2]], normals=N)
    s.add_mesh("compact", X, [[0, 1, 2]], normals=N, compact=True)
    desc, bufs = s.to_json()
    exact, compact = desc["objects"]
    assert np.array_equal(decode(exact["positions"], bufs), X) and np.array_equal(decode(exact["normals"], bufs), N)
    assert np.allclose(decode(compact["positions"], bufs), X, rtol=1e-3, atol=1e-3)  # float16: 11 significant bits
    assert np.abs(decode(compact["normals"], bufs) - N).max() <= 0.5 / 127 + 1e-7
    assert decode(exact["faces"], bufs).tolist() == [0, 1, 2]
    assert np.allclose(desc["bounds"], [X.min(axis=(0, 1)), X.max(axis=(0, 1))])
    with pytest.raises(ValueError, match="3 frames, the scene 5"):
        s.add_points("p", X[:3], radius=0.1)


def test_frame_indices_thin_to_the_target_rate_and_keep_the_last():
    t = np.arange(3001) * 0.01  # 30 s at 100 Hz
    idx = frame_indices(t, fps=25.0)
    assert idx[0] == 0 and idx[-1] == 3000 and np.all(np.diff(idx)[:-1] == 4)
    assert len(frame_indices(t, fps=1000.0, most=100)) <= 101


def test_quat_between_z_turns_z_onto_the_segment():
    from scipy.spatial.transform import Rotation

    p0 = np.array([[0.0, 0, 0], [1, 1, 1], [0, 0, 1], [2, 0, 0]])
    p1 = np.array([[0.0, 0, 2], [1, 3, 1], [0, 0, 0], [2, 0.5, -1]])
    centre, half, q = quat_between_z(p0, p1)
    z = Rotation.from_quat(q[:, [1, 2, 3, 0]]).apply([0.0, 0, 1])
    d = p1 - p0
    assert np.allclose(z, d / np.linalg.norm(d, axis=1, keepdims=True)) and np.allclose(
        half, 0.5 * np.linalg.norm(d, axis=1)
    )
    assert np.allclose(centre, 0.5 * (p0 + p1))


def _todays_fly_replay(folder: Path, seconds: float = 2.0, dt: float = 0.01) -> Path:
    """A run directory as `animat fly replay` writes it today (no report.html, no config.json)."""
    T = int(seconds / dt)
    t = dt * np.arange(1, T + 1)
    pos = np.stack([0.1 * t, np.zeros(T), 5 + np.sin(t)], axis=1).astype(np.float32)
    quat = np.tile([1.0, 0, 0, 0], (T, 1)).astype(np.float32)
    wing = np.stack([np.sin(20 * t)] * 6, axis=1).astype(np.float32)
    runs.atomic_save_npz(
        folder / "trajectory.npz",
        t=t.astype(np.float32),
        position=pos,
        quaternion=quat,
        wing_angles=wing,
        crashed=np.zeros(T, bool),
    )
    runs.atomic_write_json(
        folder / "summary.json", {"seconds": seconds, "final_height_body_lengths": 1.25, "source": "gone.npz"}
    )
    return folder


def test_report_of_a_run_made_before_reports(animat_cli, tmp_path):
    run = _todays_fly_replay(tmp_path / "fly-replay-old")
    code, out, err = animat_cli("report", str(run))
    assert code == 0, err
    page = run / "report.html"
    assert "report.html" in out and page.is_file()
    desc, bufs = page_scene(page)
    times = decode(desc["times"], bufs)
    assert times[0] == pytest.approx(0.01) and times[-1] == pytest.approx(2.0)
    body, wings, path = desc["objects"]
    assert body["type"] == "mesh" and decode(body["positions"], bufs).shape == (len(times), 8, 3)
    assert decode(wings["positions"], bufs).shape == (len(times), 6, 3)
    # the body's centre follows the stored path, at the kept frames
    traj = runs.read_npz(run / "trajectory.npz")
    idx = np.searchsorted(traj["t"], times)
    assert np.allclose(decode(body["positions"], bufs).mean(axis=1), traj["position"][idx], atol=1e-4)
    assert any("paper preset" in n for n in desc["notes"])  # no config: it says which body it drew
    text = page.read_text()
    assert (
        "final_height_body_lengths" in text
        and "1.25" in text
        and "http" not in text.split("<script type='importmap'>")[0]
    )


def test_report_of_a_run_with_nothing_to_replay_and_of_no_directory(animat_cli, tmp_path):
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "loss.png").write_bytes(b"\x89PNG")
    runs.atomic_write_json(tmp_path / "summary.json", {"epochs": 3})
    code, _, err = animat_cli("report", str(tmp_path))
    assert code == 0, err
    text = (tmp_path / "report.html").read_text()
    assert "no 3D replay" in text and "plots/loss.png" in text and "scene-json" not in text
    code, _, err = animat_cli("report", str(tmp_path / "missing"))
    assert code == 2 and "is not a directory" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("damage", ["truncate", "not-npz"])
def test_report_refuses_an_unreadable_trajectory_and_an_empty_folder(animat_cli, tmp_path, damage):
    """A run whose trajectory.npz is damaged: one line naming the file, exit 2, no report.html (it said "nothing to
    replay" and exited 0); an empty folder: the same (it wrote a page of nothing)."""
    run = _todays_fly_replay(tmp_path / "run")
    path = run / "trajectory.npz"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2] if damage == "truncate" else b"not an npz")
    code, out, err = animat_cli("report", str(run))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "trajectory.npz" in err, err
    assert not (run / "report.html").exists()
    (tmp_path / "empty").mkdir()
    code, _, err = animat_cli("report", str(tmp_path / "empty"))
    assert code == 2 and "is empty" in err and len(err.strip().splitlines()) == 1
    assert list((tmp_path / "empty").iterdir()) == []


def test_resolve_request_keeps_to_the_run_directory(tmp_path):
    run = tmp_path / "run"
    (run / "plots").mkdir(parents=True)
    (run / "report.html").write_text("r")
    (run / "plots" / "a.png").write_bytes(b"p")
    (tmp_path / "secret.txt").write_text("s")
    (run / "out").symlink_to(tmp_path)
    (run / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (run / "inside.png").symlink_to(run / "plots" / "a.png")
    assert resolve_request(run, "/") == (run / "report.html").resolve()
    assert resolve_request(run, "/plots/a.png?x=1") == (run / "plots" / "a.png").resolve()
    assert resolve_request(run, "/inside.png") == (run / "plots" / "a.png").resolve()
    for bad in (
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/plots/..%2f..%2fsecret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/out/secret.txt",
        "/leak.txt",
        "//etc/passwd",
        str(tmp_path / "secret.txt"),
        "/plots",
        "/missing",
        "/a%00b",
        "/..\\secret.txt",
    ):
        assert resolve_request(run, bad) is None, bad


def test_animat_view_serves_the_run_and_answers_404_outside_it(tmp_path):
    run = tmp_path / "run"
    (run / "plots").mkdir(parents=True)
    (run / "report.html").write_text("<html>the report</html>")
    (run / "plots" / "a.png").write_bytes(b"png")
    (tmp_path / "secret.txt").write_text("secret")
    (run / "leak.txt").symlink_to(tmp_path / "secret.txt")
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONUNBUFFERED": "1"}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "animat.cli", "view", str(run), "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, (line, proc.stderr.read() if proc.poll() is not None else "")
        port = int(found.group(1))

        def get(path: str) -> tuple[int, bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.putrequest(
                "GET", path, skip_host=False, skip_accept_encoding=True
            )  # the path as given: nothing normalised
            conn.endheaders()
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
            return resp.status, body

        assert get("/") == (200, b"<html>the report</html>")
        assert get("/plots/a.png") == (200, b"png")
        for bad in (
            "/../secret.txt",
            "/..",
            "/../",
            "/%2e%2e/secret.txt",
            "/%2E%2E%2Fsecret.txt",
            "/plots/..%2f..%2fsecret.txt",
            "/leak.txt",
            str(tmp_path / "secret.txt"),
            "//" + str(tmp_path / "secret.txt"),
        ):
            status, body = get(bad)
            assert status == 404 and b"secret" not in body, bad
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_view_refuses_a_non_directory_and_warns_for_another_host(animat_cli, tmp_path, monkeypatch):
    code, _, err = animat_cli("view", str(tmp_path / "none"), "--no-browser")
    assert code == 2 and "is not a directory" in err
    from animat.viz import serve as serve_mod

    said = []
    monkeypatch.setattr(serve_mod.ThreadingHTTPServer, "serve_forever", lambda self: None)
    serve_mod.serve(tmp_path, host="0.0.0.0", port=0, open_browser=False, say=said.append)
    assert said[0].startswith("warning: listening on 0.0.0.0") and "serving" in said[1]


def test_swarm_scene_2d_in_the_plane_with_the_links_within_r(tmp_path):
    from itertools import combinations

    from animat.swarm import report as swarm

    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 10, (6, 15, 2)).astype(np.float32)
    runs.atomic_save_npz(tmp_path / "trajectory.npz", positions=pos, t=np.arange(6) * 0.5)
    runs.atomic_write_json(
        tmp_path / "summary.json",
        {"params": {"r": 3.0, "d": 2.5}, "obstacles": {"spheres": [{"center": [5, 5], "radius": 1.0}]}},
    )
    assert swarm.recognises(tmp_path)
    desc, bufs = swarm.build(tmp_path).to_json()
    agents, links = desc["objects"][0], desc["objects"][1]
    drawn = decode(agents["positions"], bufs)
    assert np.array_equal(drawn[..., :2], pos) and not drawn[..., 2].any()  # 2D: the plane z = 0
    pairs, offsets = decode(links["pairs"], bufs).astype(int), decode(links["offsets"], bufs).astype(int)
    for f in range(len(pos)):
        expected = {(i, j) for i, j in combinations(range(15), 2) if np.linalg.norm(pos[f, i] - pos[f, j]) < 3.0}
        assert {tuple(sorted(p)) for p in pairs.reshape(-1, 2)[offsets[f] : offsets[f + 1]]} == expected
    disc = next(o for o in desc["objects"] if o.get("name") == "obstacles")
    assert disc["kinds"] == ["cylinder"] and np.allclose(decode(disc["pos"], bufs), [[5, 5, 0]])


def test_a_replay_that_cannot_be_built_still_gives_the_page(tmp_path):
    runs.atomic_save_npz(
        tmp_path / "trajectory.npz",
        t=np.arange(3.0),
        position=np.zeros((3, 3)),
        quaternion=np.zeros((3, 4)),
        wing_angles=np.zeros((2, 6)),
    )  # two frames of wings for three of body: a torn file
    runs.atomic_write_json(tmp_path / "summary.json", {"seconds": 3.0})
    with pytest.warns(RuntimeWarning, match="no 3D replay"):
        write_report(tmp_path, builders=systems.scene_builders())
    text = (tmp_path / "report.html").read_text()
    assert "could not be built" in text and "seconds" in text and "scene-json" not in text
