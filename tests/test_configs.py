"""Every file in configs/ parses and validates through its system's own command (nothing is run).

Each command is given the config and an ``--out`` that already holds a file: a command reads and checks
its configuration before it makes the run directory, so exit 2 with "already exists and is not empty"
(or, where no run directory is involved, the one-line error of a later, deliberately missing input) means
the file passed every check of its own command; a bad key or value fails earlier with its own message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from animat.config import load_toml

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
NEEDS_SHARED_DATA = {  # their clips are shared:humanoid3d_*.txt
    "imitate_walk.toml",
    "imitate_walk_cpu.toml",
    "imitate_locomotion_cpu.toml",
    "surrogate_cape_character.toml",
    "surrogate_skirt_character.toml",
}
BUSY = "already exists and is not empty"


def _params():
    return [
        pytest.param(path, id=path.name, marks=[pytest.mark.deepmimic] if path.name in NEEDS_SHARED_DATA else [])
        for path in CONFIGS
    ]


def test_the_configs_folder_holds_every_systems_configs():
    systems = {path.name.split("_")[0] for path in CONFIGS}
    assert systems == {"fly", "skier", "swarm", "surrogate", "imitate"} and len(CONFIGS) >= 20


@pytest.mark.parametrize("path", _params())
def test_shipped_config_is_accepted_by_its_command(path, tmp_path, animat_cli):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "earlier.txt").write_text("an earlier run")
    system = path.name.split("_")[0]
    if path.name == "fly_replay_30s.toml":  # a replay's options: checked before the run to replay is looked for
        code, _, err = animat_cli("fly", "replay", str(tmp_path / "no-run"), "--config", str(path), "--out", str(busy))
        assert code == 2 and "does not exist" in err, err
        assert load_toml(path) == {"seconds": 30.0, "anim_seconds": 6.0}
    elif "networks" in load_toml(path):  # a steering set's TOML: checked whole before any network is picked
        code, _, err = animat_cli(
            "fly", "train-steering", "--config", str(path), "--out", str(busy), "--networks", "no-such-network"
        )
        assert code == 2 and "unknown network" in err, err
        assert not (busy / "steering.json").exists()
    elif system in ("fly", "skier", "imitate"):
        code, _, err = animat_cli(system, "train", "--config", str(path), "--out", str(busy))
        assert code == 2 and (BUSY in err or (system == "imitate" and "install the rl extra" in err)), (
            err
        )  # imitate checks torch next
    elif system == "swarm":
        scheme = load_toml(path)["scheme"]
        code, _, err = animat_cli("swarm", "run", scheme, "--config", str(path), "--out", str(busy))
        assert code == 2 and BUSY in err, err
    else:
        # surrogate: [train] through train (a missing dataset is its next check), [generate] and [scene]
        # through generate
        from animat.surrogate.scenes import get_scene

        garment = path.stem.endswith("_character")  # surrogate_cape_character.toml: scene cape-character
        scene = path.stem.removeprefix("surrogate_").replace("_", "-") if garment else path.stem.split("_")[1]
        code, _, err = animat_cli(
            "surrogate", "train", scene, "--config", str(path), "--data", str(tmp_path / "no-data"), "--out", str(busy)
        )
        assert code == 2 and "no-data" in err and "dataset" in err, err
        code, _, err = animat_cli(
            "surrogate", "generate", scene, "--config", str(path), "--episodes", "0", "--out", str(busy)
        )
        assert code == 2 and "--episodes must be an integer >= 1, got 0" in err, err  # the [generate] table passed
        assert get_scene(scene, **load_toml(path)["scene"]).name == scene  # what generate checks next
    assert sorted(p.name for p in busy.iterdir()) == ["earlier.txt"]  # nothing written
