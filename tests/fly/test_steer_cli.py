"""``animat fly steer``: bad input is a one-line error with nothing written (issue 21, acceptance 5)."""

from __future__ import annotations

import json

import pytest

STEER = ["fly", "steer"]


@pytest.fixture
def broken_set(tmp_path):
    """A steering directory whose steering.json names networks that are not there."""
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "steering.json").write_text(
        json.dumps({"preset": "paper", "speed": 2.0, "switch": {"hover": "hover", "up": "up"}, "goal": "goal"})
    )
    return folder


@pytest.mark.parametrize(
    "args,message",
    [
        (["--commands", "up:1,jump:2"], "unknown command 'jump'"),
        (["--commands", "up:1,forward:0"], "> 0"),
        (["--commands", "up:-1"], "> 0"),
        (["--commands", "up:1;forward:2"], "is not a number"),
        (["--commands", "up,forward:2"], "malformed command"),
        (["--commands", "up:1", "--controller", "pid"], "--controller"),
        (["--commands", "up:1", "--speed", "0"], "--speed"),
        ([], "--commands"),
        (["--commands", "up:1", "--interactive"], "either"),
    ],
)
def test_bad_requests_are_one_line_errors_and_write_nothing(
    args, message, broken_set, tmp_path, monkeypatch, animat_cli
):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code, stdout, err = animat_cli(*STEER, str(broken_set), *args, "--out", str(out))
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and not (tmp_path / "runs").exists()


def test_a_steering_directory_missing_a_network_is_a_one_line_error(broken_set, tmp_path, monkeypatch, animat_cli):
    monkeypatch.chdir(tmp_path)
    for source in (broken_set, tmp_path / "nowhere", "pretrained:nothing"):
        code, _, err = animat_cli(*STEER, str(source), "--commands", "up:1", "--out", str(tmp_path / "out"))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


def test_interactive_without_a_terminal_is_a_one_line_error(broken_set, tmp_path, monkeypatch, animat_cli):
    monkeypatch.chdir(tmp_path)
    code, _, err = animat_cli(*STEER, str(broken_set), "--interactive", "--out", str(tmp_path / "out"))
    assert code == 2 and "terminal" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
