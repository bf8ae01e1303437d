"""Experiment files: TOML read with one-line errors for a missing or malformed file."""

from __future__ import annotations

import tomllib
from pathlib import Path

from animat.errors import ConfigError


def load_toml(path: str | Path) -> dict:
    """The table in TOML file ``path``; ConfigError if it is missing or not valid TOML."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} not found")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from None
