"""The play server's rules (animat.play.server) over a physics-free session (fake_session.PointLive): loopback
only, the page's Origin only, its own assets only (404 for escapes), one controlling page, malformed messages
dropped and counted, the run directory written at q and at Ctrl-C. Cost: about 5 s."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from animat.errors import ConfigError
from animat.play.run import finish
from animat.play.server import PlayServer, bind, check_host
from animat.viz.report import three_dir

sync_client = pytest.importorskip("websockets.sync.client")
HERE = Path(__file__).parent
SRC = str(Path(__file__).parents[2] / "src")
pytestmark = pytest.mark.skipif(three_dir() is None, reason="three.js is not installed (`make setup`)")


@pytest.fixture
def served():
    """A PlayServer of a PointLive on a free port, in a thread; yields (server, port); ends it if the test did not."""
    yield from _serve()


def _serve(**kwargs):
    sys.path.insert(0, str(HERE))
    from fake_session import PointLive

    sock = bind("127.0.0.1", 0)
    server = PlayServer(PointLive(), three_dir(), **kwargs)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sock),), daemon=True)
    thread.start()
    yield server, sock.getsockname()[1]
    while server.done is None:
        time.sleep(0.01)
    server.done.set()  # (thread-unsafe, but the loop polls it every step)
    thread.join(10)
    sock.close()
    assert not thread.is_alive()


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    status = conn.getresponse().status
    conn.close()
    return status


def _page(port: int, origin: str | None = None):
    origin = origin or f"http://127.0.0.1:{port}"
    return sync_client.connect(f"ws://127.0.0.1:{port}/ws", origin=origin, open_timeout=10)


def _until(ws, test, seconds: float = 10.0) -> dict:
    """The first message from the server that ``test`` accepts."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        msg = json.loads(ws.recv(timeout=seconds))
        if test(msg):
            return msg
    raise AssertionError("no such message")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.2", "::", "example.org", ""])
def test_only_loopback_hosts(host):
    with pytest.raises(ConfigError, match="this machine only"):
        check_host(host)


def test_loopback_hosts_pass():
    assert [check_host(h) for h in ("127.0.0.1", "localhost", "::1")] == ["127.0.0.1", "localhost", "::1"]


def test_cli_refuses_another_host_in_one_line():
    run = subprocess.run(
        [sys.executable, "-m", "animat.cli", "play", "fly", "pretrained:paper", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=SRC),
        timeout=120,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().startswith("error: --host '0.0.0.0'") and len(run.stderr.strip().splitlines()) == 1


def test_page_assets_served_escapes_404(served):
    _, port = served
    assert [_get(port, p) for p in ("/", "/play.js", "/scene3d.js", "/three.module.min.js")] == [200] * 4
    for path in (
        "/../server.py",
        "/%2e%2e/server.py",
        "/..%2fserver.py",
        "/play.js/../../server.py",
        "/server.py",
        "/%2fetc%2fpasswd",
        "//etc/passwd",
        "/three/../../report.py",
        "/..\\server.py",
    ):
        assert _get(port, path) == 404, path


def test_foreign_origin_refused(served):
    from websockets.exceptions import InvalidStatus

    _, port = served
    with pytest.raises(InvalidStatus) as refused:
        _page(port, origin="http://evil.example")
    assert refused.value.response.status_code == 403


def test_one_page_in_control_and_malformed_messages_dropped(served, tmp_path):
    from websockets.exceptions import ConnectionClosed

    server, port = served
    with _page(port) as ws:
        hello = _until(ws, lambda m: m["type"] == "hello")
        assert hello["keys"]["ArrowUp"] == "forward" and hello["scene"]["objects"][0]["name"] == "point"
        with _page(port) as second:
            with pytest.raises(ConnectionClosed):
                second.recv(timeout=10)
            assert second.close_code == 1008
        for i in range(1000):
            ws.send(["{", "[]", '{"type": "command", "name": "warp", "id": 1}', "\x00" * (i % 50), "null"][i % 5])
        ws.send(json.dumps({"type": "command", "name": "forward", "id": 7}))
        state = _until(ws, lambda m: m["type"] == "state" and m["applied"] == 7)
        assert state["dropped"] == 1000 and state["command"] == "forward"
        moved = _until(ws, lambda m: m["type"] == "state" and m["position"][1] > 0.05)
        ws.send(json.dumps({"type": "quit"}))
    deadline = time.monotonic() + 10
    while not server.done.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    run_dir = finish(server, tmp_path / "run", say=lambda line: None)
    log = json.loads((run_dir / "play.json").read_text())
    assert log["ended_by"] == "q" and log["dropped_messages"] == 1000
    assert [c["name"] for c in log["commands"]] == ["forward"]
    assert json.loads((run_dir / "summary.json").read_text())["x"][1] >= moved["position"][1]


def test_a_page_back_within_the_grace_takes_over_and_one_that_is_not_ends_the_play():
    """A reload: the page goes, the simulation pauses, a new page within ``reconnect_s`` gets the hello and the
    play goes on from where it was (commands kept); gone for longer than that, the play ends as "page closed"."""
    serving = _serve(reconnect_s=0.6)
    server, port = next(serving)
    with _page(port) as ws:
        _until(ws, lambda m: m["type"] == "hello")
        ws.send(json.dumps({"type": "command", "name": "forward", "id": 1}))
        left = _until(ws, lambda m: m["type"] == "state" and m["position"][1] > 0.05)
    time.sleep(0.3)
    assert not server.done.is_set()
    with _page(port) as ws:
        assert _until(ws, lambda m: m["type"] == "hello")["type"] == "hello"
        back = _until(ws, lambda m: m["type"] == "state")
        assert back["command"] == "forward" and left["t"] <= back["t"] < left["t"] + 0.2  # paused while away
    deadline = time.monotonic() + 10
    while not server.done.is_set() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.ended_by == "page closed"
    next(serving, None)


def test_ctrl_c_writes_the_run_directory(tmp_path):
    script = (
        # a suite started in the background (`cmd &`, nohup) hands its children SIGINT ignored: restore the
        # terminal's default, which is what a user's Ctrl-C meets
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "sys.path.insert(0, sys.argv[1]); import fake_session\n"
        "from animat.play.run import play\n"
        "play(fake_session.open, 'x', {}, port=0, out=sys.argv[2], open_browser=False,\n"
        "     say=lambda line: print(line, flush=True))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(HERE), str(tmp_path / "run")],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=SRC),
    )
    port = int(proc.stdout.readline().split("http://127.0.0.1:")[1].split("/")[0])
    with _page(port) as ws:
        _until(ws, lambda m: m["type"] == "state" and m["t"] > 0.1)
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "ended (Ctrl-C)" in rest
    assert json.loads((tmp_path / "run" / "play.json").read_text())["ended_by"] == "Ctrl-C"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] > 10
