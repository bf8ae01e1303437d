"""``animat imitate evaluate``: its JSON line, its files, and one-line errors."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

OLD_RUN = Path(__file__).parents[1] / "fixtures" / "old_runs" / "imitate-train"  # a tiny policy on the demo clip
KEYS = {"mean_imitation_reward", "full_episode_fraction", "mean_episode_seconds", "episodes"}


@pytest.fixture
def run(tmp_path) -> Path:
    return Path(shutil.copytree(OLD_RUN, tmp_path / "run"))


def _evaluate(animat_cli, *args):
    code, out, err = animat_cli("imitate", "evaluate", *map(str, args))
    return code, out, err


def test_one_json_line_and_per_episode_rows(run, tmp_path, animat_cli):
    code, out, _ = _evaluate(animat_cli, run, "--episodes", 3, "--seconds", 0.5, "--seed", 4, "--out", tmp_path / "ev")
    assert code == 0 and len(out.strip().splitlines()) == 1
    figures = json.loads(out)
    assert KEYS <= set(figures) and figures["episodes"] == 3
    rows = list(csv.DictReader(open(tmp_path / "ev" / "episodes.csv")))
    assert len(rows) == 3 and json.loads((tmp_path / "ev" / "summary.json").read_text())["episodes"] == 3
    steps = np.array([int(r["steps"]) for r in rows])
    assert (steps >= 1).all() and (steps <= 15).all()  # 0.5 s at 30 Hz
    assert figures["mean_episode_seconds"] == pytest.approx(steps.mean() / 30)
    assert figures["full_episode_fraction"] == pytest.approx(np.mean([r["ended"] == "time" for r in rows]))
    assert all((r["ended"] == "time") == (int(r["steps"]) == 15) for r in rows)
    per_step = sum(float(r["r_i_per_step"]) * int(r["steps"]) for r in rows) / steps.sum()
    assert figures["mean_imitation_reward"] == pytest.approx(per_step) and 0.0 < per_step <= 1.0
    again = json.loads(_evaluate(animat_cli, run, "--episodes", 3, "--seconds", 0.5, "--seed", 4, "--out", tmp_path / "ev2")[1])
    assert {k: again[k] for k in KEYS} == {k: figures[k] for k in KEYS}  # seeded: the same starts, the same figures
    assert _evaluate(animat_cli, run, "--episodes", 3, "--seconds", 0.5, "--seed", 5, "--out", tmp_path / "ev3")[0] == 0
    starts = lambda ev: {r["start_seconds"] for r in csv.DictReader(open(tmp_path / ev / "episodes.csv"))}
    assert not starts("ev") & starts("ev3")  # the next seed draws other starts (with seed + i it shared 2 of 3)


def _one_line_error(code, out, err, *words):
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err


def test_missing_run(tmp_path, animat_cli):
    _one_line_error(*_evaluate(animat_cli, tmp_path / "nothing"), "no run directory")
    assert not (tmp_path / "nothing").exists()


def test_pretrained_unknown_name_names_what_is_shipped(animat_cli):
    _one_line_error(*_evaluate(animat_cli, "pretrained:jog"), "pretrained:jog", "shipped")


@pytest.mark.deepmimic
def test_pretrained_walk_evaluates_straight_from_the_package(tmp_path, animat_cli):
    """The shipped walk policy (animat/pretrained/walk) drives the shared walk clip's humanoid."""
    from animat import pretrained

    assert "walk" in pretrained.available()
    code, out, err = _evaluate(animat_cli, "pretrained:walk", "--episodes", 2, "--seconds", 1, "--seed", 2026, "--out", tmp_path / "ev")
    assert code == 0, err
    figures = json.loads(out)
    assert figures["episodes"] == 2 and 0.0 < figures["mean_imitation_reward"] <= 1.0 and figures["mean_episode_seconds"] > 0


def test_missing_clip_names_where_it_looked(run, tmp_path, animat_cli):
    missing = tmp_path / "clips" / "jog.txt"
    _one_line_error(*_evaluate(animat_cli, run, "--clip", missing, "--out", tmp_path / "ev"), str(missing), "not found")
    assert not (tmp_path / "ev").exists()


def test_missing_shared_clip_names_the_shared_folder(run, animat_cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    import animat.character.clip as clip

    monkeypatch.setattr(clip, "find_shared_deepmimic", lambda start=None: None)
    _one_line_error(*_evaluate(animat_cli, run, "--clip", "shared:humanoid3d_walk.txt"), "shared/data/deepmimic", "ANIMAT_SHARED_DATA")


def test_policy_of_another_character(run, animat_cli):
    manifest = json.loads((run / "policy.json").read_text())
    manifest["meta"]["character"] = "quadruped"
    (run / "policy.json").write_text(json.dumps(manifest))
    _one_line_error(*_evaluate(animat_cli, run), "quadruped", "humanoid3d")
