"""The strategy contract of the engine, and how a strategy's state goes into a checkpoint.

A strategy is an object with pure methods over an immutable state (a frozen dataclass)::

    state           = strategy.init(key)            # generation 0, from a seed/PRNG key
    genomes, state  = strategy.ask(state)           # genomes (P, ...) to evaluate next
    state           = strategy.tell(state, fitness) # fitness (P,) float64, maximised; NaN = crashed

and class attributes ``name`` (stored in checkpoints), ``State`` (the state's dataclass) and
``upgrade(arrays, meta, where)`` (reads the checkpoints written before the engine's loop existed, see
:mod:`animat.evolve.loop`). Same state in, same state out: the loop resumes bit-exactly from a
checkpoint of the state. A state's fields are arrays (stored in the checkpoint's npz) or
JSON-serialisable values (stored in its manifest), so any strategy checkpoints the same way
(an evosax strategy's state, arrays and scalars, wraps as one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Protocol

import numpy as np

from animat.errors import CheckpointError


class Strategy(Protocol):
    name: str
    State: type

    def init(self, key: Any) -> Any: ...

    def ask(self, state: Any) -> tuple[np.ndarray, Any]: ...

    def tell(self, state: Any, fitness: np.ndarray) -> Any: ...

    @staticmethod
    def upgrade(
        arrays: dict[str, np.ndarray], meta: dict[str, Any], where: str
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]: ...


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (hasattr(value, "shape") and hasattr(value, "dtype"))


def pack_state(state: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(arrays, values)`` of a state dataclass: its array fields, and the others (JSON-serialisable)."""
    arrays, values = {}, {}
    for f in fields(state):
        v = getattr(state, f.name)
        if is_array(v):
            arrays[f.name] = np.asarray(v)
        else:
            values[f.name] = v
    return arrays, values


def unpack_state(cls: type, arrays: Mapping[str, np.ndarray], values: Mapping[str, Any], where: str) -> Any:
    """The ``cls`` state stored by :func:`pack_state`; CheckpointError naming ``where`` if a field is missing."""
    try:
        return cls(**{f.name: arrays[f.name] if f.name in arrays else values[f.name] for f in fields(cls)})
    except KeyError as exc:
        raise CheckpointError(f"checkpoint {where!r} lacks the strategy state's field {exc}") from None
