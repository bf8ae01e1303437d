"""Fixtures shared by every system's tests."""

from __future__ import annotations

import sys

import pytest

from animat import cli


@pytest.fixture
def animat_cli(monkeypatch, capsys):
    """Run ``animat ARGS`` in-process: ``animat_cli(*args) -> (exit code, stdout, stderr)``."""

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["animat", *args])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
