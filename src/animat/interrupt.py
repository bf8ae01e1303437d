"""Stopping a command on SIGINT (Ctrl-C) or SIGTERM: exit 130, one line, a run directory that ``--resume`` continues.

:func:`handled` (around the whole command, in :func:`animat.cli.main`) makes both signals record themselves and
raise ``KeyboardInterrupt`` in the main thread, as Ctrl-C does by default. Two things make that alone unsafe:

- the exception is lost where Python cannot propagate it: JAX runs a ``gc`` callback (``_xla_gc_callback``) at
  every collection, and an exception raised inside a ``gc`` callback, a ``__del__`` or a weakref callback is
  printed ("Exception ignored in ...") and dropped, so the run went on to its end and exited 0. The signal is
  therefore also recorded, and long loops call :func:`check` at their safe points (each generation after its
  checkpoint, each environment step, before a run's summary), which raises it again; inside a ``gc`` callback
  the handler only records it;
- JAX (0.10) compiles on a thread pool (``PjRtCompiler::CompileAndLoad``) while the main thread waits for the
  result interruptibly: a ``KeyboardInterrupt`` there leaves the compile running, and the interpreter's teardown
  (JAX's ``atexit`` ``clean_up`` -> ``clear_backends`` -> ``~PjRtClient``) frees the client under it, a
  segmentation fault in ``xla::ifrt::SingleDeviceSharding::Create`` on the pool thread. So a command stopped by a
  real signal leaves through :func:`leave`: one line, streams flushed, ``os._exit(130)``, no teardown. Every
  file animat writes is written atomically and the run's evaluators and environments are closed by the
  ``finally`` blocks the exception passed through, so nothing is lost by skipping it.

A verb says how to continue through :func:`resume_with`; the line is then
``interrupted: resume with animat fly train --resume RUN_DIR``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODE = 130  # 128 + SIGINT, the shell's status for a command ended by Ctrl-C

_received: int | None = None  # the number of the first signal received under handled(), else None
_hint: str | None = None  # the command that continues the interrupted run, set by the verb


def _in_gc_callback(frame) -> bool:
    """Whether ``frame`` runs inside one of ``gc.callbacks`` (where an exception is printed and dropped)."""
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in callbacks:
            return True
        frame = frame.f_back
    return False


def _on_signal(signum: int, frame) -> None:
    """Record the signal; raise ``KeyboardInterrupt`` but inside a ``gc`` callback (the next :func:`check` does)."""
    global _received
    if _received is None:
        _received = signum
    if not _in_gc_callback(frame):
        raise KeyboardInterrupt


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM record themselves and raise ``KeyboardInterrupt`` inside the block (the main thread's
    only: elsewhere signals cannot be handled, and the block runs as it is); after it, the previous handlers and
    nothing recorded."""
    global _received, _hint
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received, _hint = None, None


def received() -> bool:
    """Whether a signal arrived under :func:`handled` (its ``KeyboardInterrupt`` may have been lost since)."""
    return _received is not None


def check() -> None:
    """A safe point of a long loop: ``KeyboardInterrupt`` if a signal arrived (raised again where the first one
    was lost, see the module docstring)."""
    if _received is not None:
        raise KeyboardInterrupt


def resume_with(command: str | None) -> None:
    """The command that continues the interrupted run, for the line :func:`message` prints (None: none)."""
    global _hint
    _hint = command


def message() -> str:
    """The one line an interrupted command ends with."""
    return f"interrupted: resume with {_hint}" if _hint else "interrupted"


def leave(say: Callable[[str], None]) -> None:
    """End an interrupted command: ``say`` :func:`message`, then exit 130: by ``os._exit`` after a real signal
    (no interpreter teardown under XLA's threads, see the module docstring; further signals ignored), else by
    ``SystemExit``."""
    if _received is not None:  # a second Ctrl-C no longer interrupts the exit
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)
    say(message())
    if _received is None:
        sys.exit(EXIT_CODE)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT_CODE)
