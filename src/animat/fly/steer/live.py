"""``animat fly steer --interactive``: steer a flying fly from the keyboard, in real time, in a terminal.

Keys (:data:`KEYS`): arrows = forward / back / left / right, page up / page down = up / down,
space = hover, q = quit. They are read from the terminal in cbreak mode (:class:`TerminalKeys`: no
display needed), decoded by a pure function (:func:`decode_keys`: bytes -> command names) and fed
to a pilot (``command(name)``, ``tick() -> record``) by :func:`fly_live`, one control tick per
``pilot.dt`` of wall time, with a status line refreshed in place (:func:`status_line`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from animat import terminal
from animat.console import console
from animat.errors import ConfigError
from animat.terminal import KeySource, TerminalKeys

QUIT = "quit"
KEYS = {
    b"\x1b[A": "forward",
    b"\x1bOA": "forward",  # arrows (normal and application cursor mode)
    b"\x1b[B": "back",
    b"\x1bOB": "back",
    b"\x1b[D": "left",
    b"\x1bOD": "left",
    b"\x1b[C": "right",
    b"\x1bOC": "right",
    b"\x1b[5~": "up",
    b"\x1b[6~": "down",  # page up, page down
    b" ": "hover",
    b"q": QUIT,
    b"Q": QUIT,
}
HELP = "arrows: forward/back/left/right   page up/down: up/down   space: hover   q: quit"


def decode_keys(data: bytes) -> tuple[list[str], bytes]:
    """Bytes read from a terminal -> ``(actions, rest)``: the command names (and :data:`QUIT`) of :data:`KEYS`
    (:func:`animat.terminal.decode_keys`)."""
    return terminal.decode_keys(data, KEYS)


def status_line(record: dict, note: str = "") -> str:
    """One line of a pilot's ``tick()`` record: time, position, speed, the active command, and ``note``."""
    x, y, z = (float(v) for v in record["position"])
    speed = float(np.linalg.norm(record["velocity"]))
    line = (
        f"t {float(record['t']):7.2f} s   position ({x:+7.2f}, {y:+7.2f}, {z:+7.2f}) u   speed {speed:5.2f} u/s   "
        f"{record['command']}"
    )
    return line + ("   CRASHED" if record["crashed"] else "") + (f"   ({note})" if note else "")


def fly_live(
    pilot,
    keys: KeySource,
    *,
    status: Callable[[dict, str], None] | None = None,
    realtime: bool = True,
    status_every: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict]:
    """Fly ``pilot`` (``command(name)``, ``tick() -> record``, ``dt`` s) under the keys of ``keys`` until
    q, Ctrl-C or a crash; returns the records of its ticks. With ``realtime`` each tick waits for its
    moment on ``clock`` (reading keys meanwhile), else ticks follow each other at once (one read each).
    A command the pilot refuses (a ConfigError: no network for it) is skipped and noted.
    ``status(record, note)`` every ``status_every`` s of flight (whole ticks) from the first tick, and at the end;
    ``note`` names the last command refused since the last one taken ("" if none)."""
    records: list[dict] = []
    pending, start, note = b"", clock(), ""
    every = max(1, int(round(status_every / pilot.dt)))  # ticks between status lines
    try:
        while True:
            wait = start + len(records) * pilot.dt - clock() if realtime else 0.0
            data = keys.read(max(0.0, wait))
            actions, pending = decode_keys(pending + data)
            if not data:
                pending = b""  # a lone ESC nothing followed: drop it
            quit = QUIT in actions
            for name in actions[: actions.index(QUIT)] if quit else actions:
                try:
                    pilot.command(name)
                    note = ""
                except ConfigError:
                    note = f"no network for {name}"
            if quit:
                break
            records.append(pilot.tick())
            if status is not None and (len(records) - 1) % every == 0:
                status(records[-1], note)
            if records[-1]["crashed"]:
                break
    except KeyboardInterrupt:
        pass
    if status is not None and records:
        status(records[-1], note)
    return records


def fly_interactive(pilot, *, fd: int | None = None, out=None) -> list[dict]:
    """Steer ``pilot`` live from the terminal ``fd`` (default stdin, :class:`TerminalKeys`) in real time,
    the key help and then the status line (refreshed in place) on ``out`` (default the console's
    file); returns the records of its ticks (:func:`fly_live`). The terminal is restored however it ends."""

    out = console.file if out is None else out

    def show(record: dict, note: str) -> None:
        out.write("\r" + status_line(record, note) + "\x1b[K")
        out.flush()

    with TerminalKeys(fd) as keys:
        out.write(HELP + "\n")
        try:
            return fly_live(pilot, keys, status=show)
        finally:
            out.write("\n")
            out.flush()
