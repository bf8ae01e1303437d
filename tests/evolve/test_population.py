"""The engine loop: improvement, monotone best, determinism, crashes, thresholds, resume."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import CheckpointError, CheckpointWarning, ConfigError
from animat.evolve import network
from animat.evolve.genome import Genome
from animat.evolve.genome_file import load_genome
from animat.evolve.population import Population, RunResult, rank_scores

LAYERS = (2, 4, 1)
G = network.param_count(LAYERS)  # 17
TARGET = np.linspace(-1.0, 1.0, G)
SIZE = 30


def per_genome(genomes):
    return [-float(np.sum((g.genes.astype(np.float64) - TARGET) ** 2)) for g in genomes]


def batched(params):
    genes = np.asarray(network.flatten({k: np.asarray(v) for k, v in params.items()}, LAYERS), dtype=np.float64)
    return -np.sum((genes - TARGET) ** 2, axis=1)


def strip(history):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


def assert_same_run(a: RunResult, b: RunResult):
    assert strip(a.history) == strip(b.history)
    np.testing.assert_array_equal(a.genes, b.genes)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.best_genome.genes, b.best_genome.genes)
    assert a.best_fitness == b.best_fitness and a.generation == b.generation


KW = dict(mutation="additive", mutation_rate=0.2, mutation_std=0.3, pool_frac=0.2, elite_frac=0.1)


def test_run_improves_best_never_decreases_and_size_constant():
    rows = []
    pop = Population(SIZE, LAYERS, seed=0)
    res = pop.run(per_genome, 30, on_generation=rows.append, **KW)
    best = [r["best"] for r in res.history]
    assert len(res.history) == 30 and rows == res.history
    assert [r["generation"] for r in res.history] == list(range(30))
    assert all(b2 >= b1 for b1, b2 in zip(best, best[1:]))
    assert best[-1] > best[0] + 5.0  # the GA actually solves the toy task
    assert res.best_fitness == max(best)
    assert per_genome([res.best_genome])[0] == res.best_fitness
    assert res.genes.shape == (SIZE, G) and res.fitness.shape == (SIZE,) and pop.genes.shape == (SIZE, G)
    assert res.generation == pop.generation == 30
    assert set(res.history[0]) == {"generation", "best", "mean", "median", "crashes", "seconds"}


def test_initial_genes_gaussian_and_seeded():
    a, b, c = (
        Population(SIZE, LAYERS, init_std=0.5, seed=1),
        Population(SIZE, LAYERS, init_std=0.5, seed=1),
        Population(SIZE, LAYERS, seed=2),
    )
    np.testing.assert_array_equal(a.genes, b.genes)
    assert not np.array_equal(a.genes, c.genes)
    assert a.genes.dtype == np.float32 and a.genes.shape == (SIZE, G)
    big = Population(1000, LAYERS, init_std=0.5, seed=3).genes
    assert abs(big.std() - 0.5) < 0.02


def test_same_seed_same_run_different_seed_different():
    a = Population(SIZE, LAYERS, seed=4).run(per_genome, 8, **KW)
    b = Population(SIZE, LAYERS, seed=4).run(per_genome, 8, **KW)
    c = Population(SIZE, LAYERS, seed=5).run(per_genome, 8, **KW)
    assert_same_run(a, b)
    assert strip(a.history) != strip(c.history)
    assert not np.array_equal(a.genes, c.genes)


def test_per_genome_and_batched_styles_agree():
    a = Population(SIZE, LAYERS, seed=6).run(per_genome, 6, **KW)
    b = Population(SIZE, LAYERS, seed=6).run(batched, 6, batched=True, **KW)
    assert_same_run(a, b)


def test_crashes_counted_and_excluded():
    def crashy(genomes):
        vals = per_genome(genomes)
        return [float("nan") if g.genes[0] > 0.5 else v for g, v in zip(genomes, vals)]

    pop = Population(SIZE, LAYERS, seed=7)
    g0 = pop.genes.copy()
    res = pop.run(crashy, 3, **KW)
    row = res.history[0]
    expected = per_genome([Genome(LAYERS, g) for g in g0])
    crashed = g0[:, 0] > 0.5
    assert 0 < crashed.sum() < SIZE
    assert row["crashes"] == int(crashed.sum())
    ok = np.asarray(expected)[~crashed]
    assert (
        row["best"] == pytest.approx(ok.max())
        and row["mean"] == pytest.approx(ok.mean())
        and row["median"] == pytest.approx(np.median(ok))
    )
    assert np.isfinite(res.best_fitness) and res.best_genome.genes[0] <= 0.5


def test_all_crashed_generation():
    res = Population(6, LAYERS, seed=8).run(lambda gs: [float("nan")] * len(gs), 2)
    assert all(np.isnan(r["best"]) and np.isnan(r["mean"]) and r["crashes"] == 6 for r in res.history)
    assert res.best_genome is None and res.best_fitness == float("-inf")


def test_population_api_rejects_bad_input_in_one_line():
    for make in (
        lambda: Population(10, 5),
        lambda: Population(10, [3, "a"]),
        lambda: Population(2.9, [3, 2]),
        lambda: Population(10, [3, 2], init_std=float("inf")),
        lambda: Population(10, [3, 2], activations=None),
    ):
        with pytest.raises(ConfigError):
            make()
    pop = Population(SIZE, LAYERS, seed=1)
    for bad in (
        dict(generations="x"),
        dict(generations=1, elite_frac="a"),
        dict(generations=1, fitness_threshold=float("nan")),
        dict(generations=1, batched="no"),
        dict(generations=1, output_names="abc"),
    ):
        with pytest.raises(ConfigError):
            pop.run(per_genome, **bad)
    assert pop.generation == 0  # nothing ran


def test_threshold_rises_past_the_best_in_one_go_even_for_a_tiny_delta():
    import signal

    def hung(*_):
        raise TimeoutError("raising the threshold did not end")

    signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)  # a stepping loop would never end: fail instead of hanging the suite
    pop = Population(SIZE, LAYERS, seed=1)
    pop.threshold = 1e16
    fit = np.zeros(SIZE)
    fit[0] = 1e16 + 2.0
    pop._check_threshold(0, pop.genes, fit, 0.5, None)  # 0.5 is below the spacing of 1e16: a loop of += 0.5 never ends
    assert pop.threshold >= fit[0] and len(pop.threshold_hits) == 1
    pop.threshold = -1e4
    fit[0] = 1e4
    pop._check_threshold(1, pop.genes, fit, 1e-4, None)  # 2e8 steps of 1e-4, computed at once
    signal.alarm(0)
    assert fit[0] <= pop.threshold < fit[0] + 2e-4


def test_rank_scores_exact():
    f = np.array([1.0, np.nan, 1.0 + 1e-12, -np.inf, 5.0])
    assert rank_scores(f).tolist() == [-2.0, -np.inf, -1.0, -np.inf, -0.0]  # crashes -inf: breeding skips them
    assert rank_scores(np.array([2.0, np.inf, 2.0])).tolist() == [
        -0.0,
        -np.inf,
        -1.0,
    ]  # ties by index; +inf is a crash too


def test_custom_evaluator_used_and_not_closed():
    class Ev:
        calls, closed = 0, False

        def __call__(self, genes):
            Ev.calls += 1
            assert genes.shape == (SIZE, G)
            return -np.sum((genes.astype(np.float64) - TARGET) ** 2, axis=1)

        def close(self):
            Ev.closed = True

    a = Population(SIZE, LAYERS, seed=9).run(None, 4, evaluator=Ev(), **KW)
    b = Population(SIZE, LAYERS, seed=9).run(per_genome, 4, **KW)
    assert Ev.calls == 4 and not Ev.closed
    assert_same_run(a, b)


def test_bad_settings_raise():
    pop = Population(SIZE, LAYERS)
    with pytest.raises(ConfigError):
        pop.run(per_genome, 1, mutation="cauchy")
    with pytest.raises(ConfigError):
        pop.run(per_genome, 1, mutation_rate=2.0)
    with pytest.raises(ConfigError):
        pop.run(per_genome, 1, output_names=["a", "b"])
    with pytest.raises(ConfigError):
        Population(1, LAYERS)


def test_threshold_saves_and_raises_by_delta(tmp_path):
    pop = Population(SIZE, LAYERS, seed=10)
    first_best = max(per_genome([Genome(LAYERS, g) for g in pop.genes]))
    start = first_best - 1.0
    res = pop.run(per_genome, 12, fitness_threshold=start, delta_fitness=0.75, out_dir=tmp_path, **KW)
    hits = res.threshold_hits
    assert hits and hits[0]["generation"] == 0 and hits[0]["threshold"] == start
    # the threshold moved by whole multiples of delta past each saved best
    for h in hits:
        assert h["fitness"] > h["threshold"]
        assert (h["threshold"] - start) / 0.75 == pytest.approx(round((h["threshold"] - start) / 0.75))
    assert pop.threshold >= max(h["fitness"] for h in hits)
    # replay the rule on the history: save when best > threshold, then raise by delta while still above
    t, expected = start, []
    for row in res.history:
        if row["best"] > t:
            expected.append((row["generation"], t))
            while t < row["best"]:
                t += 0.75
    assert [(h["generation"], h["threshold"]) for h in hits] == expected
    assert pop.threshold == pytest.approx(start + 0.75 * np.ceil((max(h["fitness"] for h in hits) - start) / 0.75))
    for h in hits:
        saved = load_genome(h["path"])
        assert saved.fitness == res.history[h["generation"]]["best"]
        assert per_genome([saved.genome])[0] == saved.fitness
    files = sorted(p.name for p in (tmp_path / "genomes").glob("threshold-*.npz"))
    assert files == [f"threshold-{h['generation']:06d}.npz" for h in hits]
    # generations whose best did not exceed the current threshold saved nothing
    assert len(hits) < 12


def test_final_checkpoint_always_written(tmp_path):
    pop = Population(SIZE, LAYERS, seed=11)
    res = pop.run(per_genome, 3, out_dir=tmp_path, output_names=["thrust"], **KW)
    latest = json.loads((tmp_path / "checkpoints" / "latest.json").read_text())
    assert latest["generation"] == 3 and res.checkpoint.name == "gen-000003.json"
    back = Population.resume(tmp_path)
    assert back.generation == 3 and back.settings["output_names"] == ["thrust"]
    np.testing.assert_array_equal(back.genes, pop.genes)
    np.testing.assert_array_equal(back.base_key, pop.base_key)
    assert strip(back.history) == strip(pop.history) and back.history == pop.history


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("stop_at", [0, 2, 4])
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, stop_at):
    full = Population(SIZE, LAYERS, seed=12).run(
        per_genome, 6, save_every=1, out_dir=tmp_path / "full", fitness_threshold=-30.0, delta_fitness=2.0, **KW
    )

    def crash(row):
        if row["generation"] == stop_at:
            raise Interrupt

    cut = Population(SIZE, LAYERS, seed=12)
    with pytest.raises(Interrupt):
        cut.run(
            per_genome,
            6,
            save_every=1,
            out_dir=tmp_path / "cut",
            on_generation=crash,
            fitness_threshold=-30.0,
            delta_fitness=2.0,
            **KW,
        )
    assert cut.generation == len(cut.history) == stop_at + 1  # the in-memory state stayed consistent
    assert_same_run(full, cut.run(per_genome, 6))
    pop = Population.resume(tmp_path / "cut")
    assert pop.generation == stop_at + 1  # generation stop_at was committed and checkpointed before the callback
    resumed = pop.run(per_genome, 6)  # settings come from the checkpoint
    assert_same_run(full, resumed)
    assert [(h["generation"], h["threshold"]) for h in full.threshold_hits] == [
        (h["generation"], h["threshold"]) for h in resumed.threshold_hits
    ]


def test_resume_from_specific_checkpoint_and_continue(tmp_path):
    full = Population(SIZE, LAYERS, seed=13).run(per_genome, 8, **KW)
    Population(SIZE, LAYERS, seed=13).run(per_genome, 4, out_dir=tmp_path, save_every=2, **KW)
    pop = Population.resume(tmp_path / "checkpoints" / "gen-000002.json")
    assert pop.generation == 2
    half = pop.run(per_genome, 4, out_dir=tmp_path / "b")
    rest = Population.resume(tmp_path / "b").run(per_genome, 8)
    assert len(half.history) == 4
    assert_same_run(full, rest)


def test_resume_overrides_settings(tmp_path):
    Population(SIZE, LAYERS, seed=14).run(per_genome, 3, out_dir=tmp_path, **KW)
    same = Population.resume(tmp_path).run(per_genome, 6)
    changed_pop = Population.resume(tmp_path)
    changed = changed_pop.run(per_genome, 6, mutation_rate=0.9)
    assert changed_pop.settings["mutation_rate"] == 0.9 and changed_pop.settings["mutation"] == "additive"
    assert strip(same.history[:4]) == strip(changed.history[:4])  # gen 3 was bred before the change
    assert strip(same.history) != strip(changed.history)


def test_resume_fresh_population(tmp_path):
    pop = Population(SIZE, LAYERS, seed=16)
    pop.save(tmp_path)
    back = Population.resume(tmp_path)
    assert back.generation == 0 and back.history == [] and back.best_genome is None
    assert_same_run(pop.run(per_genome, 3, **KW), back.run(per_genome, 3, **KW))


def test_resume_missing_or_corrupt_raises(tmp_path):
    with pytest.raises(CheckpointError, match="missing"):
        Population.resume(tmp_path / "nothing")
    done = Population(SIZE, LAYERS, seed=15).run(per_genome, 2, out_dir=tmp_path, **KW)  # a checkpoint per generation
    for gen in (2, 1):
        npz = tmp_path / "checkpoints" / f"gen-{gen:06d}.npz"
        data = bytearray(npz.read_bytes())
        data[len(data) // 2] ^= 0xFF
        npz.write_bytes(bytes(data))
        if gen == 2:  # the newest damaged: resumed from the one before, which replays to the same state
            with pytest.warns(CheckpointWarning, match="gen-000002.npz"):
                back = Population.resume(tmp_path)
            assert back.generation == 1
            assert_same_run(done, back.run(per_genome, 2, **KW))
    with pytest.raises(CheckpointError, match="gen-000002.npz"):
        Population.resume(tmp_path)


@pytest.mark.slow
def test_engine_regresses_sin_batched():
    """A [1, 8, 1] tanh network learns sin on [-pi, pi] with the batched (jit/vmap) fitness."""
    layers = (1, 8, 1)
    X = jnp.linspace(-np.pi, np.pi, 32)[None, :]
    Y = jnp.sin(X)

    @jax.jit
    def mse(params):
        out = network.activate_population(params, X, ("tanh", "tanh"))
        return jnp.mean((out - Y[None]) ** 2, axis=(1, 2))

    def fitness(params):
        return -np.asarray(mse({k: jnp.asarray(v) for k, v in params.items()}), dtype=np.float64)

    res = Population(64, layers, seed=0).run(
        fitness, 60, batched=True, mutation="additive", mutation_rate=0.1, mutation_std=0.2, pool_frac=0.2
    )
    best = [r["best"] for r in res.history]
    assert all(b2 >= b1 for b1, b2 in zip(best, best[1:]))
    assert -best[-1] < 0.5 * -best[0] and -best[-1] < 0.05


def test_a_fitness_returning_the_wrong_number_of_values_is_refused():
    """Either fitness style: one value per genome, or an error naming both counts (never a silent broadcast)."""
    from animat.evolve.evaluate import make_evaluator

    layers, acts = (2, 3, 1), ("tanh", "tanh")
    genes = np.zeros((5, network.param_count(layers)), np.float32)
    per_genome = make_evaluator(lambda genomes: [0.0] * (len(genomes) - 1), layers, acts, False)
    with pytest.raises(ValueError, match="fitness returned 4 values for 5 genomes"):
        per_genome(genes)
    batched = make_evaluator(lambda params: np.zeros(1), layers, acts, True)
    with pytest.raises(ValueError, match="fitness returned 1 values for 5 genomes"):
        batched(genes)
    assert make_evaluator(lambda genomes: [float(i) for i in range(len(genomes))], layers, acts, False)(
        genes
    ).tolist() == [0, 1, 2, 3, 4]
