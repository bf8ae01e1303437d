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
    assert (
        _run(
            monkeypatch,
            "consensus",
            "--agents",
            "8",
            "--dt",
            "0.55",
            "--steps",
            "200",
            "--record-every",
            "20",
            "--out",
            str(out),
        )
        == 0
    )
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
    args = [
        "flocking",
        "--algorithm",
        "3",
        "--agents",
        "20",
        "--dt",
        "0.5",
        "--steps",
        "10",
        "--record-every",
        "4",
        "--no-animation",
    ]
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
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (config["system"], config["verb"]) == ("swarm", "run")


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
    assert needle in err and err.startswith("error:") and len(err.splitlines()) == 1
    assert not out.exists()  # no half-written run directory


def test_default_recording_stride_divides_the_steps_where_it_can():
    from animat.swarm.run import MAX_FRAMES, default_record_every

    assert default_record_every(40000) == 320 and default_record_every(6000) == 40 and default_record_every(100) == 1
    assert default_record_every(6007) == -(-6007 // MAX_FRAMES)  # a prime: no divisor nearby, rounded up instead


def test_an_obstacles_file_of_the_wrong_form_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "obs.json"
    for text in ("[1, 2]", '{"spheres": [[1, 2, 3]]}', '{"walls": 3}'):
        bad.write_text(text)
        assert (
            _run(monkeypatch, "flocking", "--algorithm", "3", "--obstacles", str(bad), "--out", str(tmp_path / "o"))
            == 2
        )
        err = capsys.readouterr().err.strip()
        assert (
            "must hold a table with lists 'spheres'" in err
            and len(err.splitlines()) == 1
            and not (tmp_path / "o").exists()
        )


def _summary_and_trajectory(out):
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    with np.load(out / "trajectory.npz") as z:
        traj = {k: z[k] for k in z.files}
    assert len(rows) == len(traj["t"]) == len(traj["positions"]) and summary["warnings"] == []
    return summary, rows, traj


def test_consensus_and_second_order_runs_converge_onto_the_line_below_their_bounds(tmp_path, monkeypatch):
    """Defaults (8 agents; dt 0.49 and 0.2, below dt_max 0.526 and 0.263): every agent ends on its point of
    the line between the fixed ends, as the summary says and the trajectory shows."""
    from animat.swarm import linear

    for scheme, bound in (
        ("consensus", linear.consensus_dt_max(8, 1.0)),
        ("second-order", linear.second_order_dt_max(8, 1.0, 1.0)),
    ):
        out = tmp_path / scheme
        assert _run(monkeypatch, scheme, "--no-animation", "--out", str(out)) == 0
        summary, rows, traj = _summary_and_trajectory(out)
        assert (
            summary["scheme"] == scheme and summary["converged"] is True and summary["dt_max"] == pytest.approx(bound)
        )
        target = np.stack([np.arange(8.0), np.zeros(8)], axis=1)
        final = np.linalg.norm(traj["positions"][-1] - target, axis=1).max()
        assert summary["final_error"] == pytest.approx(final, abs=1e-12) and final < 1e-5
        initial = np.linalg.norm(traj["positions"][0] - target, axis=1).max()
        assert summary["initial_error"] == pytest.approx(initial) and initial > 1.0
        assert float(rows[-1]["error"]) == pytest.approx(final, abs=1e-12) and traj["t"][-1] == pytest.approx(
            summary["steps"] * summary["dt"]
        )
    assert "velocities" in traj  # second order: positions and velocities


def test_ellipse_segment_and_circle_runs_reach_their_shapes(tmp_path, monkeypatch):
    """Ellipse: the polygon ends on an ellipse with axes at 45 and 135 degrees (Elmachtoub & Van Loan 2010);
    segment: equally spaced between the fixed ends; circle: equal angles, turning at alpha * omega rad/s."""
    out = {scheme: tmp_path / scheme for scheme in ("ellipse", "segment", "circle")}
    for scheme, path in out.items():
        assert _run(monkeypatch, scheme, "--no-animation", "--out", str(path)) == 0
    ellipse, _, traj = _summary_and_trajectory(out["ellipse"])
    assert ellipse["final_ellipse_residual"] < 1e-6 and len(ellipse["semi_axes"]) == 2 and 0 < min(ellipse["semi_axes"])
    assert sorted(round(a % 180.0, 6) for a in ellipse["axis_angles_deg"]) == [45.0, 135.0]
    assert traj["positions"].shape == (len(traj["t"]), 20, 2)

    segment, rows, traj = _summary_and_trajectory(out["segment"])
    last = traj["positions"][-1]
    assert np.allclose(last, np.stack([np.linspace(0.0, 9.0, 10), np.zeros(10)], axis=1), atol=1e-6)
    assert segment["final_spacing_spread"] < 1e-6 and float(rows[-1]["spacing_spread"]) == pytest.approx(
        segment["final_spacing_spread"]
    )

    circle, rows, traj = _summary_and_trajectory(out["circle"])
    assert circle["final_spacing_spread"] < 1e-6 and circle["set_rotation_rate"] == 1.0
    assert circle["rotation_rate"] == pytest.approx(1.0, rel=1e-6)
    radius = np.linalg.norm(traj["positions"][-1], axis=1)
    assert np.allclose(radius, 1.0, atol=1e-6)  # on the unit circle (radius parameter 1)


@pytest.mark.parametrize("algorithm", [1, 2, 3])
def test_flocking_runs_of_each_algorithm_report_the_metrics_of_their_last_frame(tmp_path, monkeypatch, algorithm):
    from animat.swarm.metrics import flock_metrics

    out = tmp_path / f"alg{algorithm}"
    args = [
        "flocking",
        "--algorithm",
        str(algorithm),
        "--agents",
        "20",
        "--steps",
        "100",
        "--record-every",
        "25",
        "--no-animation",
    ]
    assert _run(monkeypatch, *args, "--out", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    with np.load(out / "trajectory.npz") as z:
        q, p, t = z["positions"], z["velocities"], z["t"]
    assert q.shape == p.shape == (5, 20, 2) and summary["algorithm"] == algorithm and summary["steps"] == 100
    assert summary["simulated_seconds"] == pytest.approx(1.0) and t[-1] == pytest.approx(1.0)
    prm = summary["params"]
    expected = flock_metrics(q[-1], p[-1], prm["d"], prm["r"])
    for name, value in expected.items():
        assert summary[f"final_{name}"] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    assert (summary["dt_max"] is None) == (algorithm == 1)  # algorithm 1 has no damping term, hence no bound
    if algorithm == 3:  # the default obstacles: two spheres and a floor, never entered
        assert len(summary["obstacles"]["spheres"]) == 2 and summary["final_min_clearance"] > 0
    else:
        assert "final_min_clearance" not in summary


def test_default_run_directory_is_named_after_scheme_and_time_with_a_suffix_on_collision(tmp_path, monkeypatch):
    import re

    from animat import runs

    monkeypatch.chdir(tmp_path)
    args = ("segment", "--steps", "4", "--no-animation")
    assert _run(monkeypatch, *args) == 0
    (first,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"swarm-segment-\d{8}T\d{6}Z", first.name) and (first / "summary.json").is_file()
    monkeypatch.setattr(runs, "utc_stamp", lambda: "20260101T000000Z")
    for _ in range(3):
        assert _run(monkeypatch, *args) == 0
    names = sorted(p.name for p in (tmp_path / "runs").iterdir() if p != first)
    assert names == [
        "swarm-segment-20260101T000000Z",
        "swarm-segment-20260101T000000Z-2",
        "swarm-segment-20260101T000000Z-3",
    ]
    assert all((tmp_path / "runs" / name / "summary.json").is_file() for name in names)
