"""Strict JSON (RFC 8259) for what animat writes for people and other programs: every ``summary.json``,
``config.json``, ``--json`` document and report page.

Python's :func:`json.dumps` writes NaN and infinities as the bare words ``NaN`` and ``Infinity``, which
are not JSON (a browser's ``JSON.parse`` and most other readers refuse the whole file). Here a float that
is not finite (a NaN mean of nothing, an infinite ratio) is written as ``null``, and the encoder is run with
``allow_nan=False``, so no such word can slip through. NumPy scalars and arrays become numbers and lists,
paths strings, tuples and sets lists.

Checkpoint manifests are the exception (:func:`animat.runs.atomic_write_json` with ``exact=True``): a
training state that holds a NaN loss or a ``-inf`` best must resume as itself, bit for bit.
"""

from __future__ import annotations

import json
import math
from pathlib import PurePath
from typing import Any

import numpy as np


def plain(obj: Any, default=None) -> Any:
    """``obj`` with JSON's types only: non-finite floats as None, NumPy values as Python ones, paths as
    strings, tuples and sets as lists (dicts and lists followed to any depth). ``default(x)`` converts
    anything else (``str`` for a document meant to be read); without it such a value raises TypeError."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    if isinstance(obj, dict):
        return {k: plain(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v, default) for v in obj]
    if isinstance(obj, (np.generic, np.ndarray)):
        return plain(obj.tolist(), default)
    if isinstance(obj, PurePath):
        return str(obj)
    if default is not None:
        return plain(default(obj))
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj: Any, default=None, **kwargs: Any) -> str:
    """``obj`` as strict JSON text (:func:`plain`, then :func:`json.dumps` with ``allow_nan=False``);
    ``kwargs`` go to :func:`json.dumps` (``indent``, ``sort_keys``, ``separators``)."""
    return json.dumps(plain(obj, default), allow_nan=False, **kwargs)
