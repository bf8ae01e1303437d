"""``animat view RUN_DIR``: serve one run directory over HTTP (its report.html at ``/``), nothing outside it.

A request whose path climbs (``..``, also percent-encoded), names something outside the directory
(an absolute path after decoding, a symlink whose target lies outside) or is not a file is answered
404. Only GET and HEAD are served.
"""

from __future__ import annotations

import mimetypes
import os
import socket
import sys
import webbrowser
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from animat.errors import RunDirError

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # this machine's own addresses
INDEX = "report.html"


def resolve_request(root: Path, target: str, index: str = INDEX) -> Path | None:
    """The file under ``root`` that the request target ``target`` (as in the request line) names, or None
    (answered 404) for a path with a ``..`` segment (after percent-decoding), a NUL or backslash, one whose
    real location (symlinks followed) is outside ``root``, or one that is not a file. ``/`` and folders name
    their ``index`` (report.html)."""
    path = unquote(urlsplit(target).path)
    parts = path.split("/")
    if ".." in parts or "\x00" in path or "\\" in path:
        return None
    rel = [p for p in parts if p not in ("", ".")]
    real_root = Path(root).resolve()
    candidate = real_root.joinpath(*rel) if rel else real_root
    if candidate.is_dir():
        candidate = candidate / index
    real = candidate.resolve()
    if not real.is_relative_to(real_root) or not real.is_file():
        return None
    return real


class RunDirHandler(BaseHTTPRequestHandler):
    """Files of one run directory (``root``), read-only."""

    server_version = "animat-view"

    def __init__(self, *args, root: Path, **kwargs):
        self.root = root
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        path = resolve_request(self.root, self.path)
        if path is None:
            self.send_error(404, "not found")
            return
        try:
            data = path.read_bytes()
        except OSError:
            self.send_error(404, "not found")
            return
        self.send_response(200)
        self.send_header("Content-Type", mimetypes.guess_type(path.name)[0] or "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # one short line per request on stderr
        sys.stderr.write(f"{self.command} {self.path} -> {args[1] if len(args) > 1 else ''}\n")


def make_server(run_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """A server for ``run_dir`` bound to ``host:port`` (port 0: any free one); RunDirError where it cannot bind."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{str(run_dir)!r} is not a directory; give a run directory")
    if not 0 <= port <= 65535:
        raise RunDirError(f"--port must be in 0..65535, got {port}")
    server_cls = type(
        "RunDirServer",
        (ThreadingHTTPServer,),
        {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET, "daemon_threads": True},
    )
    try:
        return server_cls((host, port), partial(RunDirHandler, root=run_dir.resolve()))
    except OSError as exc:
        raise RunDirError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pass another --port or --host"
        ) from None


def has_display() -> bool:
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(
    run_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
) -> None:
    """Serve ``run_dir`` until interrupted; ``say`` prints the address (and the warning for a non-local host)."""
    server = make_server(run_dir, host, port)
    bound = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    if host not in LOCAL_HOSTS:
        say(f"warning: listening on {host}, not only this machine: anyone who can reach it can read {run_dir}")
    say(f"serving {run_dir} at {url} (Ctrl-C stops)")
    if open_browser and has_display():
        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
