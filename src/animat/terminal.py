"""Keys typed in a terminal, without a display (shared by the systems' ``--interactive`` modes): the terminal in
cbreak mode (:class:`TerminalKeys`) and a pure decoder of its bytes (:func:`decode_keys`: bytes -> the names a
key map gives them, escape sequences such as the arrows included)."""

from __future__ import annotations

import os
import select
from collections.abc import Mapping
from typing import Protocol

from animat.errors import ConfigError

ESC = 0x1B


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


def decode_keys(data: bytes, keys: Mapping[bytes, str]) -> tuple[list[str], bytes]:
    """Bytes read from a terminal -> ``(actions, rest)``: the names ``keys`` gives the keys in ``data``, in
    order, unknown keys and sequences skipped, and ``rest``: an escape sequence cut short at the end of
    ``data``, to be prefixed to the next read."""
    actions, i = [], 0
    while i < len(data):
        if data[i] == ESC:
            end = _sequence_end(data, i)
            if end is None:
                return actions, data[i:]
        else:
            end = i + 1
        action = keys.get(data[i:end])
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
