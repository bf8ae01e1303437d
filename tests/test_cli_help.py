"""Every help text of the CLI shows as written: rich markup would swallow an unescaped ``[word ...]``."""

import re

import click
import typer
from rich.text import Text

from animat.cli import app


def _helps(command: click.Command, path: str):
    yield path, command.help or ""
    for param in command.params:
        yield f"{path} {param.name}", getattr(param, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _helps(sub, f"{path} {name}")


def test_no_help_text_loses_a_bracket_to_rich_markup():
    helps = list(_helps(typer.main.get_command(app), "animat"))
    assert len(helps) > 100  # every system's verbs and options
    lost = [(where, text) for where, text in helps if Text.from_markup(text).plain != text.replace("\\[", "[")]
    assert not lost


def test_version(animat_cli):
    from animat import __version__

    code, out, _ = animat_cli("--version")
    assert code == 0 and out == f"animat {__version__}\n" and __version__.count(".") == 2


def test_every_default_shows_one_way():
    """A default in a help text reads ``[default: X]`` at its end, as typer shows the defaults it knows: not
    ``[X]``, ``(default: X)`` or ``; default: X`` (issue 52)."""
    helps = list(_helps(typer.main.get_command(app), "animat"))
    odd = []
    for where, text in helps:
        plain = Text.from_markup(text).plain
        tail = re.search(r"\[([^\]]*)\]$", plain)
        head = plain[: tail.start()] if tail and tail.group(1).startswith("default: ") else plain
        if re.search(r"\bdefault\b|\[[^\]]*\]\.?$", head):
            odd.append((where, plain))
    assert not odd
