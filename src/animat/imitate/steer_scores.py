"""A skill selector's rates on random command scripts (issue 47, acceptance 2; ``animat imitate score-steering``).

Script ``i`` of ``scripts`` drawn from ``seed`` is :func:`random_script` of ``np.random.default_rng(seed + i)``: 20 s of
commands of 2-5 s each (whole 0.1 s), each a skill other than the one before, in any order. Each script is played
from the first command's clip at time 0 (:func:`animat.imitate.steer_run.play_script`) and scored per segment
(:func:`animat.imitate.steer.segment_scores`: after a 1 s transition, the mean r_I against the commanded clip and the
mean forward speed). A segment passes when its r_I is at least ``MIN_IMITATION`` (0.6) and its forward speed is
within ``SPEED_TOLERANCE`` (25 %) of its clip's own (a one-shot clip, which goes nowhere, has no speed to keep); a
script passes "no fall" when the character never fell in it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from animat.errors import ConfigError
from animat.imitate.steer import parse_commands, segment_scores
from animat.imitate.steer_run import play_script

MIN_IMITATION = 0.6
SPEED_TOLERANCE = 0.25


def random_script(
    rng: np.random.Generator, skills: list[str], total: float = 20.0, shortest: float = 2.0, longest: float = 5.0
) -> str:
    """``skill:seconds,...`` of ``total`` s: commands of ``shortest``-``longest`` s (whole 0.1 s), each a skill other
    than the one before (any of ``skills`` first)."""
    tenths, lo, hi = int(round(total * 10)), int(round(shortest * 10)), int(round(longest * 10))
    if len(skills) < 2 or not 0 < lo <= hi or tenths < lo:
        raise ConfigError(f"no script of {total:g} s with commands of {shortest:g}-{longest:g} s among {skills}")
    while True:  # draws until the last command, cut to the total, is at least the shortest
        lengths = [int(rng.integers(lo, hi + 1))]
        while sum(lengths) < tenths:
            lengths.append(int(rng.integers(lo, hi + 1)))
        lengths[-1] -= sum(lengths) - tenths
        if lengths[-1] >= lo:
            break
    names = [str(rng.choice(skills))]
    for _ in lengths[1:]:
        names.append(str(rng.choice([s for s in skills if s != names[-1]])))
    return ",".join(f"{n}:{t / 10:g}" for n, t in zip(names, lengths))


def script_segments(cfg, policy, script: str) -> list[dict]:
    """The segments' scores (:func:`animat.imitate.steer.segment_scores`) of ``script`` played by ``policy``, each
    with ``passed`` (r_I and speed within their bounds) and the script's text."""
    clips = cfg.load_clips()
    rows = segment_scores(play_script(cfg, policy, parse_commands(script, cfg.skills)), cfg.skills, clips)
    for row in rows:
        clip_speed = row["clip_speed"]  # 0 for a one-shot clip: no speed to keep
        speed_ok = not clip_speed or abs(row["forward_speed"] - clip_speed) <= SPEED_TOLERANCE * clip_speed
        row.update(script=script, imitation_ok=row["r_imitation"] >= MIN_IMITATION, speed_ok=bool(speed_ok))
        row["passed"] = bool(row["imitation_ok"] and speed_ok)
    return rows


def pass_rates(
    cfg, policy, scripts: int = 30, seed: int = 0, on_script: Callable[[int], None] | None = None
) -> tuple[dict, list[dict]]:
    """``(summary, segments)`` of ``scripts`` random scripts from ``seed`` (module docstring): the fraction of scripts
    without a fall, of segments that pass, of segments whose r_I or whose speed is within its bound, and per skill
    the mean r_I and speed beside its clip's. ``on_script(i)`` after script ``i``."""
    segments, falls = [], []
    for i in range(int(scripts)):
        rows = script_segments(cfg, policy, random_script(np.random.default_rng(seed + i), cfg.skills))
        segments += [{**r, "script_index": i} for r in rows]
        falls.append(sum(r["falls"] for r in rows))
        if on_script is not None:
            on_script(i)
    rate = lambda key: float(np.mean([r[key] for r in segments]))  # noqa: E731
    summary = {
        "scripts": int(scripts),
        "seed": int(seed),
        "segments": len(segments),
        "scripts_without_fall_rate": float(np.mean([f == 0 for f in falls])),
        "segment_pass_rate": rate("passed"),
        "segment_imitation_ok_rate": rate("imitation_ok"),
        "segment_speed_ok_rate": rate("speed_ok"),
        "falls": int(sum(falls)),
        "min_imitation": MIN_IMITATION,
        "speed_tolerance": SPEED_TOLERANCE,
    }
    for skill in cfg.skills:
        mine = [r for r in segments if r["skill"] == skill]
        if mine:
            summary[f"{skill}_r_imitation_mean"] = float(np.mean([r["r_imitation"] for r in mine]))
            summary[f"{skill}_forward_speed_mean"] = float(np.mean([r["forward_speed"] for r in mine]))
            summary[f"{skill}_clip_speed"] = float(mine[0]["clip_speed"])
    return summary, segments
