"""``animat fly steer --interactive``: key decoding, the terminal in cbreak mode (through a pseudo-terminal)."""

import os
import pty
import termios

import pytest

from animat.errors import ConfigError
from animat.fly.steer.live import HELP, QUIT, TerminalKeys, decode_keys, status_line


def test_keys_decode_to_commands_in_order():
    data = b"\x1b[A\x1b[B\x1b[D\x1b[C\x1b[5~\x1b[6~ q"
    assert decode_keys(data) == (["forward", "back", "left", "right", "up", "down", "hover", QUIT], b"")
    assert decode_keys(b"\x1bOA\x1bOD") == (["forward", "left"], b"")  # application cursor mode
    assert decode_keys(b"Q") == ([QUIT], b"")


def test_unknown_keys_and_sequences_are_skipped_whole():
    # F5 (ESC [ 1 5 ~), shift-up (ESC [ 1 ; 2 A), alt-x, a letter, home (ESC O H): none is a command, none leaks a byte
    assert decode_keys(b"\x1b[15~x\x1b[1;2A\x1bx\x1bOH\x1b[A") == (["forward"], b"")


@pytest.mark.parametrize(
    "cut,tail,action",
    [(b"\x1b", b"[A", "forward"), (b"\x1b[", b"A", "forward"), (b"\x1b[5", b"~", "up"), (b"\x1bO", b"D", "left")],
)
def test_a_sequence_cut_by_the_read_is_kept_for_the_next(cut, tail, action):
    assert decode_keys(b" " + cut) == (["hover"], cut)
    assert decode_keys(cut + tail) == ([action], b"")


def test_status_line_names_time_position_speed_and_command():
    line = status_line(
        {"t": 1.5, "position": [1.0, -2.0, 0.5], "velocity": [3.0, 4.0, 0.0], "command": "left", "crashed": False}
    )
    assert "1.50 s" in line and "+1.00" in line and "-2.00" in line and "5.00 u/s" in line and line.endswith("left")
    assert "\n" not in line and "\n" not in HELP
    assert status_line(
        {"t": 0.0, "position": [0, 0, 0], "velocity": [0, 0, 0], "command": "hover", "crashed": True},
        "no network for up",
    ).endswith("hover   CRASHED   (no network for up)")


@pytest.fixture
def terminal():
    master, slave = pty.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def test_terminal_is_in_cbreak_mode_inside_and_restored_after_even_on_interrupt(terminal):
    master, slave = terminal
    before = termios.tcgetattr(slave)
    assert before[3] & termios.ICANON and before[3] & termios.ECHO
    with pytest.raises(KeyboardInterrupt):
        with TerminalKeys(slave) as keys:
            inside = termios.tcgetattr(slave)
            assert not inside[3] & termios.ICANON and not inside[3] & termios.ECHO
            assert inside[3] & termios.ISIG  # Ctrl-C still interrupts
            assert keys.read(0.0) == b""  # nothing typed: no wait
            os.write(master, b"\x1b[A q")
            assert decode_keys(keys.read(1.0))[0] == ["forward", "hover", QUIT]  # unbuffered: no Enter needed
            raise KeyboardInterrupt
    assert termios.tcgetattr(slave) == before


def test_not_a_terminal_is_a_one_line_error(tmp_path):
    with open(tmp_path / "keys.txt", "w+") as fh:
        with pytest.raises(ConfigError, match="not one"):
            TerminalKeys(fh.fileno()).__enter__()
