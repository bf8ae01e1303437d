"""``animat swarm run``: run directories, reproducibility, one-line errors with exit 2."""

from __future__ import annotations

import csv
import json
import sys

import numpy as np
import pytest

from animat.cli import main


def _run(monkeypatch, *args):
    monkeypatch.setattr(sys, "argv", ["animat", "swarm", "run", *args])
    try:
        main()
    except SystemExit as exc:
        return exc.code or 0
    return 0


def test_consensus_run_dir_and_bound(tmp_path, monkeypatch, capsys):
    out = tmp_path / "c"
    assert _run(monkeypatch, "consensus", "--agents", "8", "--dt", "0.55", "--steps", "200", "--record-every", "20", "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "dt_max = 0.526048" in text and "exceeds" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dt_max"] == pytest.approx(0.5260475418008436) and summary["converged"] is False
    traj = np.load(out / "trajectory.npz")
    assert traj["positions"].shape[1:] == (8, 2) and traj["t"].shape[0] == traj["positions"].shape[0]
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert len(rows) == traj["t"].shape[0]
    assert (out / "plots" / "metrics.png").stat().st_size > 0 and (out / "media" / "swarm.gif").stat().st_size > 0


def test_flocking_warns_above_its_damping_bound_and_reports_the_steps_it_ran(tmp_path, monkeypatch, capsys):
    out = tmp_path / "f"
    args = ["flocking", "--algorithm", "3", "--agents", "20", "--dt", "0.5", "--steps", "10", "--record-every", "4", "--no-animation"]
    assert _run(monkeypatch, *args, "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "dt_max = 0.316228" in text and "exceeds" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dt_max"] == pytest.approx(0.31622776601683794)
    assert summary["steps"] == 12 and summary["simulated_seconds"] == pytest.approx(12 * 0.5)
    assert any("rounded up" in w for w in summary["warnings"])


def test_flocking_run_is_reproducible(tmp_path, monkeypatch):
    args = ["flocking", "--agents", "30", "--steps", "300", "--seed", "4", "--param", "c1=0.03", "--no-animation"]
    assert _run(monkeypatch, *args, "--out", str(tmp_path / "a")) == 0
    assert _run(monkeypatch, *args, "--out", str(tmp_path / "b")) == 0
    a, b = np.load(tmp_path / "a" / "trajectory.npz"), np.load(tmp_path / "b" / "trajectory.npz")
    assert set(a.files) >= {"positions", "velocities", "t"}
    assert np.array_equal(a["positions"], b["positions"]) and np.array_equal(a["velocities"], b["velocities"])
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["params"]["c1"] == 0.03 and "final_connectivity" in summary


@pytest.mark.parametrize(
    "args, needle",
    [
        (["flocking", "--param", "a=6"], "a = 6.0 > b"),
        (["consensus", "--dt", "0"], "--dt must be > 0"),
        (["consensus", "--dt", "-0.1"], "--dt must be > 0"),
        (["consensus", "--agents", "2"], "at least 3 agents"),
        (["swirl"], "unknown scheme 'swirl'"),
        (["flocking", "--algorithm", "3", "--sphere", "0,0,15"], "overlap the start"),
        (["flocking", "--param", "c1"], "NAME=VALUE"),
        (["flocking", "--algorithm", "3", "--sphere", "10,10"], "a sphere in 2D is 3 numbers"),
        (["flocking", "--gamma-vel", "1,2,3"], "--gamma-vel need 2 numbers"),
        (["consensus", "--record-every", "0"], "--record-every must be >= 1"),
        (["flocking", "--record-every", "-1"], "--record-every must be >= 1"),
        (["consensus", "--seed", "-1"], "--seed must be >= 0"),
        (["second-order", "--scale", "0"], "scale s must be > 0"),
        (["second-order", "--param", "alpha=-1"], "damping alpha must be > 0"),
        (["circle", "--param", "omega=nan"], "omega must be a finite number"),
        (["segment", "--param", "weight=1.5"], "weight must be in (0, 1]"),
        (["consensus", "--param", "alpha=2"], "do not apply to consensus"),
        (["flocking", "--sphere", "100,0,5"], "obstacles act in algorithm 3 only"),
        (["flocking", "--algorithm", "3", "--sphere", "nan,2,1"], "centre must be finite"),
    ],
)
def test_bad_input_is_a_one_line_error(tmp_path, monkeypatch, capsys, args, needle):
    out = tmp_path / "bad"
    assert _run(monkeypatch, *args, "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err.replace("\n", " ") and err.startswith("error:")
    assert not out.exists()  # no half-written run directory


def test_default_recording_stride_divides_the_steps_where_it_can():
    from animat.swarm.run import MAX_FRAMES, default_record_every

    assert default_record_every(40000) == 320 and default_record_every(6000) == 40 and default_record_every(100) == 1
    assert default_record_every(6007) == -(-6007 // MAX_FRAMES)  # a prime: no divisor nearby, rounded up instead


def test_an_obstacles_file_of_the_wrong_form_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "obs.json"
    for text in ("[1, 2]", '{"spheres": [[1, 2, 3]]}', '{"walls": 3}'):
        bad.write_text(text)
        assert _run(monkeypatch, "flocking", "--algorithm", "3", "--obstacles", str(bad), "--out", str(tmp_path / "o")) == 2
        err = capsys.readouterr().err.strip()
        assert "must hold a table with lists 'spheres'" in err.replace("\n", " ") and not (tmp_path / "o").exists()
