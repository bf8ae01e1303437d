"""Every command line of README.md and docs/usage.md runs as written (issue 52).

A command line is a line of a fenced code block that starts with ``animat ``; its comment starts with its
measured wall time on 2 cores (``# 12 s``, ``# 3 min``, ``# 2.5 h``), or says ``# until Ctrl-C`` for a server.
Each document's commands run in its own temporary folder, in the document's order (a later one may read what
an earlier one wrote), with ``configs/`` linked to the checkout's, so they run as a user runs them from the
checkout and write only into the temporary folder. By the documented time:

* up to :data:`FAST_S` (and every earlier command whose ``--out`` it reads too): run to the end, in-process
  (``animat.cli.main``), in the default suite;
* up to :data:`RECIPE_S`: the same, marked slow;
* longer (the full recipes) and servers: marked slow; started as a process that must still be running,
  without an error, after :data:`STARTS_S` (or print its address), then interrupted.

``make`` lines are not run here: ``make run``'s command must be one of docs/usage.md's command lines (checked
below), and ``make setup`` / ``make test`` are what CI runs (.ci/run).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

import animat
from animat.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/usage.md")
FAST_S = 10.0
RECIPE_S = 10 * 60.0
STARTS_S = 60.0

TIME = re.compile(r"#\s+(?:(\d+(?:\.\d+)?)\s*(s|min|h)\b|(until Ctrl-C))")
UNIT_S = {"s": 1.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class DocCommand:
    """One command line of a document: ``argv`` after ``animat``, its documented wall time (s; None: a server)."""

    doc: str
    line: int
    argv: tuple[str, ...]
    seconds: float | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}:{' '.join(self.argv)[:60]}"


def doc_commands(doc: str) -> list[DocCommand]:
    """The command lines of ``doc`` (a path below the checkout), in order; a line without a wall time is an error."""
    found, fenced = [], False
    for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("animat "):
            time_ = TIME.search(line)
            if time_ is None:
                raise ValueError(f"{doc}:{number}: a command line's comment must start with its wall time: {line}")
            amount, unit, server = time_.groups()
            seconds = None if server else float(amount) * UNIT_S[unit]
            argv = tuple(shlex.split(line[: time_.start()]))[1:]
            found.append(DocCommand(doc, number, argv, seconds))
    return found


def needed_seconds(commands: list[DocCommand]) -> list[float]:
    """Per command of one document: its wall time, or the longest of the earlier commands whose ``--out`` it
    reads (a command that reads a slow one's run is slow too); a server's: infinite."""
    made: dict[str, float] = {}
    needed = []
    for command in commands:
        own = math.inf if command.seconds is None else command.seconds
        needed.append(max([own, *(made[a] for a in command.argv if a in made)]))
        for flag in ("--out", "-o"):
            if flag in command.argv[:-1]:
                made[command.argv[command.argv.index(flag) + 1]] = needed[-1]
    return needed


COMMANDS = [(c, s) for doc in DOCS for c, s in zip(doc_commands(doc), needed_seconds(doc_commands(doc)))]


def _param(command: DocCommand, seconds: float):
    marks = []
    if seconds > FAST_S:
        marks.append(pytest.mark.slow)
    if any(a.startswith("shared:") for a in command.argv):
        marks.append(pytest.mark.deepmimic)
    return pytest.param(command, id=command.id, marks=marks)


def unknown_names(argv: tuple[str, ...]) -> set[str]:
    """The verbs and long options in ``argv`` that the CLI does not have."""
    command, missing = typer.main.get_command(app), set()
    for token in argv:
        if hasattr(command, "commands") and not token.startswith("-"):  # a group (typer bundles its own click)
            if token not in command.commands:
                return missing | {token}
            command = command.commands[token]
        elif token.startswith("--") and token != "--help":
            name = token.split("=")[0]
            if not any(name in p.opts or name in p.secondary_opts for p in command.params):
                missing.add(name)
    return missing


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """One working folder per document, with ``configs`` linked to the checkout's."""
    made = {}
    for doc in DOCS:
        made[doc] = tmp_path_factory.mktemp(doc.replace("/", "_").replace(".", "_"))
        (made[doc] / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    return made


def _starts(command: DocCommand, folder: Path) -> None:
    """Start ``command`` as a process; it must run :data:`STARTS_S` without an error (a server: print its address)."""
    env = {**os.environ, "PYTHONPATH": str(Path(animat.__file__).parents[1])}
    log = folder / f"line{command.line}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "animat.cli", *command.argv],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + STARTS_S
            while proc.poll() is None and time.monotonic() < deadline:
                if command.seconds is None and "http://" in log.read_text():
                    break
                time.sleep(1)
        finally:
            still_running = proc.poll() is None
            if still_running:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    text = log.read_text()
    assert still_running or proc.returncode == 0, f"exit {proc.returncode}: {text[-2000:]}"
    assert "error:" not in text and "Traceback" not in text, text[-2000:]
    if command.seconds is None:
        assert "http://" in text, text[-2000:]


def test_the_documents_have_command_lines_and_each_states_its_wall_time():
    # doc_commands raises for a command line without a wall time
    for doc in DOCS:
        commands = doc_commands(doc)
        assert len(commands) >= (8 if doc == "README.md" else 30), doc
        assert all(c.argv and not c.argv[0].startswith("#") for c in commands)
    assert any(c.seconds is None for c, _ in COMMANDS) and any(c.seconds and c.seconds > RECIPE_S for c, _ in COMMANDS)


def test_make_run_is_a_documented_command():
    """``make run``'s command is one of docs/usage.md's command lines, so it is run (started) here."""
    recipe = re.search(r"^run:.*\n\t\$\(VENV\)/bin/animat (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    assert tuple(shlex.split(recipe.group(1))) in {c.argv for c in doc_commands("docs/usage.md")}


@pytest.mark.parametrize("command", [_param(c, s) for c, s in COMMANDS])
def test_command_line_runs_as_written(command, folders, monkeypatch, animat_cli):
    missing = unknown_names(command.argv)
    assert not missing, f"{command.id}: the CLI has no {', '.join(sorted(missing))}"
    folder = folders[command.doc]
    if command.seconds is None or command.seconds > RECIPE_S:
        _starts(command, folder)
        return
    monkeypatch.chdir(folder)
    code, out, err = animat_cli(*command.argv)
    assert code == 0, f"exit {code}: {err[-2000:]}"
    if command.argv[0] == "--json":
        assert json.loads(out)["results"]
