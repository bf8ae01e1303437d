"""``animat play SYSTEM SOURCE``: open the system's live session, serve it (:mod:`animat.play.server`) until the
play ends, then write its run directory (the system's own files and ``play.json``: :meth:`PlayServer.log`)."""

from __future__ import annotations

import asyncio
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from animat import runs
from animat.errors import ConfigError
from animat.play.server import PlayServer, bind, check_host, check_port
from animat.viz.report import three_dir
from animat.viz.serve import has_display


def play(
    open_session: Callable[..., Any],
    source: str,
    options: dict[str, Any],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    out: Path | None = None,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
) -> Path | None:
    """Play ``open_session(source, **options)`` live at ``http://host:port/`` until q, the page's closing or
    Ctrl-C; returns the run directory written (None when nothing was played). Every input is checked (one-line
    errors) before the session opens."""
    check_host(host)
    check_port(port)
    if out is not None:
        runs.check_out(out)
    three = three_dir()
    if three is None:
        raise ConfigError("animat play draws with three.js, which is not installed: run `make setup`")
    session = open_session(source, **options)
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    say(f"playing {session.system} at {url} (q on the page, closing it or Ctrl-C ends the play)")
    if open_browser and has_display():
        webbrowser.open(url)
    server = PlayServer(session, three)
    try:
        asyncio.run(server.serve(sock))
    except KeyboardInterrupt:
        server.ended_by = "Ctrl-C"
    finally:
        sock.close()
    return finish(server, out, say)


def finish(server: PlayServer, out: Path | None, say: Callable[[str], None]) -> Path | None:
    """Write the run directory of the play ``server`` served (None, written nowhere, if not one step was taken)."""
    if server.session.steps() == 0:
        say("nothing was played: no run directory written")
        return None
    run_dir = runs.new_run_dir(server.session.system, "play", out)
    log = server.log()
    server.session.write(run_dir, log)
    runs.atomic_write_json(run_dir / "play.json", log)
    say(f"the play ended ({log['ended_by']}); run directory: {run_dir}")
    return run_dir
