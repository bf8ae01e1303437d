"""Experiment files: TOML read with one-line errors for a missing or malformed file."""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

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


def merge_options(cls, file: str | Path | None, overrides: dict[str, Any], what: str = "training option") -> dict[str, Any]:
    """Values for dataclass ``cls``: its TOML ``file`` (if any) overlaid by the ``overrides`` that are
    not None. ConfigError naming any key that is not a field of ``cls``."""
    values: dict[str, Any] = {}
    if file is not None:
        values.update(load_toml(file))
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown {what}(s) {unknown} in {file or 'options'}; expected some of {sorted(known)}")
    return values
