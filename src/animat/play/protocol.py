"""The messages between the play page and the server: JSON objects, one per WebSocket text message.

From the page (:func:`parse_message`; anything else is dropped and counted, never an error):
``{"type": "command", "name": str, "id": int}`` (a key: the command it stands for), ``{"type": "target",
"x": number, "y": number, "id": int}`` (a click on the ground), ``{"type": "pause", "paused": bool}``,
``{"type": "reset"}``, ``{"type": "quit"}``, ``{"type": "stats", "rtf": number, "lag_ms": number}`` (the page's
own measures: the real-time factor over its last second, the delay from a key to the state that answered it).

To the page: ``hello`` (the scene, its keys, dt and rate), ``state`` (time, position, velocity, the active command
and network, the moving objects' arrays, the id of the last command taken, messages dropped) and ``end`` (where
the run directory is).
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_BYTES = 4096  # a page message is far shorter; the WebSocket refuses longer ones
NAME_CHARS = 40

_FIELDS: dict[str, dict[str, type | tuple]] = {
    "command": {"name": str, "id": int},
    "target": {"x": (int, float), "y": (int, float), "id": int},
    "pause": {"paused": bool},
    "reset": {},
    "quit": {},
    "stats": {"rtf": (int, float), "lag_ms": (int, float, type(None))},
}


def _valid(value: Any, kind) -> bool:
    if isinstance(value, bool) and kind is not bool:  # JSON true is not a number or an id
        return False
    if not isinstance(value, kind):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return 0 < len(value) <= NAME_CHARS
    return True


def parse_message(text: str | bytes) -> dict[str, Any] | None:
    """The page's message ``text`` as a dict holding exactly its type's fields (see the module), or None for
    anything else: not text, not JSON, not an object, an unknown type, a missing, extra or ill-typed field, a
    non-finite number, an empty or over-long name."""
    if not isinstance(text, str) or len(text) > MAX_BYTES:
        return None
    try:
        msg = json.loads(text)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("type") not in _FIELDS:
        return None
    fields = _FIELDS[msg["type"]]
    if set(msg) != {"type", *fields}:
        return None
    if not all(_valid(msg[k], kind) for k, kind in fields.items()):
        return None
    return msg


def rounded(values, digits: int = 5) -> list[float]:
    """Numbers for a state message: floats to ``digits`` significant digits (a page draws no finer), NaN as None."""
    return [float(f"{v:.{digits}g}") if math.isfinite(v) else None for v in map(float, values)]
