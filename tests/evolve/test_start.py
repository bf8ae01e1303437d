"""The one start path of an evolution run (animat.evolve.start, issue 46): fresh, --resume and --from for any
strategy (a keyframe GA here, NumPy only), and the fly and the skier both going through it."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import animat
from animat import runs
from animat.errors import CheckpointError, ConfigError, RunDirError
from animat.evolve import loop
from animat.evolve.start import Start, begin, plan, write_config
from animat.evolve.strategies import keyframe_ga

LAYOUT = keyframe_ga.KeyframeLayout(
    np.array([[-30, 30], [-30, 30], [0, 90], [-45, 45]], dtype=np.int64),
    ((0, 1), (2, 3)),
    np.array([1, 0, 2, 3]),
    np.array([3]),
)
GA = keyframe_ga.KeyframeGA(
    LAYOUT,
    lambda rng: keyframe_ga.mirror(rng.integers(-30, 31, size=(8, 6, 4)), LAYOUT.swap, LAYOUT.flip),
    keyframe_ga.KeyframeParams(elites=3, parent_probs=(0.5, 0.3, 0.2), mutation_rate=0.1),
)


def fitness(genes):
    return -np.abs(np.asarray(genes, dtype=np.float64)[:, :3] - 10.0).sum(axis=(1, 2))


def evolve(out: Path, generations: int) -> loop.LoopState:
    """``generations`` of the toy GA from seed 5 into ``out`` (config.json first, as a run writes it)."""
    start = plan(out, resume=False)
    write_config(out, {"system": "toy", "generations": generations}, start)
    state = begin(GA, out, start, seed=5, generations=generations)
    return loop.run(GA, state, fitness, generations, out_dir=out)[0]


def test_a_fresh_start_is_generation_0_of_the_seed(tmp_path):
    start = plan(tmp_path, resume=False)
    assert start == Start(False)
    state = begin(GA, tmp_path, start, seed=5, generations=3)
    np.testing.assert_array_equal(GA.ask(state.strategy)[0], GA.ask(loop.start(GA, 5).strategy)[0])


def test_a_resumed_run_continues_from_its_checkpoint_and_a_finished_one_is_refused(tmp_path):
    full = evolve(tmp_path / "full", 5)
    part = tmp_path / "part"
    evolve(part, 3)
    start = plan(part, resume=True)
    assert start.resume and start.record is None
    seen = []
    state = begin(GA, part, start, seed=5, generations=5, check=seen.append)
    assert state.generation == 3 and len(seen) == 1  # the caller's check saw the loaded state
    state = loop.run(GA, state, fitness, 5, out_dir=part)[0]
    np.testing.assert_array_equal(state.best_genes, full.best_genes)
    assert [r["best"] for r in state.history] == [r["best"] for r in full.history]
    runs.atomic_write_json(part / "summary.json", {})
    with pytest.raises(RunDirError, match="already finished its 5 generations; pass --generations > 5"):
        begin(GA, part, plan(part, resume=True), seed=5, generations=5)

    def refuse(_state):
        raise CheckpointError("not this shape")

    with pytest.raises(CheckpointError, match="not this shape"):
        begin(GA, part, plan(part, resume=True), seed=5, generations=9, check=refuse)


def test_from_reads_the_source_and_config_json_records_it(tmp_path):
    calls = []

    def read_source(path: Path):
        calls.append(path)
        return np.ones(3), {"path": str(path), "generation": 7}

    start = plan(tmp_path, resume=False, from_run="elsewhere", read_source=read_source)
    assert calls == [Path("elsewhere")] and start.record == {"path": "elsewhere", "generation": 7}
    np.testing.assert_array_equal(start.source, np.ones(3))
    write_config(tmp_path, {"system": "toy", "seed": 1}, start)
    assert runs.read_run_config(tmp_path) == {"system": "toy", "seed": 1, "from": start.record}
    # stopped before its first checkpoint: --resume starts it again, from the run its config.json names
    again = plan(tmp_path, resume=True, read_source=read_source)
    assert not again.resume and calls[-1] == Path("elsewhere") and again.record == start.record
    with pytest.raises(ConfigError, match="cannot start from another run"):
        plan(tmp_path / "new", resume=False, from_run="elsewhere")


def test_a_resumed_run_keeps_its_from_record(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    runs.atomic_write_json(out / "config.json", {"from": {"path": "src", "generation": 2}})
    evolve(tmp_path / "other", 2)
    for name in ("checkpoints",):
        (tmp_path / "other" / name).rename(out / name)
    start = plan(out, resume=True, read_source=lambda path: pytest.fail("a resumed run reads no source"))
    assert start == Start(True, None, {"path": "src", "generation": 2})


def _imports(module: str) -> set[str]:
    path = Path(animat.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text())
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_the_fly_and_the_skier_start_their_runs_through_it():
    """One start path: the fly's generations (either preset's: animat.fly.evolve) and the skier's training take
    plan/begin/write_config from animat.evolve.start, and neither keeps its own."""
    for module in ("animat.fly.evolve", "animat.skier.train"):
        assert "animat.evolve.start" in _imports(module), module
        text = Path(animat.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py").read_text()
        assert "loop.unstarted(" not in text and "loop.load(" not in text and "runs.refuse_finished(" not in text
    assert "animat.fly.evolve" in _imports("animat.fly.drosophila.train") and "animat.fly.evolve" in _imports(
        "animat.fly.train"
    )
