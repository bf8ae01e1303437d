"""``animat info RUN_DIR`` (animat.info, each system's run_kinds.py): what a run directory is, from its files, for a
finished and an interrupted run of every system; one-line errors for what is no run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

OLD = Path(__file__).parent / "fixtures" / "old_runs"

# system -> (old run, unit, total, preset, headline key, done after its first metrics row)
TRAININGS = {
    "fly": ("fly-train", "generations", 3, "paper", "best_fitness", 1),
    "skier": ("skier-train", "generations", 3, "one-axis/anisotropic", "best_net_forward_m", 1),
    "surrogate": ("surrogate-train", "epochs", 4, "sheet", "best_test_loss_m", 1),
    "imitate": ("imitate-train", "timesteps", 512, "demo", "final_eval_return_mean", 256),
}


def info(animat_cli, run: Path) -> dict:
    code, out, err = animat_cli("--json", "info", str(run))
    assert code == 0, err
    return json.loads(out)


def interrupt(run: Path, rows: int) -> None:
    """Make ``run`` look stopped after ``rows`` metrics rows: no summary.json (the last file every verb writes)."""
    (run / "summary.json").unlink()
    path = run / "metrics.csv"
    if path.is_file():
        with open(path, newline="") as fh:
            kept = list(csv.reader(fh))[: 1 + rows]
        with open(path, "w", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerows(kept)


@pytest.mark.parametrize("system", TRAININGS)
def test_a_training_run_finished_then_interrupted(system, tmp_path, animat_cli):
    """The old run of each system (tests/fixtures/old_runs): finished, all its units done, its headline figure as
    summary.json has it; then without summary.json and with one metrics row: interrupted at that row's progress.
    Under a second each."""
    name, unit, total, preset, headline, first = TRAININGS[system]
    run = Path(shutil.copytree(OLD / name, tmp_path / "run"))
    summary = json.loads((run / "summary.json").read_text())
    got = info(animat_cli, run)
    assert {k: got[k] for k in ("system", "verb", "preset", "state", "unit", "done", "total")} == {
        "system": system,
        "verb": "train",
        "preset": preset,
        "state": "finished",
        "unit": unit,
        "done": total,
        "total": total,
    }
    assert got[headline] == summary[headline] and got["results"] == str(run)
    interrupt(run, 1)
    got = info(animat_cli, run)
    assert (got["state"], got["done"], got["total"]) == ("interrupted", first, total) and headline not in got


def test_a_swarm_run_finished_then_interrupted(tmp_path, animat_cli):
    """A 20-step consensus run (about a second): its scheme is its preset; stopped before its summary.json, its
    steps are unknown (it records none until it ends)."""
    run = tmp_path / "run"
    code, _, err = animat_cli("swarm", "run", "consensus", "--steps", "20", "--no-animation", "--out", str(run))
    assert code == 0, err
    got = info(animat_cli, run)
    assert (got["system"], got["verb"], got["preset"], got["state"]) == ("swarm", "run", "consensus", "finished")
    assert (got["unit"], got["done"], got["total"], got["agents"]) == ("steps", 20, 20, 8)
    interrupt(run, 0)
    got = info(animat_cli, run)
    assert (got["state"], got["done"], got["total"]) == ("interrupted", None, 20) and "final_error" not in got


def test_a_dataset_and_the_table(tmp_path, animat_cli):
    """An old surrogate dataset (no config.json): ``generate``, its episodes done; the table without --json."""
    got = info(animat_cli, OLD / "surrogate-data")
    assert (got["system"], got["verb"], got["state"], got["done"], got["episodes"]) == (
        "surrogate",
        "generate",
        "finished",
        4,
        4,
    )
    run = Path(shutil.copytree(OLD / "fly-train", tmp_path / "run"))
    interrupt(run, 2)
    code, out, err = animat_cli("info", str(run))
    assert code == 0, err
    rows = dict(line.split(None, 1) for line in out.strip().splitlines()[:-1])
    assert rows["state"].strip() == "interrupted" and rows["done"].strip() == "2" and rows["total"].strip() == "3"


def test_what_is_no_run_is_a_one_line_error(tmp_path, animat_cli):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text('{"colour": "blue"}')
    for folder, words in (
        ("missing", "not a directory"),
        ("empty", "not a run directory"),
        ("bad", "corrupt"),
        ("other", "not a run directory"),
    ):
        code, out, err = animat_cli("info", str(tmp_path / folder))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err, (folder, err)
