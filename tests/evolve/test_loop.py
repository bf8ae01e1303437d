"""The strategy interface (init/ask/tell: pure, deterministic) and the one generation loop (resume bit-exact)
for both strategies; checkpoints written before the loop existed still resume."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from animat.errors import CheckpointError
from animat.evolve import loop, network
from animat.evolve.population import Population
from animat.evolve.ranking import ranking
from animat.evolve.strategies import keyframe_ga
from animat.evolve.strategies.paper_ga import PaperGA

FIXTURES = Path(__file__).parent / "fixtures"
LAYERS = (2, 3, 1)
TARGET = np.linspace(-1.0, 1.0, network.param_count(LAYERS))

# a toy keyframe layout: 4 columns in 2 groups, the mirror swaps columns 0<->1 and negates column 3
LAYOUT = keyframe_ga.KeyframeLayout(
    np.array([[-30, 30], [-30, 30], [0, 90], [-45, 45]], dtype=np.int64),
    ((0, 1), (2, 3)),
    np.array([1, 0, 2, 3]),
    np.array([3]),
)


def _first(rng):
    r = LAYOUT.ranges
    return keyframe_ga.mirror(rng.integers(r[:, 0], r[:, 1] + 1, size=(9, 6, 4)), LAYOUT.swap, LAYOUT.flip)


KEYFRAME = keyframe_ga.KeyframeGA(
    LAYOUT, _first, keyframe_ga.KeyframeParams(elites=3, parent_probs=(0.5, 0.3, 0.2), mutation_rate=0.1)
)
PAPER = PaperGA(
    12, LAYERS, 1.0, pool_frac=0.25, elite_frac=0.1, mutation="additive", mutation_rate=0.2, mutation_std=0.3
)


def paper_fitness(genes):
    return -np.sum((np.asarray(genes, dtype=np.float64) - TARGET) ** 2, axis=1)


def keyframe_fitness(genes):  # the closer the first half's angles to 10 degrees the better
    return -np.abs(np.asarray(genes, dtype=np.float64)[:, :3] - 10.0).sum(axis=(1, 2))


CASES = [(PAPER, 5, paper_fitness), (KEYFRAME, 6, keyframe_fitness)]
IDS = ["paper_ga", "keyframe_ga"]


def assert_same_state(a, b):
    for name in ("genes", "base_key", "rng_state", "generation"):
        if hasattr(a, name):
            x, y = getattr(a, name), getattr(b, name)
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, name


@pytest.mark.parametrize("strategy, key, fitness", CASES, ids=IDS)
def test_init_ask_tell_are_pure_and_deterministic(strategy, key, fitness):
    s0 = strategy.init(key)
    assert_same_state(s0, strategy.init(key))  # same key, same generation 0
    assert not np.array_equal(s0.genes, strategy.init(key + 1).genes)
    frozen = copy.deepcopy(s0)
    genes, s1 = strategy.ask(s0)
    f = fitness(genes)
    a, b = strategy.tell(s1, f), strategy.tell(s1, f)
    assert_same_state(a, b)  # same state in, same state out
    assert_same_state(s0, frozen)  # the state given is never written
    assert not np.array_equal(a.genes, s0.genes)
    # elites: the best rows pass unchanged, best first
    n_elite = 3 if strategy is KEYFRAME else 2
    np.testing.assert_array_equal(a.genes[:n_elite], genes[ranking(f)[:n_elite]])
    # the same genes a generation later breed differently (the key / random state moved on)
    later = replace(a, genes=s1.genes)
    assert not np.array_equal(strategy.tell(later, f).genes, a.genes)


def test_keyframe_children_stay_in_range_and_mirrored():
    state = KEYFRAME.init(3)
    for _ in range(5):
        state = KEYFRAME.tell(state, keyframe_fitness(state.genes))
    g = state.genes
    assert g.dtype == np.int64 and g.shape == (9, 6, 4)
    assert np.all((g >= LAYOUT.ranges[:, 0]) & (g <= LAYOUT.ranges[:, 1]))
    np.testing.assert_array_equal(keyframe_ga.mirror(g, LAYOUT.swap, LAYOUT.flip), g)


def test_state_checkpoints_as_arrays_and_json(tmp_path):
    for strategy, key, _ in CASES:
        state = loop.start(strategy, key)
        loop.save(tmp_path / strategy.name, strategy, state)
        manifest = json.loads((tmp_path / strategy.name / "checkpoints" / "gen-000000.json").read_text())
        assert manifest["meta"]["engine"] == loop.FORMAT and manifest["meta"]["strategy"] == strategy.name
        back, meta = loop.load(tmp_path / strategy.name, strategy)
        assert_same_state(back.strategy, state.strategy) and meta == {}
    with pytest.raises(CheckpointError, match="for strategy 'paper_ga'; expected format 1 for 'keyframe_ga'"):
        loop.load(tmp_path / "paper_ga", KEYFRAME)


class Stop(Exception):
    pass


@pytest.mark.parametrize("strategy, key, fitness", CASES, ids=IDS)
@pytest.mark.parametrize("stop_at", [0, 3])
def test_interrupted_run_resumes_bit_exact(tmp_path, strategy, key, fitness, stop_at):
    full, _ = loop.run(
        strategy, loop.start(strategy, key), fitness, 6, out_dir=tmp_path / "full", metric_fields=loop.METRIC_FIELDS
    )

    def crash(state):
        if state.generation == stop_at + 1:
            raise Stop

    with pytest.raises(Stop):
        loop.run(
            strategy,
            loop.start(strategy, key),
            fitness,
            6,
            out_dir=tmp_path / "cut",
            metric_fields=loop.METRIC_FIELDS,
            on_generation=crash,
        )
    state, _ = loop.load(tmp_path / "cut", strategy)
    assert state.generation == stop_at + 1
    resumed, ckpt = loop.run(strategy, state, fitness, 6, out_dir=tmp_path / "cut", metric_fields=loop.METRIC_FIELDS)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert strip(full.history) == strip(resumed.history) and len(full.history) == 6
    assert_same_state(full.strategy, resumed.strategy)
    np.testing.assert_array_equal(full.best_genes, resumed.best_genes)
    assert full.best_fitness == resumed.best_fitness == max(r["best"] for r in full.history)
    assert ckpt.name == "gen-000006.json"
    csv_rows = (tmp_path / "cut" / "metrics.csv").read_text().splitlines()
    assert csv_rows[0] == ",".join(loop.METRIC_FIELDS) and len(csv_rows) == 7


def test_threshold_hits_through_the_loop(tmp_path):
    saved = []

    def save_genome(stem, genome, fitness, info):
        saved.append((stem.name, float(fitness), info["threshold"]))
        return stem.with_suffix(".npz")

    state = loop.start(PAPER, 5)
    first = paper_fitness(state.strategy.genes).max()
    end, _ = loop.run(
        PAPER,
        replace(state, threshold=float(first) - 1.0),
        paper_fitness,
        8,
        out_dir=tmp_path,
        delta_fitness=0.5,
        save_genome=save_genome,
    )
    assert end.threshold_hits[0]["generation"] == 0 and saved[0] == (
        "threshold-000000",
        end.threshold_hits[0]["fitness"],
        first - 1.0,
    )
    assert [h["path"] for h in end.threshold_hits] == [str(tmp_path / "genomes" / f"{name}.npz") for name, *_ in saved]
    assert end.threshold >= max(h["fitness"] for h in end.threshold_hits)


def test_population_checkpoint_written_before_the_loop_resumes(tmp_path):
    """A Population checkpoint of generation 2 written by the code before the loop (fixture), resumed to
    4, equals the uninterrupted 4-generation run that code made (expected.json)."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "population-v0", run)
    expected = json.loads((run / "expected.json").read_text())

    def per_genome(genomes):
        return [-float(np.sum((g.genes.astype(np.float64) - TARGET) ** 2)) for g in genomes]

    pop = Population.resume(run)
    assert pop.generation == 2 and pop.settings["mutation"] == "additive"
    res = pop.run(per_genome, 4)
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in res.history] == expected["history"]
    np.testing.assert_array_equal(
        res.genes, np.asarray(expected["genes"], dtype=np.float32)
    )  # the last evaluated generation
    assert res.best_fitness == expected["best_fitness"]
    assert [[h["generation"], h["threshold"]] for h in res.threshold_hits] == expected["threshold_hits"]


def test_strategy_modules_without_jax():
    code = (
        "import sys, animat.evolve.strategies.keyframe_ga, animat.evolve.strategies.base, animat.evolve.ranking; "
        "print('jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
