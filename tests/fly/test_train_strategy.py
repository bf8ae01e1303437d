"""What an evolution strategy's fly run keeps (``es_result``): its best sample, or its distribution's centre."""

from __future__ import annotations

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve import loop
from animat.fly.evolve import evolution_strategy, run_strategy
from animat.fly.options import TrainConfig

TARGET = 0.3


def quadratic(genes: np.ndarray) -> np.ndarray:
    """``(P,)``: minus the squared distance of each genome ``(P, D)`` from ``TARGET`` everywhere (maximum 0)."""
    return -np.sum((np.asarray(genes, dtype=np.float64) - TARGET) ** 2, axis=1)


def config(**kw) -> TrainConfig:
    return TrainConfig.build(
        None,
        **{"strategy": "open_es", "population": 8, "generations": 20, "init_std": 0.05, "layers": [15, 3, 3], **kw},
    )


def test_the_centre_is_the_final_distribution_mean_and_its_fitness_is_evaluated_once_more(tmp_path):
    cfg = config(es_result="centre")
    calls = []
    evaluator = lambda genes: calls.append(len(genes)) or quadratic(genes)
    genome, fitness, history, generations = run_strategy(
        cfg, tmp_path, False, evaluator, ["tanh", "tanh"], ["a", "b", "c"], None
    )
    state, _ = loop.load(tmp_path, evolution_strategy(cfg))
    centre = evolution_strategy(cfg).distribution_mean(state.strategy)
    assert generations == 20 and len(history) == 20 and calls == [8] * 20 + [1]
    np.testing.assert_array_equal(genome.genes, centre)
    assert fitness == quadratic(centre[None])[0]
    start = quadratic(np.zeros((1, centre.size)))[0]
    assert start < fitness < 0  # the centre moved towards the optimum: -D·0.09 at 0
    # with "best" the run keeps its best sample, whose fitness is the history's best
    best, best_fitness, history, _ = run_strategy(
        config(), tmp_path / "best", False, quadratic, ["tanh", "tanh"], ["a", "b", "c"], None
    )
    assert best_fitness == max(r["best"] for r in history) == quadratic(best.genes[None])[0]


def test_a_resumed_run_keeps_the_same_centre(tmp_path):
    cfg = config(es_result="centre")
    args = (quadratic, ["tanh", "tanh"], ["a", "b", "c"], None)
    full = run_strategy(cfg, tmp_path / "full", False, *args)[0]
    run_strategy(config(es_result="centre", generations=7), tmp_path / "part", False, *args)
    resumed = run_strategy(cfg, tmp_path / "part", True, *args)[0]
    np.testing.assert_array_equal(full.genes, resumed.genes)


def test_an_unknown_es_result_is_refused():
    with pytest.raises(ConfigError, match="es_result"):
        config(es_result="mean")
