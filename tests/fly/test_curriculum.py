"""A fly run in stages from one config (animat.fly.curriculum): each stage a run directory started from the
one before, the last stage's products in the run directory, resume where it stopped, one-line refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.fly.curriculum import stage_configs
from animat.fly.options import TrainConfig

STAGES = """
population = 8
seconds = 0.2
generations = 2
fitness = "mean-height"
seed = 4
replay_seconds = 0.5

[[stages]]
strategy = "open_es"
es_result = "centre"
init_std = 0.01
fitness = "lateral"

[[stages]]
generations = 3
"""


def test_each_stage_is_the_one_before_with_its_changes():
    cfg = TrainConfig.build(
        None, population=8, generations=5, stages=[{"strategy": "open_es", "seconds": 1.0}, {"generations": 9}]
    )
    first, second, third = stage_configs(cfg)
    assert (first.strategy, first.seconds, first.generations, first.stages) == ("paper_ga", 3.0, 5, [])
    assert (second.strategy, second.seconds, second.generations) == ("open_es", 1.0, 5)
    assert (third.strategy, third.seconds, third.generations, third.population) == ("open_es", 1.0, 9, 8)


@pytest.mark.parametrize(
    "stages, message",
    [
        ([{"layers": [15, 4, 3]}], "stage 2 changes layers: every stage flies the first stage's fly and network"),
        ([{}, {"fly": {"mass": 2.0}}], "stage 3 changes fly"),
        ([{"generation": 3}], "stage 2: unknown training option(s) ['generation']"),
        ([{"seconds": -1.0}], "stage 2: seconds must be"),
        (["lateral"], "stages must be a list, each item a table"),
    ],
)
def test_a_stage_that_changes_the_fly_or_sets_a_bad_option_is_refused_when_the_config_is_read(stages, message):
    with pytest.raises(ConfigError) as err:
        TrainConfig.build(None, stages=stages)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_run_in_stages_trains_each_from_the_one_before_and_resumes_where_it_stopped(tmp_path, animat_cli):
    config = tmp_path / "stages.toml"
    config.write_text(STAGES)
    run = tmp_path / "run"
    code, out, err = animat_cli("fly", "train", "--config", str(config), "--out", str(run))
    assert code == 0, err
    assert "in 3 stages" in out and "stage 3/3" in out
    for k, strategy in ((1, "paper_ga"), (2, "open_es"), (3, "open_es")):
        stored = json.loads((run / "stages" / str(k) / "config.json").read_text())
        assert stored["strategy"] == strategy and stored["stages"] == []
        if k > 1:
            assert stored["from"]["path"] == str(run / "stages" / str(k - 1))
    assert (
        json.loads((run / "stages" / "3" / "config.json").read_text())["fitness"] == "lateral"
    )  # inherited from stage 2
    last = run / "stages" / "3"
    assert (run / "best_genome.npz").read_bytes() == (last / "best_genome.npz").read_bytes()
    assert (run / "trajectory.npz").is_file() and not (run / "checkpoints").exists()
    summary = json.loads((run / "summary.json").read_text())
    assert [s["dir"] for s in summary["stages"]] == ["stages/1", "stages/2", "stages/3"]
    assert [s["generations"] for s in summary["stages"]] == [2, 2, 3]
    assert summary["best_fitness"] == json.loads((last / "summary.json").read_text())["best_fitness"]
    # the run replays as any run: the last stage's genome
    code, _, err = animat_cli("fly", "replay", str(run), "--seconds", "0.1", "--out", str(tmp_path / "replay"))
    assert code == 0, err
    # finished: refused in one line
    code, _, err = animat_cli("fly", "train", "--resume", str(run))
    assert code == 2 and "already finished its 3 stages" in err and len(err.strip().splitlines()) == 1, err
    # interrupted in stage 3 (its checkpoint at generation 2, no outputs): resume finishes it, stages 1-2 untouched
    genome = np.load(last / "best_genome.npz")["genes"]
    first_metrics = (run / "stages" / "1" / "metrics.csv").stat().st_mtime_ns
    for name in ("summary.json", "best_genome.npz", "best_genome.json"):
        (run / name).unlink()
        (last / name).unlink()
    (last / "checkpoints" / "gen-000003.json").unlink()
    (last / "checkpoints" / "gen-000003.npz").unlink()
    code, _, err = animat_cli("fly", "train", "--resume", str(run))
    assert code == 0, err
    np.testing.assert_array_equal(np.load(run / "best_genome.npz")["genes"], genome)
    assert (run / "stages" / "1" / "metrics.csv").stat().st_mtime_ns == first_metrics
    code, _, err = animat_cli("fly", "train", "--resume", str(run), "--generations", "9")
    assert code == 2 and "each stage's own generations" in err
