"""The fly's preset table (animat.fly.presets, issue 46): a new preset is one entry. A toy preset written here (its
options, training, replay and report in a 40-line module, registered for this test only) is trained, resumed,
replayed, reported and described by the fly's own commands; the table's lookups refuse what is no preset."""

from __future__ import annotations

import json
import sys

import pytest

from animat.errors import ConfigError
from animat.fly import presets

TOY = '''"""A toy fly: trains by counting, flies nowhere."""
from dataclasses import dataclass, field
from pathlib import Path

from animat import runs
from animat.config import option, read_options


@dataclass
class ToyConfig:
    preset: str = option("toy", "The fly: toy", choices=("toy",))
    generations: int = option(2, "Generations", ge=1)
    population: int = option(4, "Flies", ge=1)
    seconds: float = option(1.0, "Seconds", gt=0)
    fitness: str = option("count", "Fitness")
    anim_seconds: float = option(0.0, "Animation", ge=0)
    replay_seconds: float = option(1.0, "Replay", gt=0)
    stages: list = option(help="Stages", factory=list)

    @classmethod
    def build(cls, file=None, **overrides):
        return cls(**read_options(cls, file, overrides))


def train(cfg, out, *, resume, from_run, on_generation):
    runs.atomic_write_json(Path(out) / "config.json", runs.config_record("fly", "train", cfg))
    for g in range(cfg.generations):
        on_generation({"generation": g, "best": g, "mean": g, "crashes": 0})
    summary = {"best_fitness": float(cfg.generations), "generations": cfg.generations, "toy_resumed": resume}
    runs.atomic_write_json(Path(out) / "summary.json", summary)
    return summary


def load_for_replay(source):
    return {"toy": True}, runs.read_json(Path(source) / "config.json")["generations"]


def write_replay(params, genome, seconds, out, *, anim_seconds, title):
    return {"toy_flight_s": seconds, "toy_genome": genome, "toy_title": title}


BUILDERS = ()
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The module ``toy_fly`` on sys.path and its preset ``toy`` in the table, for this test only."""
    (tmp_path / "toy_fly.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_fly

    entry = presets.Preset(
        "toy",
        "a fly that counts",
        toy_fly.ToyConfig,
        "toy_fly:train",
        "toy_fly:load_for_replay",
        "toy_fly:write_replay",
        "toy_fly:BUILDERS",
        ("best_fitness", "toy_resumed"),
        ("toy_flight_s", "toy_genome"),
        refuses=("task",),
        refusal="a toy flies no task",
    )
    monkeypatch.setitem(presets.PRESETS, "toy", entry)
    yield entry
    del sys.modules["toy_fly"]


def test_a_new_preset_is_one_entry(toy, tmp_path, animat_cli):
    run, replay = tmp_path / "run", tmp_path / "replay"
    code, out, err = animat_cli("--json", "fly", "train", "--preset", "toy", "-g", "3", "--out", str(run))
    assert code == 0, err
    assert json.loads(out) == {"best_fitness": 3.0, "generations": 3, "toy_resumed": False, "results": str(run)}
    config = json.loads((run / "config.json").read_text())
    assert (config["system"], config["verb"], config["preset"], config["generations"]) == ("fly", "train", "toy", 3)
    code, out, err = animat_cli("--json", "info", str(run))
    assert code == 0 and (json.loads(out)["preset"], json.loads(out)["total"]) == ("toy", 3), err
    (run / "summary.json").unlink()  # interrupted: --resume finds the preset in the run's config.json
    code, out, err = animat_cli("--json", "fly", "train", "--resume", str(run), "-g", "4")
    assert code == 0 and json.loads(out)["toy_resumed"] is True and json.loads(out)["best_fitness"] == 4.0, err
    code, out, err = animat_cli("--json", "fly", "replay", str(run), "--seconds", "0.5", "--out", str(replay))
    assert code == 0, err
    assert {k: json.loads(out)[k] for k in ("toy_flight_s", "toy_genome", "results")} == {
        "toy_flight_s": 0.5,
        "toy_genome": 4,
        "results": str(replay),
    }
    assert json.loads((replay / "config.json").read_text())["preset"] == "toy"
    code, out, err = animat_cli("--json", "info", str(replay))  # recognised by the record its config.json holds
    assert code == 0 and [json.loads(out)[k] for k in ("system", "verb", "preset")] == ["fly", "replay", "toy"], err
    assert "holds nothing to replay" in (replay / "report.html").read_text()  # the toy draws no scene
    code, _, err = animat_cli("fly", "train", "--preset", "toy", "--task", "up", "--out", str(tmp_path / "no"))
    assert code == 2 and "--task: the paper preset's options; a toy flies no task" in err
    assert not (tmp_path / "no").exists()


def test_the_table_names_every_preset_and_refuses_others(tmp_path):
    assert list(presets.PRESETS) == ["paper", "drosophila"]
    for name, preset in presets.PRESETS.items():
        assert preset.name == name and preset.config().preset == name  # its options name it in config.json
        assert f"{name} ({preset.about}" in presets.help_text()
        assert callable(preset.trainer()) and preset.builders  # every entry's strings import
    assert [b.name for b in presets.BUILDERS] == ["fly", "drosophila"]
    with pytest.raises(ConfigError, match="--preset must be paper or drosophila, got 'bee'"):
        presets.get("bee")
    assert presets.of_source(tmp_path / "nowhere").name == "paper"  # whose loader says what is wrong
    with pytest.raises(ConfigError, match="--task, --asymmetric/--symmetric: the paper preset's options"):
        presets.refuse_others(presets.PRESETS["drosophila"], {"asymmetric": True, "task": "up", "seed": 1})
