"""A steering set's pass rates on random command scripts: issue 21's measure, the one ``pretrained:paper``'s
PROVENANCE.md records (``animat fly score-steering``).

Script ``i`` of ``scripts`` drawn from ``seed`` is ``random_script(np.random.default_rng(seed + i))``
(:func:`animat.fly.steer.commands.random_script`: every command once, 20 s in all), flown from rest (start
seed 0) at the set's speed and scored by :func:`animat.fly.steer.score.steer_score`. A segment passes by that
score's rule; a whole script passes when all its scored segments do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from animat.fly.steer.commands import parse_script, random_script
from animat.fly.steer.pilot import fly_script, make_pilot
from animat.fly.steer.score import steer_score


def scored_flight(steering, script: str, controller: str, lookahead: float | None = None) -> dict:
    """``script`` (``name:seconds,...``) flown by ``steering``'s ``controller`` from rest (seed 0, the set's speed;
    ``lookahead`` s, None: the shipped one) and its steering score (:func:`animat.fly.steer.score.steer_score`)."""

    f = fly_script(steering, parse_script(script), controller=controller, lookahead=lookahead)
    pilot = make_pilot(steering, controller=controller)
    return steer_score(
        f["t"],
        f["position"],
        f["velocity"],
        f["command"],
        f["command_direction"],
        f["crashed"],
        speed=pilot.speed,
        body_length=pilot.body_length,
        start=np.asarray(pilot.state.pos, float).reshape(3),
    )


def pass_rates(
    steering,
    controller: str,
    scripts: int,
    seed: int,
    lookahead: float | None = None,
    on_script: Callable[[int], None] | None = None,
) -> dict:
    """The pass rates of ``steering``'s ``controller`` on ``scripts`` random scripts from ``seed`` (module
    docstring): ``segments_passed``, ``segments_scored``, ``segment_pass_rate``, ``scripts_passed``,
    ``script_pass_rate``, and the scripts whose flight crashed or fell. ``on_script(i)`` after script ``i``."""
    scores = []
    for i in range(scripts):
        scores.append(scored_flight(steering, random_script(np.random.default_rng(seed + i)), controller, lookahead))
        if on_script is not None:
            on_script(i)
    passed, scored = sum(s["segments_ok"] for s in scores), sum(s["segments_scored"] for s in scores)
    whole = sum(s["all_ok"] for s in scores)
    return {
        "segments_passed": passed,
        "segments_scored": scored,
        "segment_pass_rate": passed / scored if scored else None,
        "scripts_passed": whole,
        "script_pass_rate": whole / scripts,
        "scripts_crashed": sum(s["crashed"] for s in scores),
        "scripts_fell": sum(s["fell"] for s in scores),
    }
