"""Shared config checks: a value of the wrong type is a one-line ConfigError in every system's builder."""

import pytest

from animat.config import check_types
from animat.errors import ConfigError
from animat.fly.train import TrainConfig as FlyConfig
from animat.surrogate.options import TrainConfig as SurrogateConfig
from animat.surrogate.scenes import get_scene
from animat.swarm.run import SwarmConfig


@pytest.mark.parametrize(
    "build, option, message",
    [
        (SurrogateConfig.build, {"lr": "1e-4"}, "lr must be a number, got '1e-4'"),
        (SurrogateConfig.build, {"window": 32.5}, "window must be an integer, got 32.5"),
        (SurrogateConfig.build, {"epochs": True}, "epochs must be an integer, got True"),
        (FlyConfig.build, {"generations": "abc"}, "generations must be an integer, got 'abc'"),
        (SwarmConfig.build, {"steps": [1, 2]}, "steps must be an integer, got [1, 2]"),
        (
            lambda **o: get_scene("flag", **o),
            {"wind_speed_mps": [1.0]},
            "wind_speed_mps must be a list of 2 (a number, a number), got (1.0,)",
        ),
        (FlyConfig.build, {"seconds": float("inf")}, "seconds must be a finite number, got inf"),
        (SurrogateConfig.build, {"lr": float("nan")}, "lr must be a finite number, got nan"),
        (
            lambda **o: get_scene("flag", **o),
            {"wind_speed_mps": [1.0, float("inf")]},
            "wind_speed_mps must be a finite number, got (1.0, inf)",
        ),
        (SwarmConfig.build, {"agents": 10**20}, "agents is too large: 100000000000000000000"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_config_error_naming_it(build, option, message):
    with pytest.raises(ConfigError) as err:
        build(**option)
    assert str(err.value) == message


def test_values_of_the_right_type_pass_ints_stand_for_floats_and_unions_take_any_member():
    from dataclasses import dataclass

    @dataclass
    class Options:
        rate: float = 0.5
        count: int = 1
        name: str = "a"
        span: tuple[float, float] = (0.0, 1.0)
        every: int | None = None
        flag: bool = False

    check_types(
        Options, {"rate": 2, "count": 3, "name": "b", "span": [0, 2.5], "every": None, "flag": True, "other": object()}
    )
    check_types(Options, {"every": 4})
    for bad in ({"flag": 1}, {"count": 1.0}, {"span": [0, 1, 2]}, {"span": ["a", 1]}, {"every": "4"}, {"rate": None}):
        with pytest.raises(ConfigError):
            check_types(Options, bad)


def test_run_files_that_are_not_what_they_should_be_are_one_line_errors(tmp_path):
    from animat import runs
    from animat.config import load_toml
    from animat.errors import CheckpointError, RunDirError

    (tmp_path / "afile").write_text("x")
    with pytest.raises(RunDirError, match="is an existing file"):
        runs.new_run_dir("fly", "train", tmp_path / "afile")
    with pytest.raises(ConfigError, match="is a directory"):
        load_toml(tmp_path)
    with pytest.raises(CheckpointError, match="holds no config.json"):
        runs.read_run_config(tmp_path)
    for text in ("{not json", "[1, 2]"):
        (tmp_path / "config.json").write_text(text)
        with pytest.raises(CheckpointError, match="config.json' is corrupt"):
            runs.read_run_config(tmp_path)


def test_npz_files_that_cannot_be_read_are_one_line_errors_and_never_unpickled(tmp_path):
    import numpy as np

    from animat import runs
    from animat.errors import CheckpointError

    runs.atomic_save_npz(tmp_path / "good.npz", x=np.arange(3.0))
    assert list(runs.read_npz(tmp_path / "good.npz", keys=["x"])["x"]) == [0.0, 1.0, 2.0]
    data = (tmp_path / "good.npz").read_bytes()
    np.save(tmp_path / "one.npy", np.zeros(2))
    np.savez(tmp_path / "objects.npz", o=np.array([{"a": 1}], dtype=object))
    for path, blob, message in [
        (tmp_path / "missing.npz", None, "No such file"),
        (tmp_path / "good.npz", data[: len(data) // 2], "zip"),
        (tmp_path / "one.npy", None, "not an .npz archive"),
        (tmp_path / "objects.npz", None, "allow_pickle"),
    ]:
        with pytest.raises(CheckpointError, match=message) as err:
            runs.read_npz(path, data=blob, what="test file")
        assert str(err.value).startswith(f"cannot read test file {str(path)!r}") and "\n" not in str(err.value)
    import zipfile

    with zipfile.ZipFile(tmp_path / "member.npz", "w") as zf:
        zf.writestr("X.npy", b"not an npy header")  # numpy hands such a member back as raw bytes
    with pytest.raises(CheckpointError, match="member 'X' is not an array"):
        runs.read_npz(tmp_path / "member.npz", keys=["X"])
    with pytest.raises(ConfigError, match="lacks the array\\(s\\) y"):
        runs.read_npz(tmp_path / "good.npz", keys=["x", "y"], error=ConfigError)


def test_resuming_another_systems_run_says_so(tmp_path):
    from animat import runs
    from animat.errors import CheckpointError

    runs.atomic_write_json(
        tmp_path / "config.json", {"clip": "demo", "timesteps": 100, "generations": 3}
    )  # an imitate run's
    with pytest.raises(
        CheckpointError, match=r"not a fly training config \(it sets clip, timesteps\); is it another system's run"
    ):
        runs.start_or_resume("fly", FlyConfig, resume=tmp_path, config=None, out=None, options={}, may_change={})
