"""The play server: the page, its assets and one WebSocket, on this machine only; the simulation stepped on wall
time; the run directory written when the play ends (q on the page, the page closed and not back within
:data:`RECONNECT_S`, Ctrl-C). A page that goes away (a reload) pauses the simulation; the page that comes back
within that time takes over where it left.

Rules: it listens on a loopback address only (:func:`check_host`); the WebSocket (``/ws``) refuses a handshake
whose Origin is not the page's own (websockets' ``origins``, answered 403); it serves its page folder
(``web/``, by :func:`animat.viz.serve.resolve_request`'s 404 rules) and the page's JavaScript modules
(:func:`animat.viz.report.module_files`) and nothing else; one page controls at a time (a second is closed with
1008); a malformed or refused message is dropped and counted (:func:`animat.play.protocol.parse_message`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import mimetypes
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from animat import strict_json
from animat.errors import ConfigError, RunDirError
from animat.play.pacing import Pacer
from animat.play.protocol import parse_message, rounded
from animat.viz.report import module_files
from animat.viz.serve import resolve_request

WEB = Path(__file__).with_name("web")
PAGE = "play.html"
SOCKET_PATH = "/ws"
STATE_EVERY_S = 1 / 30  # wall-clock s between state messages
RECONNECT_S = 3.0  # wall-clock s a page has to come back (a reload) before the play ends as "page closed"


def check_host(host: str) -> str:
    """``host`` if it names this machine (``localhost`` or a loopback address), else ConfigError (one line)."""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        raise ConfigError(f"--host {host!r}: animat play listens on this machine only (127.0.0.1, ::1 or localhost)")
    return host


def check_port(port: int) -> int:
    """``port`` if it is one (0..65535; 0: any free one), else ConfigError (one line)."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {port}")
    return port


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (port 0: any free one; a page may connect at once, it is answered
    when the server runs); RunDirError (one line) where it cannot bind."""
    check_host(host)
    check_port(port)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
        sock.listen()
    except OSError as exc:
        sock.close()
        raise RunDirError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pass another --port") from None
    return sock


def page_origins(port: int) -> list[str]:
    """The origins the page can have when served on ``port`` of this machine."""
    return [f"http://{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")]


def asset(target: str, modules: dict[str, Path]) -> Path | None:
    """The file a request target names: one of ``modules`` (``/name.js`` -> path) or a file of the page's folder
    (``/`` its page); None (404) for anything else."""
    return modules.get(urlsplit(target).path) or resolve_request(WEB, target, index=PAGE)


class PlayServer:
    """Serves one live ``session`` (:class:`animat.play.session.LiveSession`) to one page at a time.
    ``three``: the npm package folder of three.js. After :meth:`serve` ends, :meth:`log` says what happened."""

    def __init__(self, session, three: Path, reconnect_s: float = RECONNECT_S):
        self.session, self.reconnect_s = session, float(reconnect_s)
        self.modules = {"/" + p.name: p for p in module_files(three).values()}
        self.controller = None
        self.pacer: Pacer | None = None  # made when the first page connects: time starts then
        self.dropped = 0
        self.applied = -1  # id of the last command or target taken
        self.commands: list[dict[str, Any]] = []
        self.page: dict[str, list] = {"rtf": [], "lag_ms": []}
        self.ended_by = ""
        self.answer = False
        self.done: asyncio.Event | None = None
        self.ending: asyncio.TimerHandle | None = None  # ends the play unless a page comes back first

    def _process_request(self, connection, request):
        """Static files for any path but the WebSocket's (None: go on with the handshake)."""
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        if urlsplit(request.path).path == SOCKET_PATH:
            return None
        path = asset(request.path, self.modules)
        if path is None:
            return connection.respond(404, "not found\n")
        body = path.read_bytes()
        kind = "text/javascript" if path.suffix == ".js" else mimetypes.guess_type(path.name)[0] or "text/plain"
        headers = Headers([("Content-Type", kind), ("Content-Length", str(len(body))), ("Cache-Control", "no-store")])
        return Response(200, "OK", headers, body)

    def _hello(self) -> str:
        desc, buffers = self.session.scene().to_json()
        desc["bounds"] = [list(map(float, corner)) for corner in self.session.arena]
        s = self.session
        return strict_json.dumps(
            {"type": "hello", "system": s.system, "dt": s.dt, "rate": s.rate, "keys": s.keys, "targets": s.targets}
            | {"scene": desc, "buffers": buffers}
        )

    async def _handler(self, connection) -> None:
        from websockets.exceptions import ConnectionClosed

        if self.controller is not None:
            await connection.close(1008, "another page is in control")
            return
        self.controller = connection
        if self.ending is not None:  # a page back in time: the play goes on
            self.ending.cancel()
        try:
            await connection.send(self._hello())
            if self.pacer is None:  # time starts with the first page
                self.pacer = Pacer(self.session.dt / self.session.rate, time.monotonic())
            else:  # a page back after a reload: time goes on from where it paused
                self.pacer.pause(False, time.monotonic())
            async for text in connection:
                self.receive(text)
        except ConnectionClosed:
            pass
        finally:
            self.controller = None
            self._departed()

    def _departed(self) -> None:
        """The controlling page has gone: pause, and end the play as "page closed" unless a page is back within
        ``reconnect_s``."""
        if self.done.is_set():
            return
        if self.pacer is not None:
            self.pacer.pause(True, time.monotonic())
        self.ending = asyncio.get_running_loop().call_later(self.reconnect_s, self._end)

    def _end(self) -> None:
        if not self.done.is_set():
            self.ended_by = self.ended_by or "page closed"
            self.done.set()

    def receive(self, text) -> None:
        """Act on one message of the page; a malformed one, or one the session refuses, is dropped and counted."""
        msg = parse_message(text)
        try:
            if msg is None:
                raise ConfigError("malformed")
            kind, s, now = msg["type"], self.session, time.monotonic()
            if kind == "command":
                s.command(msg["name"])
            elif kind == "target":
                s.target(float(msg["x"]), float(msg["y"]))
            elif kind == "pause":
                self.pacer.pause(msg["paused"], now)
            elif kind == "reset":
                s.reset()
            elif kind == "quit":
                self.ended_by = "q"
                self.done.set()
            elif kind == "stats":
                self.page["rtf"].append(msg["rtf"])
                self.page["lag_ms"].append(msg["lag_ms"])
        except ConfigError:
            self.dropped += 1
            return
        if kind in ("command", "target", "reset"):
            self.answer = True  # the state after the next step goes at once: the page measures the delay
            self.applied = msg.get("id", self.applied)
            self.commands.append({k: v for k, v in msg.items() if k != "id"} | {"t": s.status()["t"]})

    def _state(self) -> str:
        st = {k: v if isinstance(v, str) else rounded(np.ravel(v)) for k, v in self.session.status().items()}
        return strict_json.dumps(
            st
            | {
                "type": "state",
                "t": float(self.session.status()["t"]),
                "objects": {k: {f: rounded(v) for f, v in o.items()} for k, o in self.session.frame().items()},
                "applied": self.applied,
                "paused": self.pacer.paused,
                "dropped": self.dropped,
                "slowed_steps": self.pacer.forgiven,
            }
        )

    async def _simulate(self) -> None:
        """Step the session on wall time while a page is connected; send it the state every STATE_EVERY_S."""
        from websockets.exceptions import ConnectionClosed

        sent = -1.0
        while not self.done.is_set():
            now = time.monotonic()
            if self.pacer is not None:
                for _ in range(self.pacer.due(now)):
                    self.session.step()
                if self.controller is not None and (now - sent >= STATE_EVERY_S or self.answer):
                    sent, self.answer = now, False
                    try:
                        await self.controller.send(self._state())
                    except ConnectionClosed:
                        pass
            wait = self.pacer.wait(time.monotonic()) if self.pacer is not None else STATE_EVERY_S
            await asyncio.sleep(min(wait, STATE_EVERY_S))

    async def serve(self, sock: socket.socket) -> None:
        """Serve on the bound ``sock`` until the page quits or closes (or the task is cancelled: Ctrl-C)."""
        from websockets.asyncio.server import serve

        self.done = asyncio.Event()
        port = sock.getsockname()[1]
        async with serve(
            self._handler,
            sock=sock,
            origins=page_origins(port),
            process_request=self._process_request,
            max_size=2**16,
            server_header="animat-play",
        ):
            await self._simulate()
            if self.controller is not None:
                await self.controller.close(1000, "the play has ended")

    def log(self) -> dict[str, Any]:
        """What the play recorded: how it ended, the commands with their simulated times (s), the page's own
        real-time factors and command delays (ms, one a second), messages dropped, steps slowed down."""
        return {
            "ended_by": self.ended_by or "Ctrl-C",
            "commands": self.commands,
            "page_realtime_factor": self.page["rtf"],
            "page_command_lag_ms": self.page["lag_ms"],
            "dropped_messages": self.dropped,
            "slowed_steps": self.pacer.forgiven if self.pacer else 0,
        }
