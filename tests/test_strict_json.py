"""Strict JSON (issue 52): what animat writes for people and programs never holds ``NaN`` or ``Infinity``
(animat.strict_json, runs.atomic_write_json, console.print_json); checkpoint manifests keep exact floats. The
suite-wide half of the check is in conftest.py (every summary.json/config.json under a test's tmp_path, every
JSON document animat_cli prints): its ``nonfinite_words`` is tested here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from animat import checkpoint, runs, strict_json
from animat.console import print_json, print_summary, use_json

OLD_SKIER = Path(__file__).parent / "fixtures" / "old_runs" / "skier-train"


def strict_load(text: str):
    """``json.loads`` that fails on NaN/Infinity, as a browser's JSON.parse does."""

    def refuse(word):
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_floats_become_null_at_any_depth_numpy_too():
    value = {
        "nan": float("nan"),
        "inf": float("inf"),
        "neg": -math.inf,
        "np": np.float32("nan"),
        "array": np.array([1.5, np.nan, np.inf]),
        "nested": [{"t": (np.float64(2.0), -np.inf)}],
        "ints": np.int64(3),
        "path": Path("runs/x"),
        "ok": 0.25,
    }
    text = strict_json.dumps(value, sort_keys=True)
    assert strict_load(text) == {
        "nan": None,
        "inf": None,
        "neg": None,
        "np": None,
        "array": [1.5, None, None],
        "nested": [{"t": [2.0, None]}],
        "ints": 3,
        "path": "runs/x",
        "ok": 0.25,
    }
    with pytest.raises(TypeError):
        strict_json.dumps({"x": object()})  # no default: refused, not written as garbage
    assert strict_load(strict_json.dumps({"x": object()}, default=lambda o: "obj")) == {"x": "obj"}


def test_run_files_are_strict_but_checkpoint_manifests_resume_exactly(tmp_path):
    runs.atomic_write_json(tmp_path / "summary.json", {"loss_m": float("nan"), "best": -math.inf, "n": 2})
    assert strict_load((tmp_path / "summary.json").read_text()) == {"best": None, "loss_m": None, "n": 2}
    checkpoint.write_checkpoint(
        tmp_path / "ck" / "state.json", {"a": np.zeros(2)}, "test", {"loss": float("nan"), "best": -math.inf}
    )
    _, meta = checkpoint.read_checkpoint(tmp_path / "ck" / "state.json", kind="test")
    assert math.isnan(meta["loss"]) and meta["best"] == -math.inf  # a resumed run continues from the same state


def test_console_json_is_strict(capsys):
    print_json({"x": float("nan"), "y": [np.float32("inf")]})
    assert strict_load(capsys.readouterr().out) == {"x": None, "y": [None]}
    use_json(True)
    try:
        print_summary({"mean_deg": float("nan")}, Path("runs/r"))
    finally:
        use_json(False)
    assert strict_load(capsys.readouterr().out) == {"mean_deg": None, "results": "runs/r"}


def test_the_suite_check_finds_every_non_finite_word(json_nonfinite):
    assert json_nonfinite('{"a": NaN, "b": [Infinity, -Infinity], "c": 1}') == ["NaN", "Infinity", "-Infinity"]
    assert json_nonfinite('{"a": null, "b": "NaN"}') == [] and json_nonfinite("not json {") == []


def test_skier_replay_without_push_offs_writes_null_not_nan(animat_cli, tmp_path):
    """The issue's case: a 1 s replay of the old skier run makes no push-off, so its mean yaw is undefined: ``null``
    in the --json document and in summary.json, both strict JSON. About 3 s."""
    out = tmp_path / "replay"
    code, stdout, err = animat_cli(
        "--json", "skier", "replay", str(OLD_SKIER), "--seconds", "1", "--anim-seconds", "0.1", "--out", str(out)
    )
    assert code == 0, err
    printed = strict_load(stdout)
    assert printed["pushoffs"] == [] and printed["mean_pushoff_yaw_deg"] is None and printed["results"] == str(out)
    assert strict_load((out / "summary.json").read_text())["mean_pushoff_yaw_deg"] is None


@pytest.mark.parametrize("where", [("swarm", "run", "--json"), ("swarm", "--json", "run")])
def test_json_after_the_system_or_verb_says_where_it_goes(animat_cli, tmp_path, where):
    out = tmp_path / "run"
    args = (*where, "consensus", "--steps", "5", "--out", str(out))
    code, stdout, err = animat_cli(*args)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert "--json goes before the system: animat --json swarm run consensus" in err
    assert not out.exists()
