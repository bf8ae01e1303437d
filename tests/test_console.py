"""The shared console: one summary table, the JSON mode for machine output (``animat --json``)."""

import json
from pathlib import Path

from animat.console import console, print_summary, use_json

SUMMARY = {
    "loss_m": 0.123456,
    "epochs": 3,
    "scene": {"name": "sheet"},
    "ids": [1, 2],
    "converged": True,
    "renderer": "matplotlib",
}


def test_the_table_shows_scalars_to_four_digits_then_where_results_are(capsys):
    print_summary(SUMMARY, Path("runs/x"), where="plots/loss.png")
    out = capsys.readouterr().out
    assert "0.1235" in out and "0.123456" not in out and "converged" in out and "matplotlib" in out
    assert "sheet" not in out and "ids" not in out  # nested values are summary.json's
    assert out.strip().splitlines()[-1] == "results: runs/x (plots/loss.png)"


def test_json_mode_prints_the_whole_summary_as_json_and_the_rest_on_stderr(capsys):
    try:
        use_json(True)
        console.print("a header")
        print_summary(SUMMARY, Path("runs/x"), keys=["epochs"])
        captured = capsys.readouterr()
    finally:
        use_json(False)
    assert json.loads(captured.out) == {**SUMMARY, "results": "runs/x"}
    assert "a header" in captured.err


def test_animat_json_gives_a_verb_s_summary_as_one_json_document(animat_cli, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = animat_cli(
        "--json", "swarm", "run", "consensus", "--steps", "20", "--no-animation", "--out", str(out)
    )
    assert code == 0, err
    printed = json.loads(stdout)
    assert printed["results"] == str(out) and printed["steps"] == 20
    assert {k: v for k, v in printed.items() if k != "results"} == json.loads((out / "summary.json").read_text())
    assert "swarm consensus" in err  # the header, out of the machine output's way
    code, stdout, _ = animat_cli(
        "swarm", "run", "consensus", "--steps", "20", "--no-animation", "--out", str(tmp_path / "again")
    )
    assert code == 0 and "results:" in stdout  # the mode ends with the command
