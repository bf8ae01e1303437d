"""animat.interrupt in this process: the handlers it installs and takes back, the signal a gc callback would drop."""

from __future__ import annotations

import gc
import signal

import pytest

from animat import interrupt


def test_handled_installs_its_handler_for_both_signals_and_restores_the_previous_ones():
    before = {s: signal.getsignal(s) for s in interrupt.SIGNALS}
    with interrupt.handled():
        assert all(signal.getsignal(s) is interrupt._on_signal for s in interrupt.SIGNALS)
        assert not interrupt.received()
        interrupt.check()  # nothing received: no exception
    assert {s: signal.getsignal(s) for s in interrupt.SIGNALS} == before


def test_a_signal_raises_keyboard_interrupt_and_is_recorded_until_the_block_ends():
    with interrupt.handled():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
        assert interrupt.received()
        with pytest.raises(KeyboardInterrupt):  # raised again at every safe point
            interrupt.check()
        interrupt.resume_with("animat fly train --resume RUN")
        assert interrupt.message() == "interrupted: resume with animat fly train --resume RUN"
    assert not interrupt.received() and interrupt.message() == "interrupted"


def test_a_signal_inside_a_gc_callback_is_recorded_not_raised_there(monkeypatch):
    """JAX's gc callback runs at every collection; an exception raised in a gc callback is dropped (handed to
    sys.unraisablehook). The signal is only recorded there, and the next check raises it."""
    dropped = []
    monkeypatch.setattr("sys.unraisablehook", dropped.append)
    sent = []

    def callback(phase, info):
        if phase == "start" and not sent:
            sent.append(phase)
            signal.raise_signal(signal.SIGINT)  # its handler runs here, in this callback's frame

    with interrupt.handled():
        gc.callbacks.append(callback)
        try:
            gc.collect()
        except KeyboardInterrupt:
            pytest.fail("the signal raised outside the gc callback it arrived in")
        finally:
            gc.callbacks.remove(callback)
        assert sent and not dropped and interrupt.received()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()


def test_leave_after_a_signal_says_its_line_and_exits_130_at_once_deaf_to_more_signals(monkeypatch):
    """After a real signal: the resume line, then ``os._exit(130)`` (here a stand-in that raises), further
    signals ignored; without one (a KeyboardInterrupt raised by code), ``SystemExit(130)``."""

    class Exited(Exception):
        pass

    def fake_exit(code):
        raise Exited(code)

    said = []
    with interrupt.handled():
        with pytest.raises(SystemExit) as plain:
            interrupt.leave(said.append)
        assert plain.value.code == 130 and signal.getsignal(signal.SIGINT) is interrupt._on_signal
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        interrupt.resume_with("animat skier train --resume RUN")
        monkeypatch.setattr(interrupt.os, "_exit", fake_exit)
        with pytest.raises(Exited) as hard:
            interrupt.leave(said.append)
        assert hard.value.args == (130,)
        assert all(signal.getsignal(s) is signal.SIG_IGN for s in interrupt.SIGNALS)
    assert said == ["interrupted", "interrupted: resume with animat skier train --resume RUN"]
