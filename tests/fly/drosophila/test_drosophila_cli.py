"""``animat fly train --preset drosophila``, ``fly replay`` and ``report`` end to end in the default suite, on a
budget: 4 flies (the least the GA takes) × 1–3 generations × 5 ms of flight (one wingbeat). Nearly all the cost is
XLA compiling the population's and the replay's rollouts once (about 25 s of CPU); every later run in this module
reuses them, so the resume, ``--from`` and staged runs below cost seconds. The longer versions (more generations,
a resumed ``--from`` stage) are the ``slow`` tests of test_drosophila_preset.py."""

from __future__ import annotations

import csv
import html
import json
import math
from pathlib import Path

import numpy as np
import pytest

from animat import runs

TINY = ["--population", "4", "--seconds", "0.005", "--replay-seconds", "0.005", "--seed", "5"]
FLY = {"thorax_resonance_hz": 218.0, "induced_power_factor": 1.2}  # the shipped hover's fly, not the defaults
TOML = 'preset = "drosophila"\ndrosophila = {thorax_resonance_hz = 218.0, induced_power_factor = 1.2}\n'
RUN_FILES = (
    "config.json",
    "summary.json",
    "metrics.csv",
    "best_genome.npz",
    "best_genome.json",
    "checkpoints/latest.json",
    "plots/fitness.png",
    "plots/height.png",
    "plots/topview.png",
    "plots/wings.png",
    "plots/wingbeat_spectrum.png",
    "plots/power.png",
    "media/wingbeat.gif",
    "media/wingbeat.mp4",
    "trajectory.npz",
    "report.html",
)
REPLAY_FILES = (
    "config.json",
    "summary.json",
    "trajectory.npz",
    "plots/height.png",
    "plots/topview.png",
    "plots/wings.png",
    "plots/wingbeat_spectrum.png",
    "plots/power.png",
    "media/wingbeat.gif",
    "media/wingbeat.mp4",
    "report.html",
)
FLIGHT = (
    "wingbeat_hz",
    "mean_stroke_amplitude_deg",
    "mechanical_power_w_per_kg",
    "inertial_power_w_per_kg",
    "max_height_change_body_lengths",
    "max_horizontal_drift_body_lengths",
    "mean_set_frequency_hz",
)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Three tiny trainings sharing one compile, from a config file that sets the fly (:data:`FLY`) and flags
    for the rest: ``whole`` (3 generations), ``part`` (1, then resumed to 3: the third generation is the first
    bred after the resume, from the restored breeding key)."""
    import sys

    from animat import cli

    def run(*args: str) -> int:
        old = sys.argv
        sys.argv = ["animat", *args]
        try:
            cli.main()
        except SystemExit as exc:
            return int(exc.code or 0)
        finally:
            sys.argv = old
        return 0

    root = tmp_path_factory.mktemp("drosophila")
    (root / "tiny.toml").write_text(TOML)
    tiny = ["--config", str(root / "tiny.toml"), *TINY]
    part_first = root / "part_gen1"
    assert run("fly", "train", *tiny, "--generations", "1", "--out", str(root / "part")) == 0
    part_first.mkdir()
    for name in ("metrics.csv", "summary.json", "config.json"):
        (part_first / name).write_bytes((root / "part" / name).read_bytes())
    assert run("fly", "train", *tiny, "--generations", "3", "--out", str(root / "whole")) == 0
    assert run("fly", "train", "--resume", str(root / "part"), "--generations", "3") == 0
    return root


def _rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_one_generation_run_holds_its_files_and_finite_figures(tiny_runs):
    """The 1-generation run (before its resume): every file a run directory holds, ``config.json`` with the
    options given (and the preset's defaults: 12-20-20-11 tanh, the hover fitness), one metrics row whose
    best is the summary's and no worse than the mean and median, finite figures, and its replay's summary
    computed from the trajectory it wrote (5 ms at 5 kHz: 25 samples)."""
    from animat.evolve.genome_file import load_genome

    run, first = tiny_runs / "part", tiny_runs / "part_gen1"
    for name in RUN_FILES:
        assert (run / name).is_file() and (run / name).stat().st_size > 0, name
    config = json.loads((first / "config.json").read_text())
    assert (config["preset"], config["population"], config["generations"], config["seed"]) == ("drosophila", 4, 1, 5)
    assert config["seconds"] == 0.005 and config["replay_seconds"] == 0.005 and config["fitness"] == "hover"
    assert config["layers"] == [12, 20, 20, 11] and config["strategy"] == "paper_ga" and config["drosophila"] == FLY
    (row,) = _rows(first)
    best, mean, median = (float(row[k]) for k in ("best", "mean", "median"))
    assert row["generation"] == "0" and int(row["crashes"]) == 0
    assert all(math.isfinite(x) for x in (best, mean, median)) and best >= median and best >= mean and best <= 0.0
    summary = json.loads((first / "summary.json").read_text())
    assert summary["generations"] == 1 and summary["population"] == 4 and summary["best_fitness"] == best
    flight = {k: summary[f"replay_{k}"] for k in FLIGHT}
    assert all(math.isfinite(v) for v in flight.values()) and summary["replay_crashed"] is False, flight
    assert summary["replay_seconds"] == pytest.approx(0.005) and summary["replay_body_length"] == 2.5e-3
    assert 50.0 <= flight["mean_set_frequency_hz"] <= 400.0  # the pattern generator's range
    assert summary["replay_induced_power_w_per_kg"] > 0.0  # induced_power_factor 1.2 reached the replay (0 by default)
    genome = load_genome(run / "best_genome.npz").genome
    assert list(genome.layers) == [12, 20, 20, 11]
    traj = runs.read_npz(run / "trajectory.npz")
    assert traj["position"].shape == (25, 3) and traj["wing_angles"].shape == (25, 6)
    assert np.isfinite(traj["position"]).all()


def test_three_generations_in_one_go_equal_one_and_two_resumed(tiny_runs):
    """The resumed run's metrics (but the wall time) and best genome are the uninterrupted run's, bit for bit
    (with 2 generations the resumed run would only evaluate the genes its checkpoint holds: a lost breeding
    key would pass)."""
    strip = lambda run: [{k: v for k, v in r.items() if k != "seconds"} for r in _rows(run)]
    assert strip(tiny_runs / "whole") == strip(tiny_runs / "part") and len(_rows(tiny_runs / "whole")) == 3
    genes = lambda run: np.load(run / "best_genome.npz")["genes"]
    np.testing.assert_array_equal(genes(tiny_runs / "whole"), genes(tiny_runs / "part"))
    assert json.loads((tiny_runs / "part" / "summary.json").read_text())["generations"] == 3


def test_replay_repeats_the_runs_own_replay_and_report_shows_its_figures(tiny_runs, tmp_path, animat_cli):
    """``fly replay RUN --seconds 0.005`` flies the run's best genome again with the run's fly (config.json's
    ``drosophila``): the same flight, so the same summary as the one the training wrote (``replay_*``); the trajectory's
    largest height change and drift are the summary's; ``animat report`` rewrites each report.html with the run's
    figures in its table."""
    run, out = tiny_runs / "whole", tmp_path / "replay"
    code, stdout, err = animat_cli("fly", "replay", str(run), "--seconds", "0.005", "--out", str(out))
    assert code == 0, err
    for name in REPLAY_FILES:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    again = json.loads((out / "summary.json").read_text())
    trained = json.loads((run / "summary.json").read_text())
    assert again["preset"] == "drosophila" and again["crashed"] is False
    for key in FLIGHT:
        assert again[key] == trained[f"replay_{key}"], key
    assert "slowed down 200" in (out / "report.html").read_text()  # the drosophila scene
    traj = runs.read_npz(out / "trajectory.npz")
    pos, L = traj["position"].astype(np.float64), again["body_length"]
    height, drift = np.abs(pos[:, 2] - pos[0, 2]).max() / L, np.hypot(*(pos[:, :2] - pos[0, :2]).T).max() / L
    np.testing.assert_allclose(height, again["max_height_change_body_lengths"], rtol=1e-5)
    np.testing.assert_allclose(drift, again["max_horizontal_drift_body_lengths"], rtol=1e-5)
    np.testing.assert_allclose(np.diff(traj["t"]), 2e-4, rtol=1e-3)  # 5 kHz
    for where, summary in ((out, again), (run, trained)):
        (where / "report.html").unlink()
        code, _, err = animat_cli("report", str(where))
        assert code == 0, err
        page = (where / "report.html").read_text()
        keys = ("best_fitness", "replay_wingbeat_hz") if where == run else ("wingbeat_hz", "mechanical_power_w_per_kg")
        for key in keys:
            assert f"<th>{key}</th><td>{html.escape(f'{summary[key]:.6g}')}</td>" in page, key
        assert "plots/wings.png" in page and "media/wingbeat.gif" in page


def test_from_centres_an_evolution_strategy_on_the_runs_best_genome(tiny_runs, tmp_path, animat_cli):
    """``--strategy open_es --from RUN``: the stage records ``from`` and its first generation's antithetic
    pairs average to RUN's best genome; the paper preset refuses the drosophila run in one line, writing nothing."""
    from animat.evolve import loop
    from animat.evolve.genome_file import load_genome
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.evolve import evolution_strategy

    old, new = tiny_runs / "whole", tmp_path / "stage"
    code, _, err = animat_cli(
        "fly",
        "train",
        "--config",
        str(tiny_runs / "tiny.toml"),
        *TINY,
        "--generations",
        "1",
        "--strategy",
        "open_es",
        "--from",
        str(old),
        "--out",
        str(new),
    )
    assert code == 0, err
    config = json.loads((new / "config.json").read_text())
    assert config["from"] == {"path": str(old), "generation": 3} and config["strategy"] == "open_es"
    best = load_genome(old / "best_genome.npz").genome.genes
    options = {k: v for k, v in config.items() if k != "from"}
    strategy = evolution_strategy(DrosophilaTrainConfig.build(None, **options), best)
    first = np.asarray(loop.load(new / "checkpoints" / "gen-000001.json", strategy)[0].last_genes)
    np.testing.assert_allclose(first.mean(axis=0), best, atol=1e-5)
    assert not np.allclose(first, best)  # a distribution about it, not copies
    refused = tmp_path / "refused"
    code, out, err = animat_cli(
        "fly", "train", "--population", "4", "--strategy", "open_es", "--from", str(old), "--out", str(refused)
    )
    assert code == 2 and "drosophila preset" in err and len(err.strip().splitlines()) == 1 and not refused.exists(), err


def test_from_a_shipped_run_by_its_pretrained_name(tiny_runs, tmp_path, animat_cli):
    """``--from pretrained:drosophila-hover`` (the name, not only a folder, issue 46): the evolution strategy's first
    centre is the shipped genome, and config.json records its folder beside the run's system, verb and preset; a
    shipped steering set (no training run) and an unknown name are one-line refusals that write nothing."""
    from animat.evolve import loop
    from animat.evolve.genome_file import load_genome
    from animat.fly.drosophila.options import DrosophilaTrainConfig
    from animat.fly.evolve import evolution_strategy
    from animat.pretrained import resolve

    shipped, new = resolve("pretrained:drosophila-hover"), tmp_path / "stage"
    tiny = ["--config", str(tiny_runs / "tiny.toml"), *TINY, "--generations", "1", "--strategy", "open_es"]
    code, _, err = animat_cli("fly", "train", *tiny, "--from", "pretrained:drosophila-hover", "--out", str(new))
    assert code == 0, err
    config = json.loads((new / "config.json").read_text())
    assert config["from"] == {"path": str(shipped), "generation": 0}
    assert (config["system"], config["verb"], config["preset"]) == ("fly", "train", "drosophila")
    best = load_genome(shipped / "best_genome.npz").genome.genes
    strategy = evolution_strategy(DrosophilaTrainConfig.build(None, **config), best)
    first = np.asarray(loop.load(new / "checkpoints" / "gen-000001.json", strategy)[0].last_genes)
    np.testing.assert_allclose(first.mean(axis=0), best, atol=1e-5)
    for source, words in (("pretrained:paper", "holds no config.json"), ("pretrained:nope", "no pretrained artefact")):
        refused = tmp_path / source.replace(":", "-")
        code, _, err = animat_cli("fly", "train", *tiny, "--from", source, "--out", str(refused))
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and not refused.exists(), err
