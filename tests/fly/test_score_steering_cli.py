"""``animat fly score-steering SET --scripts N --seed K``: a steering set's segment and whole-script pass rates on
random command scripts (animat.fly.steer.pass_rates), printed, nothing written."""

from __future__ import annotations

import json

import pytest

from animat.fly.steer.commands import COMMANDS


def test_pretrained_paper_goal_pilot_passes_two_held_out_scripts(animat_cli, tmp_path, monkeypatch):
    """Held-out scripts 11000 and 11001 (tests/fly/test_steer_heldout.py: the goal pilot passed all 140 segments of
    11000-11019 when that test was written): every segment and both scripts pass, the rates are the counts' ratios,
    and the command writes nothing. Cost: about 10 s of CPU (the tick's compilation, then 1.2 s a script)."""
    monkeypatch.chdir(tmp_path)
    args = ("--json", "fly", "score-steering", "pretrained:paper", "--scripts", "2", "--seed", "11000")
    code, out, err = animat_cli(*args, "--controller", "goal")
    assert code == 0, err
    got = json.loads(out)
    assert got["scripts"] == 2 and got["seed"] == 11000 and got["lookahead_s"] == 1.0 and "results" not in got
    assert not any(k.startswith("switch_") for k in got)
    assert got["goal_segments_scored"] == 2 * len(COMMANDS)  # every segment of a random script is scored
    assert got["goal_segments_passed"] == got["goal_segments_scored"] and got["goal_segment_pass_rate"] == 1.0
    assert got["goal_scripts_passed"] == 2 and got["goal_script_pass_rate"] == 1.0
    assert got["goal_scripts_crashed"] == got["goal_scripts_fell"] == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option,value,words",
    [("--scripts", "0", "--scripts"), ("--controller", "fast", "both"), ("--lookahead", "-1", "--lookahead")],
)
def test_bad_options_fail_in_one_line_before_flying(animat_cli, option, value, words):
    code, out, err = animat_cli("fly", "score-steering", "pretrained:paper", option, value)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err, err


def test_a_folder_that_is_no_steering_set(animat_cli, tmp_path):
    code, _, err = animat_cli("fly", "score-steering", str(tmp_path))
    assert code == 2 and "steering.json" in err, err
