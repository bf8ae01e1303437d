"""``skier train --from RUN``: a new run starts from another skier run (issue 46's one start path)."""

from __future__ import annotations

import json

import numpy as np

from animat.evolve import loop
from animat.evolve.strategies.keyframe_ga import KeyframeGA
from animat.skier import ga
from animat.skier.source import read_source
from animat.skier.train import TrainConfig, strategy

TINY = ["--population", "6", "--seconds", "0.5", "--threads", "1", "--no-animation"]


def _metrics_rows(run):
    lines = (run / "metrics.csv").read_text().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, line.split(","), strict=True)) for line in lines[1:]]


def test_the_ga_starts_from_the_source_final_population(animat_cli, tmp_path):
    src, new = tmp_path / "src", tmp_path / "new"
    assert animat_cli("skier", "train", "-g", "2", "--seed", "1", *TINY, "--out", str(src))[0] == 0
    code, _, err = animat_cli("skier", "train", "-g", "1", "--seed", "9", *TINY, "--from", str(src), "--out", str(new))
    assert code == 0, err
    final, _ = loop.load(src, KeyframeGA)
    cfg = TrainConfig.build(None, population=6, seconds=0.5, seed=9)
    genes, record = read_source(cfg, src)
    np.testing.assert_array_equal(genes, final.strategy.genes)
    np.testing.assert_array_equal(strategy(cfg, genes).init(9).genes, genes)  # generation 0 is the source's
    assert json.loads((new / "config.json").read_text())["from"] == record == {"path": str(src), "generation": 2}
    # the source's elites are evaluated again first: the new run's first best is at least the source's best
    assert float(_metrics_rows(new)[0]["best"]) >= float(_metrics_rows(src)[-1]["best_ever"]) - 1e-9


def test_an_evolution_strategy_centres_on_the_source_best_skier(animat_cli, tmp_path):
    src = tmp_path / "src"
    assert animat_cli("skier", "train", "-g", "1", "--seed", "2", *TINY, "--out", str(src))[0] == 0
    cfg = TrainConfig.build(None, population=6, seconds=0.5, strategy="open_es")
    centre, _ = read_source(cfg, src)
    best = np.array(json.loads((src / "best_gene.json").read_text())["states"])
    np.testing.assert_array_equal(ga.decode(centre[None], cfg.n_states, cfg.n_joints)[0], best)


def test_bad_from_is_one_line_and_writes_nothing(animat_cli, tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    assert animat_cli("skier", "train", "-g", "1", *TINY, "--out", str(src))[0] == 0
    cases = [
        (["--population", "8", "--from", str(src)], "its population is 6 skiers"),
        (["--from", str(tmp_path)], "holds no config.json"),
        (["--from", str(src), "--resume", str(src)], "give one of them"),
    ]
    for args, words in cases:
        code, _, err = animat_cli("skier", "train", "-g", "1", *TINY[2:], *args, "--out", str(out))
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()
