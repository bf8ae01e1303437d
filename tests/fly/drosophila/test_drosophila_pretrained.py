"""The shipped hover genome ``pretrained:drosophila-hover``: what its folder holds, a one-second replay
(default suite) and the issue's 30 s hover acceptance (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from animat import pretrained, runs

KEYS = ("body_length", "wingbeat_hz", "mechanical_power_w_per_kg", "max_height_change_body_lengths",
        "max_horizontal_drift_body_lengths", "crashed", "check_height_change_below_1_body_length",
        "check_drift_below_5_body_lengths", "check_not_crashed", "check_wingbeat_180_250_hz")


def _replay(animat_cli, out, seconds):
    code, _, err = animat_cli("fly", "replay", "pretrained:drosophila-hover", "--seconds", str(seconds), "--out", str(out))
    assert code == 0, err
    return json.loads((out / "summary.json").read_text()), runs.read_npz(out / "trajectory.npz")


def test_the_folder_holds_the_genome_its_config_and_provenance():
    folder = pretrained.resolve("pretrained:drosophila-hover")
    assert sorted(p.name for p in folder.iterdir()) == ["PROVENANCE.md", "best_genome.json", "best_genome.npz", "config.json"]
    assert json.loads((folder / "config.json").read_text())["preset"] == "drosophila"
    assert sum(p.stat().st_size for p in folder.iterdir()) < 64_000


def test_one_second_replay_has_the_summary_keys_and_a_2_khz_trajectory(tmp_path, animat_cli):
    summary, traj = _replay(animat_cli, tmp_path / "replay", 1)
    assert all(k in summary for k in KEYS), sorted(set(KEYS) - set(summary))
    t = traj["t"]
    assert traj["position"].shape == (len(t), 3) and traj["wing_angles"].shape == (len(t), 6)
    assert 1.0 / np.median(np.diff(t)) >= 2000.0 and abs(t[-1] - 1.0) < 1e-3
    assert summary["body_length"] == pytest.approx(2.5e-3) and not summary["crashed"]
    assert summary["max_height_change_body_lengths"] < 1.0  # it hovers from the first second on


@pytest.mark.slow
def test_thirty_second_replay_meets_the_hover_acceptance(tmp_path, animat_cli):
    summary, _ = _replay(animat_cli, tmp_path / "replay", 30)
    checks = {k: v for k, v in summary.items() if k.startswith("check_")}
    assert len(checks) == 4 and all(checks.values()), checks
    assert 180.0 <= summary["wingbeat_hz"] <= 250.0
