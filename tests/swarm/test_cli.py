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
    ],
)
def test_bad_input_is_a_one_line_error(tmp_path, monkeypatch, capsys, args, needle):
    out = tmp_path / "bad"
    assert _run(monkeypatch, *args, "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err.replace("\n", " ") and err.startswith("error:")
    assert not out.exists()  # no half-written run directory
