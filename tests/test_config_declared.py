"""Options declared once per verb (animat.config.declared_options): a typer command's parameters built from the
declaration, and the command handed the dict of the options the user gave."""

from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from animat.config import declared_options, option
from animat.errors import ConfigError


@dataclass
class Toy:
    count: int = option(3, "How many", ge=1)
    rate: float | None = option(None, "Rate of things", gt=0)
    mode: str = option("a", "a | b", choices=("a", "b"))
    sizes: list[int] = option(help="Sizes", factory=lambda: [2, 4], ge=1)
    weights: list[float] | None = option(None, "Weights", shown="1,1")
    loud: bool = option(False, "Speak up")
    wide: bool = option(False, "Use both wings", shown="narrow")
    hidden_from_cli: int = option(7, "Not on the command line")


def _app(seen: list) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @declared_options(
        Toy,
        "count",
        "rate",
        "mode",
        "sizes",
        "weights",
        "loud",
        "wide",
        flags={"count": ("--count", "-n"), "wide": ("--wide/--narrow",)},
        helps={"rate": "Rate"},
        examples={"sizes": "1,2,3"},
    )
    def toy(
        name: str = typer.Argument(..., help="A name."),
        options: dict = None,
        out: Path | None = typer.Option(None, "--out", "-o", help="Where."),
    ) -> None:
        """A toy verb."""
        seen.append((name, options, out))

    @app.command("other")  # a second verb keeps the app a group: `toy` is named on the command line
    def other() -> None:
        pass

    return app


def _run(*args: str):
    seen: list = []
    result = CliRunner().invoke(_app(seen), ["toy", *args])
    return result, seen


def test_the_command_gets_only_the_options_given_in_declaration_order_with_its_own_parameters():
    result, seen = _run("x")
    assert result.exit_code == 0, result.output
    assert seen == [("x", {}, None)]
    result, seen = _run("y", "--wide", "--sizes", "5, 6", "-n", "2", "--rate", "0.5", "--no-loud", "-o", "d")
    assert result.exit_code == 0, result.output
    assert seen == [("y", {"count": 2, "rate": 0.5, "sizes": [5, 6], "loud": False, "wide": True}, Path("d"))]
    assert list(seen[0][1]) == ["count", "rate", "sizes", "loud", "wide"]
    result, seen = _run("z", "--narrow", "--weights", "0.5 2", "--mode", "b")
    assert seen == [("z", {"mode": "b", "weights": [0.5, 2.0], "wide": False}, None)]
    assert isinstance(seen[0][1]["weights"][1], float)


def test_a_bad_list_is_the_one_line_error_with_the_flag_and_its_example():
    result, seen = _run("x", "--sizes", "1,two")
    assert isinstance(result.exception, ConfigError) and not seen
    assert str(result.exception) == "--sizes must be integers like '1,2,3', got '1,two'"
    result, _ = _run("x", "--weights", "a")
    assert str(result.exception) == "--weights must be numbers like '1,1', got 'a'"  # the shown default


def test_a_value_typer_cannot_read_is_its_usage_error():
    result, seen = _run("x", "--count", "many")
    assert result.exit_code == 2 and not seen and "--count" in result.output
    result, _ = _run("x", "--hidden-from-cli", "3")
    assert result.exit_code == 2 and "No such option" in result.output


def test_the_parameters_show_their_flags_types_and_declared_help_where_options_stands():
    command = typer.main.get_command(_app([])).commands["toy"]
    params = {p.name: p for p in command.params}
    assert list(params) == ["name", "count", "rate", "mode", "sizes", "weights", "loud", "wide", "out"]
    assert params["count"].opts == ["--count", "-n"] and params["mode"].opts == ["--mode"]
    assert (params["loud"].opts, params["loud"].secondary_opts) == (["--loud"], ["--no-loud"])
    assert (params["wide"].opts, params["wide"].secondary_opts) == (["--wide"], ["--narrow"])
    assert all(params[n].default is None and not params[n].required for n in list(params)[1:])
    assert params["count"].help == "How many. \\[default: 3]"
    assert params["rate"].help == "Rate." and params["sizes"].help == "Sizes. \\[default: 2,4]"
    assert params["wide"].help == "Use both wings. \\[default: narrow]" and params["loud"].help == "Speak up."
    assert params["out"].help == "Where." and command.help == "A toy verb."
    result = CliRunner().invoke(_app([]), ["toy", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for text in ("--count", "-n", "--no-loud", "--narrow", "How many. [default: 3]", "Where."):
        assert text in result.output


def test_an_option_name_the_class_does_not_declare_fails_at_once():
    with pytest.raises(KeyError):
        declared_options(Toy, "colour")
