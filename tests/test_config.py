"""Shared config checks: a value of the wrong type is a one-line ConfigError in every system's builder."""

import pytest

from animat.config import check_types
from animat.errors import ConfigError
from animat.fly.train import TrainConfig as FlyConfig
from animat.surrogate.scenes import get_scene
from animat.surrogate.train_config import TrainConfig as SurrogateConfig
from animat.swarm.run import SwarmConfig


@pytest.mark.parametrize("build, option, message", [
    (SurrogateConfig.build, {"lr": "1e-4"}, "lr must be a number, got '1e-4'"),
    (SurrogateConfig.build, {"window": 32.5}, "window must be an integer, got 32.5"),
    (SurrogateConfig.build, {"epochs": True}, "epochs must be an integer, got True"),
    (FlyConfig.build, {"generations": "abc"}, "generations must be an integer, got 'abc'"),
    (SwarmConfig.build, {"steps": [1, 2]}, "steps must be an integer, got [1, 2]"),
    (lambda **o: get_scene("flag", **o), {"wind_speed_mps": [1.0]}, "wind_speed_mps must be a list of 2 (a number, a number), got (1.0,)"),
])
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

    check_types(Options, {"rate": 2, "count": 3, "name": "b", "span": [0, 2.5], "every": None, "flag": True, "other": object()})
    check_types(Options, {"every": 4})
    for bad in ({"flag": 1}, {"count": 1.0}, {"span": [0, 1, 2]}, {"span": ["a", 1]}, {"every": "4"}, {"rate": None}):
        with pytest.raises(ConfigError):
            check_types(Options, bad)
