"""What a system provides to be played live (``animat play``): a session object, opened by the function that
the registry's ``live`` entry names (:mod:`animat.systems`), ``open(source, **options) -> LiveSession``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from animat.viz.scene import Scene


class LiveSession(Protocol):
    """One simulated body (or flock) stepped by the server, one :meth:`step` per ``dt`` s of simulated time.

    ``system``: its system's name (the run directory's); ``dt``: simulated s per step; ``rate``: simulated s per
    wall-clock s when it keeps up (1: real time; below 1: shown slowed down by ``1 / rate``); ``keys``: the page's
    key names (``KeyboardEvent.key``) -> command names; ``targets``: whether a click on the ground sets a target
    (:meth:`target`); ``arena``: ``((x, y, z), (x, y, z))`` lower and upper corners the page's ground grid covers,
    in the scene's units."""

    system: str
    dt: float
    rate: float
    keys: dict[str, str]
    targets: bool
    arena: tuple

    def scene(self) -> Scene:
        """The live view: a one-frame scene whose moving objects :meth:`frame` updates."""

    def step(self) -> None:
        """Advance by ``dt`` s."""

    def command(self, name: str) -> None:
        """Switch to command ``name`` now (a ConfigError for an unknown one)."""

    def target(self, x: float, y: float) -> None:
        """Set the target on the ground to ``(x, y)`` (scene units); a ConfigError where there is none."""

    def reset(self) -> None:
        """Start again from the start state; what was recorded before is dropped."""

    def status(self) -> dict[str, Any]:
        """``{"t": s, "position": (3,), "velocity": (3,), "command": str, "network": str}`` now (scene units), and
        whatever more the system shows (numbers or strings; the fly: ``direction``, the command's unit vector)."""

    def frame(self) -> dict[str, dict[str, list[float]]]:
        """Object name -> its moving arrays now (e.g. ``{"body": {"positions": [...]}}``), flattened, as the
        scene's one frame holds them."""

    def steps(self) -> int:
        """Steps recorded since the start (or the last reset)."""

    def write(self, run_dir: Path, log: dict[str, Any]) -> dict[str, Any]:
        """Write the run directory (trajectory, summary, plots, report.html) and return its summary; ``log``: what
        the server recorded (the commands with their times, the page's figures), kept in the config."""
