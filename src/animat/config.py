"""Experiment files: TOML read with one-line errors for a missing or malformed file."""

from __future__ import annotations

import math
import tomllib
import types
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from animat.errors import ConfigError


def load_toml(path: str | Path) -> dict:
    """The table in TOML file ``path``; ConfigError if it is missing or not valid TOML."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {str(path)!r} is a directory; give a TOML file")
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
    check_types(cls, values)
    return values


def is_int(value: Any) -> bool:
    """An integer (Python or NumPy), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """A finite number (Python or NumPy, not a bool); an integer counts if it fits in 64 bits."""
    if is_int(value):
        return abs(int(value)) < 2**63
    return isinstance(value, (float, np.floating)) and math.isfinite(value)


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as TOML, JSON or the CLI give it) fits type annotation ``hint``: an int for
    ``int`` (not a bool), an int or float for ``float``, a list or tuple for ``tuple``/``list`` (and
    each item), any member of a union; annotations this does not know are accepted."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint in (list, tuple) or origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
        return not args or all(_fits(v, args[0]) for v in value)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    return True


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # None is a default, not something a file can write
        return " or ".join(_describe(a) for a in args if a is not type(None))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a table"}
    if hint in names:
        return names[hint]
    if hint in (list, tuple) or origin in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return f"a list of {len(args)} ({', '.join(_describe(a) for a in args)})"
        return f"a list, each item {_describe(args[0])}" if args else "a list"
    return str(hint)


def check_types(cls, values: dict[str, Any]) -> None:
    """ConfigError naming the first of ``values`` whose type does not fit its field's annotation in
    dataclass ``cls`` (keys that are not fields are left to the caller), or that is a NaN or infinite
    number, or an integer beyond 64 bits (also as a list's item): no setting takes those."""
    hints = typing.get_type_hints(cls)
    for name, value in values.items():
        if name in hints and not _fits(value, hints[name]):
            raise ConfigError(f"{name} must be {_describe(hints[name])}, got {value!r}")
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if is_int(item) and not is_finite_number(item):
                raise ConfigError(f"{name} is too large: {value!r}")
            if isinstance(item, float) and not is_finite_number(item):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
