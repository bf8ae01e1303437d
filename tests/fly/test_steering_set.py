"""A steering set's files read into declared dataclasses (:mod:`animat.fly.steer.steering_set`): an old file (no
``version``) upgrades to the same dataclasses as the current file of the same set, and bad files are one-line
errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from animat import pretrained
from animat.errors import ConfigError
from animat.fly.options import DistillConfig, TrainConfig
from animat.fly.steer.steering_set import (
    FILE_VERSION,
    TOML_VERSION,
    DistillStage,
    SetNetwork,
    StartPool,
    SteeringRecord,
    read_steering_config,
    read_steering_file,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
DROSOPHILA = 'version = 2\npreset = "drosophila"\nspeed = 0.3\n'
COMMANDS = ("hover", "forward", "back", "left", "right", "up", "down")


def one_line(caught) -> str:
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_the_shipped_version_1_steering_json_upgrades_to_its_current_rewrite(tmp_path):
    old = pretrained.resolve("pretrained:paper") / "steering.json"
    assert "version" not in json.loads(old.read_text())  # the shipped file predates versions
    record = read_steering_file(old)
    assert record.preset == "paper" and record.speed == 3.0 and record.switch["up"] == "up" and record.goal == "goal"
    assert record.alternates["goal"] == ("goalD", "goalF", "goalG", "goalH", "goalI")
    new = tmp_path / "steering.json"
    new.write_text(json.dumps(record.to_json()))
    assert json.loads(new.read_text())["version"] == FILE_VERSION
    assert read_steering_file(new) == record


def test_a_version_1_steering_json_may_leave_out_preset_goal_and_alternates(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"speed": 2, "switch": {"hover": "h"}}))
    current = {"version": 2, "preset": "", "speed": 2.0, "switch": {"hover": "h"}, "goal": None, "alternates": {}}
    (tmp_path / "new.json").write_text(json.dumps(current))
    assert read_steering_file(tmp_path / "old.json") == read_steering_file(tmp_path / "new.json")
    assert read_steering_file(tmp_path / "old.json") == SteeringRecord("", 2.0, {"hover": "h"}, None, {})
    del current["goal"]  # version 2 writes every key
    (tmp_path / "new.json").write_text(json.dumps(current))
    with pytest.raises(ConfigError, match="is malformed") as caught:
        read_steering_file(tmp_path / "new.json")
    one_line(caught)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ([1, 2], "not a table"),
        ({"version": 3, "speed": 2}, "is version 3; this animat reads versions 1 to 2"),
        ({"version": "2", "speed": 2}, "version must be a whole number"),
        ({"version": 0, "speed": 2}, "version must be a whole number"),
        ({"switch": {"hover": "h"}}, "is malformed"),  # no speed
        ({"speed": 2, "switch": {"sideways": "h"}}, "unknown command 'sideways'"),
        ({"speed": 2, "switch": {"hover": "h"}, "alternates": {"up": ["u"]}}, "the set's own 'up' network"),
        ({"speed": 2, "switch": {"hover": "h"}, "alternates": {"hover": "h2"}}, "need a list"),
        ({"speed": 2, "switches": {}}, "unknown steering key"),
    ],
)
def test_bad_steering_json_is_one_line(tmp_path, content, match):
    (tmp_path / "steering.json").write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=match) as caught:
        read_steering_file(tmp_path / "steering.json")
    one_line(caught)


def shipped_set():
    """configs/fly_steer.toml (no version: version 1) and its set, spot-checked against what it declares."""
    text = (CONFIGS / "fly_steer.toml").read_text()
    assert "version" not in text
    old = read_steering_config(CONFIGS / "fly_steer.toml")
    assert old.record.switch["forward"] == "forwardS" and old.record.goal == "goalE" and old.record.speed == 3.0
    assert old.record.alternates["forward"] == ("forwardC", "forwardH")
    pool = old.networks["forwardC"].pool
    assert isinstance(pool, StartPool) and pool.name == "handoverS" and pool.scripts == 110 and pool.seed == 9000
    assert pool.tasks["forwardS"] == "forward" and set(pool.tasks.values()) == set(COMMANDS)
    cfg = old.networks["forwardC"].config
    assert isinstance(cfg, TrainConfig) and cfg.start_pool is None and cfg.cone_weight == 3.0 and cfg.speed == 3.0
    assert old.networks["forwardC"].source == "forwardS" and old.networks["hover0"].config.speed == 2.0
    goal = old.networks["goalE"]
    assert goal.distilled_only and goal.config is None and isinstance(goal.distill, DistillStage)
    assert isinstance(goal.distill.config, DistillConfig) and goal.distill.config.rounds == 12
    assert goal.distill.pool.name == "handoverS" and goal.distill.config.start_pool is None
    assert list(old.networks)[-6:] == ["goalD", "goalF", "goalG", "goalH", "goalI", "goalE"]  # distilled last
    return text, old


def test_a_version_1_toml_upgrades_to_the_dataclasses_of_version_2(tmp_path):
    """The shipped set's TOML with ``version = 2`` reads into the same networks, pools, distillations and alternates;
    a short version 1 file into those of the version 2 file naming version 1's defaults."""
    text, old = shipped_set()
    (tmp_path / "v2.toml").write_text(f"version = {TOML_VERSION}\n" + text)
    assert read_steering_config(tmp_path / "v2.toml") == old
    # version 1 could leave out the preset and the speed: the paper preset at 2 u/s
    body = '[networks.hover]\ntask = "hover"\n[networks.up]\ntask = "up"\nfrom = "hover"\n'
    (tmp_path / "short.toml").write_text(body)
    (tmp_path / "long.toml").write_text('version = 2\npreset = "paper"\nspeed = 2.0\n' + body)
    short = read_steering_config(tmp_path / "short.toml")
    assert short == read_steering_config(tmp_path / "long.toml")
    assert short.record == SteeringRecord("paper", 2.0, {"hover": "hover", "up": "up"}, None, {})
    assert short.networks["up"] == SetNetwork("up", "up", TrainConfig.build(None, task="up", speed=2.0), "hover")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('version = 2\n[networks.hover]\ntask = "hover"\n', "names its preset and speed"),
        ('version = 3\n[networks.hover]\ntask = "hover"\n', "is version 3"),
        ('version = true\n[networks.hover]\ntask = "hover"\n', "version must be a whole number"),
        ('speed = 2.0\n[network.hover]\ntask = "hover"\n', "unknown steering-set key"),
        ("speed = 2.0\n", r"lists no \[networks.NAME\]"),
        ('[networks.up]\ntask = "up"\nstart_pool = "p"\n', r"names start pool 'p', which is no \[pools.NAME\]"),
        (DROSOPHILA + '[networks.g]\ntask = "goal"\n', "needs a task of the drosophila preset"),
        (DROSOPHILA + '[networks.up]\ntask = "up"\ntask_speed = 1\n', r"unknown training option\(s\) \['task_speed'\]"),
        (DROSOPHILA + '[networks.up]\ntask = "up"\nfrom = "hover"\n', "pretrained:NAME or a run directory"),
        (DROSOPHILA + '[networks.h]\ntake = "pretrained:drosophila-hover"\n', "it needs a task"),
    ],
)
def test_bad_steering_toml_is_one_line(tmp_path, text, match):
    (tmp_path / "set.toml").write_text(text)
    with pytest.raises(ConfigError, match=match) as caught:
        read_steering_config(tmp_path / "set.toml")
    one_line(caught)


def test_the_fruit_flys_steering_toml_reads_into_drosophila_networks_each_its_direction_recipes_run():
    """configs/fly_drosophila_steer.toml: a drosophila set at 0.3 m/s with one network per command, the hover
    network taken as pretrained:drosophila-hover is, and each direction network trained from it with the options of
    ``animat fly train --config configs/fly_drosophila_forward.toml --fitness NAME`` (the runs that train it)."""
    from animat.fly.drosophila.options import DrosophilaTrainConfig

    steering = read_steering_config(CONFIGS / "fly_drosophila_steer.toml")
    assert steering.record == SteeringRecord("drosophila", 0.3, {c: c for c in COMMANDS}, None, {})
    assert steering.networks["hover"] == SetNetwork("hover", "hover", None, taken="pretrained:drosophila-hover")
    for name in COMMANDS[1:]:
        recipe = DrosophilaTrainConfig.build(CONFIGS / "fly_drosophila_forward.toml", fitness=name)
        assert steering.networks[name] == SetNetwork(name, name, recipe, "pretrained:drosophila-hover"), name
