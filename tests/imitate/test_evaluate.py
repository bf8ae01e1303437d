"""``animat imitate evaluate``: its JSON line, its files, and one-line errors."""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import replace
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
    assert figures["results"] == str(tmp_path / "ev")  # the run directory under the key every --json document uses
    rows = list(csv.DictReader(open(tmp_path / "ev" / "episodes.csv")))
    assert len(rows) == 3 and json.loads((tmp_path / "ev" / "summary.json").read_text())["episodes"] == 3
    steps = np.array([int(r["steps"]) for r in rows])
    assert (steps >= 1).all() and (steps <= 15).all()  # 0.5 s at 30 Hz
    assert figures["mean_episode_seconds"] == pytest.approx(steps.mean() / 30)
    assert figures["full_episode_fraction"] == pytest.approx(np.mean([r["ended"] == "time" for r in rows]))
    assert all((r["ended"] == "time") == (int(r["steps"]) == 15) for r in rows)
    per_step = sum(float(r["r_i_per_step"]) * int(r["steps"]) for r in rows) / steps.sum()
    assert figures["mean_imitation_reward"] == pytest.approx(per_step) and 0.0 < per_step <= 1.0
    config = json.loads((tmp_path / "ev" / "config.json").read_text())
    assert config == {
        "system": "imitate",
        "verb": "evaluate",
        "source": str(run),
        "clip": None,
        "episodes": 3,
        "seconds": 0.5,
        "seed": 4,
        "hold_seconds": None,
    }
    assert (tmp_path / "ev" / "plots" / "episodes.png").stat().st_size > 1000
    page = (tmp_path / "ev" / "report.html").read_text()
    assert "plots/episodes.png" in page and "mean_imitation_reward" in page
    again = json.loads(
        _evaluate(animat_cli, run, "--episodes", 3, "--seconds", 0.5, "--seed", 4, "--out", tmp_path / "ev2")[1]
    )
    assert {k: again[k] for k in KEYS} == {k: figures[k] for k in KEYS}  # seeded: the same starts, the same figures
    assert _evaluate(animat_cli, run, "--episodes", 3, "--seconds", 0.5, "--seed", 5, "--out", tmp_path / "ev3")[0] == 0
    starts = lambda ev: {r["start_seconds"] for r in csv.DictReader(open(tmp_path / ev / "episodes.csv"))}
    assert not starts("ev") & starts("ev3")  # the next seed draws other starts (with seed + i it shared 2 of 3)


@pytest.mark.parametrize("hold", [0.0, 0.5])
def test_a_one_shot_clip_s_episodes_end_at_its_end_plus_the_hold(hold, run, tmp_path, animat_cli):
    """``--hold-seconds``: an episode on a one-shot clip that does not fall ends exactly ``hold`` s after the clip
    (the first 30 Hz step at or past it), long before ``--seconds``."""
    from animat.character.clip import write_clip
    from animat.character.demo import demo_clip

    once = replace(demo_clip(), loop="none")
    clip = write_clip(once, tmp_path / "once.txt")
    args = ("--clip", clip, "--episodes", 6, "--seconds", 5, "--hold-seconds", hold, "--out", tmp_path / "ev")
    code, out, err = _evaluate(animat_cli, run, *args)
    assert code == 0, err
    assert json.loads(out)["hold_seconds"] == hold
    rows = list(csv.DictReader(open(tmp_path / "ev" / "episodes.csv")))
    for r in rows:
        expected = int(np.ceil((once.cycle_seconds + hold - float(r["start_seconds"])) * 30 - 1e-6))
        assert int(r["steps"]) == expected if r["ended"] == "time" else int(r["steps"]) < expected
    assert any(r["ended"] == "time" for r in rows)


def test_negative_hold_is_a_one_line_error(run, tmp_path, animat_cli):
    _one_line_error(*_evaluate(animat_cli, run, "--hold-seconds", -1, "--out", tmp_path / "ev"), "--hold-seconds")
    assert not (tmp_path / "ev").exists()


def _one_line_error(code, out, err, *words):
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err


def test_missing_run(tmp_path, animat_cli):
    _one_line_error(*_evaluate(animat_cli, tmp_path / "nothing"), "no run directory")
    assert not (tmp_path / "nothing").exists()


@pytest.mark.parametrize("verb", ["evaluate", "play"])
def test_another_system_s_run_is_not_an_imitation_run(verb, tmp_path, animat_cli):
    fly_run = OLD_RUN.parent / "fly-train"
    code, out, err = animat_cli("imitate", verb, str(fly_run), "--out", str(tmp_path / "ev"))
    _one_line_error(code, out, err, "not an imitation run")
    assert "unknown" not in err and not (tmp_path / "ev").exists()  # not the 33 options it lacks


def test_pretrained_unknown_name_names_what_is_shipped(animat_cli):
    _one_line_error(*_evaluate(animat_cli, "pretrained:sprint"), "pretrained:sprint", "shipped")


@pytest.mark.deepmimic
def test_pretrained_walk_evaluates_straight_from_the_package(tmp_path, animat_cli):
    """The shipped walk policy (animat/pretrained/walk) drives the shared walk clip's humanoid at its
    documented level: seed 2026, two 3 s episodes, both full (no pose termination or fall: 90 steps at
    30 Hz) and a mean imitation reward ≥ 0.75. Its PROVENANCE.md: 0.830 over 20 × 10 s on seed 2026
    (measured here: 0.815 over the first 3 s of two), the untrained start 0.353 with 0.95 s episodes, the
    run's 10.16 M-sample checkpoint 0.754: 0.75 fails a policy that learned about half as long (or one the
    reader loads wrong) and leaves 0.06 for CPUs that round MuJoCo's float64 differently. About 2 s."""
    from animat import pretrained

    assert "walk" in pretrained.available()
    code, out, err = _evaluate(
        animat_cli, "pretrained:walk", "--episodes", 2, "--seconds", 3, "--seed", 2026, "--out", tmp_path / "ev"
    )
    assert code == 0, err
    figures = json.loads(out)
    assert figures["episodes"] == 2 and figures["seed"] == 2026
    rows = list(csv.DictReader(open(tmp_path / "ev" / "episodes.csv")))
    assert [(int(r["steps"]), r["ended"]) for r in rows] == [(90, "time")] * 2, rows
    assert figures["full_episode_fraction"] == 1.0 and figures["mean_episode_seconds"] == pytest.approx(3.0)
    assert 0.75 <= figures["mean_imitation_reward"] <= 1.0, figures
    assert all(float(r["r_i_per_step"]) >= 0.75 for r in rows), rows


WALK_HEADLINE = {2026: 0.830, 1: 0.828, 2: 0.834, 3: 0.827, 4: 0.829, 5: 0.831}
"""pretrained/walk/PROVENANCE.md's table: seed -> mean_imitation_reward of 20 × 10 s episodes, every one full."""


@pytest.mark.slow  # 6 × 20 episodes of 10 s: 7–12 s each on a shared 2-core machine, about a minute in all
@pytest.mark.deepmimic
@pytest.mark.parametrize("seed", sorted(WALK_HEADLINE))
def test_pretrained_walk_reproduces_its_provenance_table(seed, tmp_path, animat_cli):
    """``animat imitate evaluate pretrained:walk --episodes 20 --seconds 10 --seed K``, PROVENANCE.md's own
    command: every episode full (10.00 s) and the mean imitation reward the table's within 0.004. Not to its 3
    decimals: on the 2-core AMD EPYC of 2026-12-06 seeds 2026, 3, 4, 5 gave 0.8304, 0.8282, 0.8287, 0.8300, but
    seeds 1 and 2 gave 0.8302 and 0.8325 against the table's 0.828 and 0.834, at the shipping commit 847a2b8 too
    (10 s of a humanoid's contacts amplify a CPU's float64 rounding into single episodes). 0.004 is about twice
    that spread; the run's 12.70 M-sample checkpoint scored 0.784."""
    code, out, err = _evaluate(
        animat_cli, "pretrained:walk", "--episodes", 20, "--seconds", 10, "--seed", seed, "--out", tmp_path / "ev"
    )
    assert code == 0, err
    figures = json.loads(out)
    assert figures["episodes"] == 20 and figures["full_episode_fraction"] == 1.0, figures
    assert figures["mean_episode_seconds"] == pytest.approx(10.0)
    assert abs(figures["mean_imitation_reward"] - WALK_HEADLINE[seed]) <= 0.004, figures


def test_missing_clip_names_where_it_looked(run, tmp_path, animat_cli):
    missing = tmp_path / "clips" / "jog.txt"
    _one_line_error(*_evaluate(animat_cli, run, "--clip", missing, "--out", tmp_path / "ev"), str(missing), "not found")
    assert not (tmp_path / "ev").exists()


def test_missing_shared_clip_names_the_shared_folder(run, animat_cli, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    import animat.character.clip as clip

    monkeypatch.setattr(clip, "find_shared_deepmimic", lambda start=None: None)
    _one_line_error(
        *_evaluate(animat_cli, run, "--clip", "shared:humanoid3d_walk.txt"),
        "shared/data/deepmimic",
        "ANIMAT_SHARED_DATA",
    )


def test_policy_of_another_character(run, animat_cli):
    manifest = json.loads((run / "policy.json").read_text())
    manifest["meta"]["character"] = "quadruped"
    (run / "policy.json").write_text(json.dumps(manifest))
    _one_line_error(*_evaluate(animat_cli, run), "quadruped", "humanoid3d")
