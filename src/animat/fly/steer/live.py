"""``animat fly steer --interactive``: steer a flying fly from the keyboard, in real time, in a terminal.

Keys (:data:`KEYS`): arrows = forward / back / left / right, page up / page down = up / down,
space = hover, q = quit. They are read from the terminal in cbreak mode (:class:`TerminalKeys`: no
display needed), decoded by a pure function (:func:`decode_keys`: bytes -> command names) and fed
to a pilot (``command(name)``, ``tick() -> record``) by :func:`fly_live`, one control tick per
``pilot.dt`` of wall time, with a status line refreshed in place (:func:`status_line`).
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

from animat.errors import ConfigError

QUIT = "quit"
ESC = 0x1B
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


def _sequence_end(data: bytes, i: int) -> int | None:
    """Index just past the escape sequence that starts at ``data[i]`` (an ESC), None if it is incomplete."""
    if i + 1 >= len(data):
        return None
    kind = data[i + 1]
    if kind == ord("["):  # CSI: parameters, then one final byte in 0x40-0x7E
        for j in range(i + 2, len(data)):
            if 0x40 <= data[j] <= 0x7E:
                return j + 1
        return None
    if kind == ord("O"):  # SS3: one byte follows
        return i + 3 if i + 2 < len(data) else None
    return i + 2  # ESC + a key (alt-key): ignored


def decode_keys(data: bytes) -> tuple[list[str], bytes]:
    """Bytes read from a terminal -> ``(actions, rest)``: the command names (and :data:`QUIT`) of the keys
    in ``data`` in order, unknown keys and sequences skipped, and ``rest``: an escape sequence cut
    short at the end of ``data``, to be prefixed to the next read."""
    actions, i = [], 0
    while i < len(data):
        if data[i] == ESC:
            end = _sequence_end(data, i)
            if end is None:
                return actions, data[i:]
        else:
            end = i + 1
        action = KEYS.get(data[i:end])
        if action is not None:
            actions.append(action)
        i = end
    return actions, b""


class KeySource(Protocol):
    def read(self, timeout: float) -> bytes:
        """The bytes typed so far, waiting at most ``timeout`` s for the first (b"" if none came)."""


class TerminalKeys:
    """Keys typed on the terminal ``fd`` (default stdin), in cbreak mode while inside ``with``: each key
    arrives at once, unechoed; Ctrl-C still interrupts. The terminal's settings are restored on leaving,
    whatever ends the block. ConfigError (one line) when ``fd`` is not a terminal."""

    def __init__(self, fd: int | None = None):
        self.fd = fd
        self._saved = None

    @staticmethod
    def check(fd: int | None = None) -> int:
        """``fd`` (default stdin's) if it is a terminal, else ConfigError (one line)."""
        import sys

        try:
            fd = sys.stdin.fileno() if fd is None else fd
            ok = os.isatty(fd)
        except (AttributeError, OSError, ValueError):  # no stdin, or one without a file descriptor
            ok = False
        if not ok:
            raise ConfigError(
                "--interactive reads keys from a terminal, but stdin is not one; run it in a terminal or give "
                "--commands"
            )
        return fd

    def __enter__(self) -> TerminalKeys:
        import termios
        import tty

        self.fd = self.check(self.fd)
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd, termios.TCSANOW)
        return self

    def __exit__(self, *exc) -> None:
        import termios

        termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        return os.read(self.fd, 1024) if ready else b""


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
    from animat.console import console

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
