"""Declared options: the one place where a setting's type, range, help and default live.

Each system declares its options once, as a dataclass whose fields are declared with :func:`option` (a default,
a one-line help text and the rule the value keeps: ``ge``/``gt``/``le``/``lt`` bounds or ``choices``).
From that declaration come the TOML reading (:func:`read_options`), the unknown-key check
(:func:`check_known`), the type and range checks (:func:`check_options`, one message per rule, the same
for a config file, a command line and the library's API), and the command line's help texts with
their defaults (:func:`cli_help`, :func:`cli_option`), and a command's parameters named once
(:func:`declared_options`). Library functions that take such a value as
an argument check it with :func:`require`, the same rule and message.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import tomllib
import types
import typing
from collections.abc import Iterable
from dataclasses import MISSING, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from animat.errors import ConfigError


def load_toml(path: str | Path) -> dict:
    """The table in TOML file ``path``; ConfigError if it is missing or not valid TOML."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"config file {str(path)!r} {'is a directory; give a TOML file' if path.is_dir() else 'not found'}"
        )
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from None


def option(
    default: Any = MISSING,
    help: str = "",
    *,
    factory: Any = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Iterable | None = None,
    shown: str | None = None,
    label: str | None = None,
) -> Any:
    """A declared option: a dataclass field with its default (or ``factory`` for a mutable one), its one-line
    ``help`` (what the command line shows, with the default appended: ``shown`` where the default is not
    itself what a user writes) and the rule its value keeps: bounds ``ge``/``gt``/``le``/``lt`` or ``choices``.
    ``None`` always passes the rule (an option declared ``float | None`` means "not set"). ``label``: how
    an error names the option where that is not the class's way (a flag spelt otherwise, ``--threads``)."""
    meta = {
        "help": help,
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "choices": tuple(choices) if choices is not None else None,
        "shown": shown,
        "label": label,
    }
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def same_as(cls, name: str) -> Any:
    """Option ``name`` of dataclass ``cls`` declared again for another dataclass: the same default, help and rule."""
    f = next(f for f in fields(cls) if f.name == name)
    if f.default_factory is not MISSING:
        return field(default_factory=f.default_factory, metadata=f.metadata)
    return field(default=f.default, metadata=f.metadata)


def declared(cls, name: str) -> dict[str, Any]:
    """The declaration of option ``name`` of dataclass ``cls``: help, bounds, choices, shown default, default."""
    f = next(f for f in fields(cls) if f.name == name)
    default = f.default if f.default_factory is MISSING else f.default_factory()
    return {**f.metadata, "default": default}


def _num(x: float) -> str:
    return str(x) if is_int(x) else f"{float(x):g}"


def rule_text(ge=None, gt=None, le=None, lt=None) -> str:
    """The bounds in words: ``> 0``, ``>= 1``, ``in [0, 1]``, ``in (0, 1]``, ..."""
    low, high = (
        (("[", ge) if ge is not None else ("(", gt) if gt is not None else (None, None)),
        (("]", le) if le is not None else (")", lt) if lt is not None else (None, None)),
    )
    if low[0] and high[0]:
        return f"in {low[0]}{_num(low[1])}, {_num(high[1])}{high[0]}"
    if low[0]:
        return f"{'>=' if low[0] == '[' else '>'} {_num(low[1])}"
    return f"{'<=' if high[0] == ']' else '<'} {_num(high[1])}"


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def require(
    name: str, value: Any, *, ge=None, gt=None, le=None, lt=None, choices: Iterable | None = None, integer: bool = False
) -> Any:
    """``value`` when it keeps its rule (see :func:`option`; ``integer``: also a whole number; a list or tuple:
    each item), else the one-line ConfigError naming ``name``, the rule and the value: ``'steps must be >= 1, got 0'``,
    ``"unknown backend 'dask'; backend must be one of ['local', 'ray']"``. ``None`` passes."""
    if value is None:
        return value
    if choices is not None:
        if value not in tuple(choices):
            raise ConfigError(f"unknown {name} {value!r}; {name} must be one of {list(choices)}")
        return value
    bounds = {"ge": ge, "gt": gt, "le": le, "lt": lt}
    if all(b is None for b in bounds.values()) and not integer:
        return value
    keeps = lambda v: (
        is_finite_number(v)
        and (not integer or is_int(v))
        and (ge is None or v >= ge)
        and (gt is None or v > gt)
        and (le is None or v <= le)
        and (lt is None or v < lt)
    )
    if not all(map(keeps, value if isinstance(value, (list, tuple)) else [value])):  # a list's rule is each item's
        words = " ".join(
            w
            for w in (
                "an integer" if integer else "",
                rule_text(**bounds) if any(b is not None for b in bounds.values()) else "",
            )
            if w
        )
        raise ConfigError(f"{name} must be {words}, got {_show(value)}")
    return value


def check_known(known: Iterable[str], values: Iterable[str], what: str, where: Any = None) -> None:
    """ConfigError naming the keys of ``values`` that are not in ``known``:
    ``unknown {what}(s) [...] in {where}; expected some of [...]``, then ``; did you mean 'key' -> 'known'?`` for
    each unknown key close to a known one (difflib's ratio ≥ 0.75: a typo, not another word)."""
    known = set(known)
    unknown = sorted(set(values) - known)
    if unknown:
        close = {k: difflib.get_close_matches(k, sorted(known), n=1, cutoff=0.75) for k in unknown}
        hints = [f"{k!r} -> {c[0]!r}" for k, c in close.items() if c]
        raise ConfigError(
            f"unknown {what}(s) {unknown}{f' in {where}' if where is not None else ''}; expected some of "
            f"{sorted(known)}" + (f"; did you mean {', '.join(hints)}?" if hints else "")
        )


def check_options(cls, values: dict[str, Any]) -> None:
    """``values`` (some or all fields of dataclass ``cls``) checked against the declarations: types
    (:func:`check_types`), then each declared rule in field order (:func:`require`). Messages name the
    option as ``cls.OPTION_NAME`` formats it (``{name}`` or ``{flag}``, the ``--flag`` spelling; default
    ``{name}``) and, where ``cls.OPTION_TYPED`` is true, say "an integer" for an integer option."""
    check_types(cls, values)
    label, typed = getattr(cls, "OPTION_NAME", "{name}"), getattr(cls, "OPTION_TYPED", False)
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        if f.name in values and f.metadata:
            meta = f.metadata
            name = meta["label"] or label.format(name=f.name, flag="--" + f.name.replace("_", "-"))
            require(
                name,
                values[f.name],
                integer=typed and hints.get(f.name) is int,
                **{k: meta[k] for k in ("ge", "gt", "le", "lt", "choices")},
            )


def check_instance(obj: Any) -> Any:
    """:func:`check_options` over every field of dataclass instance ``obj``; returns ``obj``."""
    check_options(type(obj), {f.name: getattr(obj, f.name) for f in fields(obj)})
    return obj


#: what every new run's config.json says of itself besides its options: the system and verb that wrote it
#: (:func:`animat.runs.config_record`; a preset's runs name their preset among their options)
RUN_IDENTITY = ("system", "verb")


def run_record_keys(cls) -> tuple[str, ...]:
    """The keys a run's config.json may hold besides the fields of options class ``cls``: :data:`RUN_IDENTITY` and
    ``cls.RUN_RECORD`` (if any: a ``--from`` source, a start pool's digest, ...)."""
    return (*RUN_IDENTITY, *getattr(cls, "RUN_RECORD", ()))


def read_options(
    cls, file: str | Path | None, overrides: dict[str, Any], what: str = "training option", table: str | None = None
) -> dict[str, Any]:
    """Values for dataclass ``cls``: its TOML ``file`` (if any; its table ``[table]`` where it has one)
    overlaid by the ``overrides`` that are not None, every key a field of ``cls`` (:func:`check_known`),
    every value checked (:func:`check_options`). Overrides named in :data:`RUN_IDENTITY` or ``cls.RUN_RECORD`` (if
    any: what a run's ``config.json`` records besides its options, such as a ``--from`` source) are not options and
    are left out."""
    values: dict[str, Any] = {}
    if file is not None:
        loaded = load_toml(file)
        values.update(loaded.get(table, loaded) if table else loaded)
    record = run_record_keys(cls)
    values.update({k: v for k, v in overrides.items() if v is not None and k not in record})
    check_known((f.name for f in fields(cls)), values, what, file or "options")
    check_options(cls, values)
    return values


def parse_list(text: str | None, flag: str, example: str, kind: type = int) -> list | None:
    """A command line's list ``'15,20,20,3'`` (commas or spaces) as numbers of ``kind``; None for None;
    ConfigError naming ``flag`` and an ``example`` for anything else."""
    if text is None:
        return None
    try:
        return [kind(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise ConfigError(
            f"{flag} must be {'integers' if kind is int else 'numbers'} like {example!r}, got {text!r}"
        ) from None


def _default_text(meta: dict[str, Any]) -> str | None:
    if meta.get("shown") is not None:
        return meta["shown"]
    d = meta["default"]
    if d is None or d == "" or isinstance(d, (dict, bool)):
        return None
    if isinstance(d, (list, tuple)):
        return ",".join(_show(x) if isinstance(x, str) else _num(x) for x in d) if d else None
    return d if isinstance(d, str) else _num(d)


def cli_help(cls, name: str, help: str | None = None) -> str:
    """Option ``name`` of ``cls`` as a command line's help text: its declared help (or ``help``) with its
    default appended as ``\\[default: X]``, as typer shows the defaults it knows (rich markup: the bracket escaped)."""
    meta = declared(cls, name)
    text, shown = help if help is not None else meta["help"], _default_text(meta)
    return f"{text}. \\[default: {shown}]" if shown is not None else f"{text}."


def cli_option(cls, name: str, *flags: str, help: str | None = None) -> Any:
    """A typer option for ``name`` of ``cls``: default None (the declaration's default applies later, after the
    config file), help from :func:`cli_help`."""
    import typer

    return typer.Option(None, *flags, help=cli_help(cls, name, help))


def _list_item(hint: Any) -> type | None:
    """The item type of a list option (``list[int]``, ``list[float] | None``): the command line writes it as one
    text, ``'15,20,20,3'``; None for any other option."""
    for h in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if typing.get_origin(h) in (list, tuple) and typing.get_args(h)[:1] in ((int,), (float,)):
            return typing.get_args(h)[0]
    return None


def _cli_parameter(cls, name: str, hint: Any, flags: tuple[str, ...], help: str | None) -> inspect.Parameter:
    """Option ``name`` of ``cls`` (annotated ``hint``) as a keyword parameter of a typer command: ``T | None``
    (a list option: ``str | None``), default None (:func:`cli_option`)."""
    kind = str if _list_item(hint) else next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=cli_option(cls, name, *flags, help=help), annotation=kind | None
    )


def declared_options(
    cls,
    *names: str,
    flags: dict[str, tuple[str, ...]] | None = None,
    helps: dict[str, str] | None = None,
    examples: dict[str, str] | None = None,
):
    """A decorator that makes options ``names`` of dataclass ``cls`` parameters of a typer command, in that order,
    where the command's parameter ``options`` stands; the command receives ``options``: the dict of those the user
    gave (name -> value, in that order), ready for ``read_options``/``cls.build``. Each option shows its declaration's
    help with its default (:func:`cli_help`; ``helps[name]`` in place of the declared help); its flags are
    ``flags[name]`` (e.g. ``("--population", "-p")``, ``("--asymmetric/--symmetric",)``), else typer's ``--name``
    (``--name/--no-name`` for a bool). A list option is one text on the command line, read by :func:`parse_list`
    with ``examples[name]`` (else its shown default) as the example of its error message."""
    flags, helps, examples = flags or {}, helps or {}, examples or {}
    hints = typing.get_type_hints(cls)
    declared_params = [_cli_parameter(cls, n, hints[n], flags.get(n, ()), helps.get(n)) for n in names]
    lists = {
        n: (flags.get(n, ("--" + n.replace("_", "-"),))[0], examples.get(n) or _default_text(declared(cls, n)), kind)
        for n in names
        if (kind := _list_item(hints[n]))
    }

    def decorate(command):
        own_hints = typing.get_type_hints(command)
        params = []
        for p in inspect.signature(command).parameters.values():  # typer passes every parameter by its name
            own = p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=own_hints.get(p.name, p.annotation))
            params += declared_params if p.name == "options" else [own]

        @functools.wraps(command)
        def verb(**given: Any) -> Any:
            values = {n: given.pop(n) for n in names}
            options = {n: parse_list(v, *lists[n]) if n in lists else v for n, v in values.items() if v is not None}
            return command(options=options, **given)

        verb.__signature__ = inspect.Signature(params)
        verb.__annotations__ = {p.name: p.annotation for p in params}
        return verb

    return decorate


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
        return is_int(value)
    if hint is float:
        return is_int(value) or isinstance(value, (float, np.floating))
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


def no_animation_option() -> Any:
    """The ``--no-animation`` flag, declared once for every verb that renders an animation: the verb writes no
    GIF or MP4, as with ``--anim-seconds 0`` (:func:`animation_seconds`)."""
    import typer

    return typer.Option(False, "--no-animation", help="Write no animation (GIF, MP4): the same as --anim-seconds 0.")


def animation_seconds(no_animation: bool, anim_seconds: float | None) -> float | None:
    """The animation's length a verb asks for: 0 (none) with ``--no-animation``, else ``anim_seconds`` (None: the
    option's own default)."""
    return 0.0 if no_animation else anim_seconds
