"""Declared options: one rule per setting, the same verdict and message from every front door."""

from dataclasses import dataclass

import pytest

from animat.config import check_options, cli_help, option, read_options, require
from animat.errors import ConfigError
from animat.evolve.population import Population
from animat.fly.options import TrainConfig as FlyConfig

BAD_GA = {"elite_frac": 1.5, "pool_frac": 0, "mutation_rate": -1}


def _toml(path, values: dict):
    path.write_text("".join(f"{k} = {v!r}\n" for k, v in values.items()))
    return path


def _api_error(values: dict) -> str:
    pop = Population(8, [3, 2], seed=0)
    with pytest.raises(ConfigError) as err:
        pop.run(lambda genomes: [0.0] * len(genomes), 1, **values)
    assert pop.generation == 0  # refused before any generation ran
    return str(err.value)


@pytest.mark.parametrize(
    "values",
    [
        BAD_GA,
        {"elite_frac": 1},
        {"elite_frac": 1.5},
        {"pool_frac": 0},
        {"mutation_rate": -1},
        {"mutation": "cauchy"},
        {"delta_fitness": 0},
        {"save_every": 0},
    ],
)
def test_a_bad_ga_value_gets_the_same_one_line_error_from_the_cli_a_toml_file_and_the_library(
    values, tmp_path, animat_cli, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    bad = _toml(tmp_path / "bad.toml", values)
    api = _api_error(values)
    with pytest.raises(ConfigError) as from_file:
        FlyConfig.build(bad)
    code, out, err = animat_cli("fly", "train", "--config", str(bad), "--out", str(tmp_path / "run"))
    assert code == 2 and err.strip().splitlines() == [f"error: {api}"]
    assert str(from_file.value) == api and "\n" not in api
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()  # nothing written


def test_the_first_bad_ga_value_is_named_with_its_rule():
    assert (
        _api_error(BAD_GA) == "mutation_rate must be in [0, 1], got -1"
    )  # declaration order: mutation_rate before pool_frac, elite_frac
    assert _api_error({"elite_frac": 1}) == "elite_frac must be in [0, 1), got 1"
    assert _api_error({"pool_frac": 0}) == "pool_frac must be in (0, 1], got 0"


def test_values_the_declarations_accept_pass_every_front_door(tmp_path):
    good = {"elite_frac": 0.0, "pool_frac": 1.0, "mutation_rate": 1, "crossover_prob": 0}
    cfg = FlyConfig.build(_toml(tmp_path / "good.toml", good), generations=2)
    assert (cfg.elite_frac, cfg.pool_frac, cfg.mutation_rate, cfg.crossover_prob, cfg.generations) == (
        0.0,
        1.0,
        1,
        0,
        2,
    )
    res = Population(8, [3, 2], seed=0).run(lambda genomes: [0.0] * len(genomes), 1, **good)
    assert res.generation == 1


@dataclass
class Options:
    rate: float = option(0.5, "Rate of things", ge=0, lt=1)
    count: int = option(3, "How many", gt=0)
    mode: str = option("a", "a | b", choices=("a", "b"))
    sizes: list[int] = option(help="Sizes", factory=lambda: [2, 4], ge=1)
    note: str | None = option(None, "A note")


def test_rules_in_words_and_help_with_its_default():
    check_options(Options, {"rate": 0, "count": 1, "mode": "b", "sizes": [1], "note": None})
    for bad, message in [
        ({"rate": 1}, "rate must be in [0, 1), got 1"),
        ({"count": 0}, "count must be > 0, got 0"),
        ({"mode": "c"}, "unknown mode 'c'; mode must be one of ['a', 'b']"),
        ({"sizes": [3, 0]}, "sizes must be >= 1, got [3, 0]"),
        ({"count": 1.5}, "count must be an integer, got 1.5"),
    ]:
        with pytest.raises(ConfigError) as err:
            check_options(Options, bad)
        assert str(err.value) == message
    assert cli_help(Options, "rate") == "Rate of things. \\[default: 0.5]"
    assert cli_help(Options, "sizes") == "Sizes. \\[default: 2,4]"
    assert cli_help(Options, "note") == "A note." and cli_help(Options, "mode", "Mode") == "Mode. \\[default: a]"
    assert require("steps", 3, ge=1) == 3 and require("x", None, gt=0) is None
    with pytest.raises(ConfigError, match=r"^steps must be an integer >= 1, got 2.5$"):
        require("steps", 2.5, ge=1, integer=True)
    with pytest.raises(ConfigError, match=r"^dt must be > 0, got nan$"):
        require("dt", float("nan"), gt=0)


def test_an_unknown_key_close_to_a_known_one_gets_a_did_you_mean(tmp_path):
    with pytest.raises(ConfigError, match=r"; did you mean 'rat' -> 'rate', 'sizse' -> 'sizes'\?$") as err:
        read_options(Options, _toml(tmp_path / "c.toml", {"rat": 1, "sizse": [1], "colour": 2}), {})
    assert "\n" not in str(err.value) and "'colour' ->" not in str(err.value)  # no word near 'colour'


def test_a_misspelt_config_key_is_one_line_with_the_right_name(tmp_path, animat_cli):
    (tmp_path / "c.toml").write_text("populaton = 6\n")
    code, _, err = animat_cli("fly", "train", "--config", str(tmp_path / "c.toml"), "--out", str(tmp_path / "run"))
    assert code == 2 and "did you mean 'populaton' -> 'population'?" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_a_toml_file_with_an_unknown_key_names_it(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"unknown training option\(s\) \['colour'\] in .*; expected some of \['count', 'mode', 'note', 'rate', "
        r"'sizes'\]",
    ):
        read_options(Options, _toml(tmp_path / "c.toml", {"colour": 1}), {})
    assert read_options(Options, _toml(tmp_path / "c.toml", {"rate": 0.25}), {"count": 2, "mode": None}) == {
        "rate": 0.25,
        "count": 2,
    }
