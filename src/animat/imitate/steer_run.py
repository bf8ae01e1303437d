"""``animat imitate steer``'s run: the request checked, the script (or the keys) played by a
:class:`~animat.imitate.steer.SkillPilot`, the run directory written (``trajectory.npz``, ``summary.json``,
``plots/steer.png``, ``report.html``; the command line adds ``config.json``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from animat import runs
from animat.character.model import CONTROL_HZ
from animat.console import console
from animat.errors import ConfigError
from animat.imitate.steer import SkillCommand, SkillPilot, parse_commands, segment_scores
from animat.terminal import TerminalKeys, decode_keys

TICK_KEYS = ("t", "position", "command", "r_imitation", "forward_speed", "fell", "qpos", "ghost_qpos", "segment")


def selector_policy(source: str):
    """``(cfg, policy, run_dir)`` of a skill-selector policy (a run directory or ``pretrained:NAME``) with its clips
    (the humanoid3d skeleton's) read; a one-line error for any other policy."""
    from animat.imitate.evaluate import load_policy_run

    cfg, policy, run_dir = load_policy_run(source)
    if not cfg.clips or cfg.multi_clip != "selector":
        kind = "a max-reward multi-clip" if cfg.clips else "a single-clip"
        raise ConfigError(
            f"{str(source)!r} is {kind} policy ({cfg.clip_label}): it takes no skill command; give a skill-selector "
            "policy (trained with clips and multi_clip = 'selector')"
        )
    cfg.load_clips()
    return cfg, policy, run_dir


def steer_request(source: str, commands: str | None, interactive: bool = False):
    """``(cfg, policy, run_dir, commands)`` of a request, every input checked in one line before anything runs:
    the policy (:func:`selector_policy`) and the script (``None`` with ``interactive``)."""
    if interactive == (commands is not None):
        raise ConfigError("give either --commands 'skill:seconds,...' (e.g. 'walk:4,jog:3') or --interactive")
    cfg, policy, run_dir = selector_policy(source)
    script = parse_commands(commands, cfg.skills) if commands is not None else None
    if interactive:
        TerminalKeys.check()
    return cfg, policy, run_dir, script


def stack_ticks(records: list[dict]) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in records]) for k in TICK_KEYS}


def play_script(cfg, policy, commands: list[SkillCommand]) -> dict[str, np.ndarray]:
    """The ticks of ``commands`` played in order (each for its seconds, rounded to whole 30 Hz steps), stacked."""
    pilot, records = SkillPilot(cfg, policy, commands[0].skill), []
    for i, c in enumerate(commands):
        if i:
            pilot.command(c.skill)
        for _ in range(max(1, int(round(c.seconds * CONTROL_HZ)))):
            records.append({**pilot.tick(), "segment": i})
    return stack_ticks(records)


def write_steer_run(out: Path, flight: dict[str, np.ndarray], cfg, run_dir: Path, script: str) -> dict:
    """Write a steered ``flight`` (:func:`stack_ticks`) of the policy in ``run_dir`` (``cfg``: its TrainConfig)
    into ``out``; returns the summary."""
    from animat.imitate.env import make_env
    from animat.imitate.report import steer_plot, write_imitate_report

    out, skills = Path(out), cfg.skills
    segments = segment_scores(flight, skills, cfg.load_clips())
    runs.atomic_save_npz(out / "trajectory.npz", **flight, qpos_time=flight["t"])
    steer_plot(flight, skills, out / "plots" / "steer.png", f"{Path(run_dir).name} steered: {script}")
    scored = [s["r_imitation"] for s in segments if np.isfinite(s["r_imitation"])]
    summary = {
        "source": str(run_dir),
        "script": script,
        "skills": skills,
        "seconds": round(len(flight["t"]) / CONTROL_HZ, 6),
        "steps": int(len(flight["t"])),
        "mean_segment_r_imitation": float(np.mean(scored)) if scored else float("nan"),
        "falls": int(flight["fell"].sum()),
        "segments": segments,
    }
    runs.atomic_write_json(out / "summary.json", summary)
    write_imitate_report(out, model=make_env(cfg, rsi=False).model)
    return summary


def script_text(flight: dict[str, np.ndarray], skills: list[str]) -> str:
    """The script a flight's segments make (``skill:seconds,...``), e.g. of one steered from the keyboard."""
    parts = []
    for i in np.unique(flight["segment"]):
        inside = flight["segment"] == i
        parts.append(f"{skills[int(flight['command'][inside][0])]}:{inside.sum() / CONTROL_HZ:g}")
    return ",".join(parts)


def skill_keys(skills: list[str]) -> dict[bytes, str]:
    """The keys of ``--interactive``: a skill's number (1, 2, ...) and its first letter (either case, where no
    other skill shares it) -> ``skill:<index>``; the left and right arrows -> ``left``/``right`` (turn by
    :data:`~animat.imitate.steer.TURN`); q -> ``quit``."""
    keys = {b"q": "quit", b"Q": "quit"}
    for seq, side in ((b"\x1b[D", "left"), (b"\x1bOD", "left"), (b"\x1b[C", "right"), (b"\x1bOC", "right")):
        keys[seq] = side
    initials = [s[:1].lower() for s in skills]
    for k in range(len(skills)):
        if k < 9:
            keys[str(k + 1).encode()] = f"skill:{k}"
        if initials.count(initials[k]) == 1 and initials[k] not in "q" and initials[k].isalpha():
            keys[initials[k].encode()] = keys[initials[k].upper().encode()] = f"skill:{k}"
    return keys


def live_ticks(pilot: SkillPilot, keys, keymap: dict[bytes, str], *, realtime=True, clock=None, status=None) -> list:
    """Tick ``pilot`` under the keys read from ``keys`` (:class:`~animat.terminal.KeySource`) until q or Ctrl-C;
    with ``realtime`` one tick per ``pilot.dt`` of ``clock`` (default ``time.monotonic``), else one read a tick.
    Each key taken starts a segment; ``status(record)`` after every tick. Returns the records."""
    import time

    from animat.imitate.steer import TURN

    clock = clock or time.monotonic
    records, pending, start, segment = [], b"", clock(), 0
    try:
        while True:
            wait = start + len(records) * pilot.dt - clock() if realtime else 0.0
            actions, pending = decode_keys(pending + keys.read(max(0.0, wait)), keymap)
            if "quit" in actions:
                break
            for action in actions:
                turn = {"left": TURN, "right": -TURN}.get(action, 0.0)
                skill = int(action.split(":")[1]) if action.startswith("skill:") else pilot.env.skill
                pilot.command(skill, turn)
                segment += bool(records)
            records.append({**pilot.tick(), "segment": segment})
            if status is not None:
                status(records[-1])
    except KeyboardInterrupt:
        pass
    return records


def play_keys(cfg, policy, *, fd: int | None = None, out=None) -> dict[str, np.ndarray]:
    """Steer from the terminal ``fd`` (default stdin) in real time, starting on the first skill: the key help,
    then a status line refreshed in place on ``out`` (default the console's file); the ticks stacked."""

    out, skills = console.file if out is None else out, cfg.skills
    keymap = skill_keys(skills)
    names = ", ".join(f"{k + 1}/{n[:1].upper()}: {n}" for k, n in enumerate(skills))
    pilot = SkillPilot(cfg, policy, 0)

    def show(r: dict) -> None:
        x, y, _ = r["position"]
        line = f"t {r['t']:6.2f} s  {skills[r['command']]:>10}  r_I {r['r_imitation']:.2f}  ({x:+.1f}, {y:+.1f}) m"
        out.write("\r" + line + f"  {r['forward_speed']:+.2f} m/s" + ("  FELL" if r["fell"] else "") + "\x1b[K")
        out.flush()

    with TerminalKeys(fd) as keys:
        out.write(f"{names}   left/right arrows: turn   q: quit\n")
        try:
            records = live_ticks(pilot, keys, keymap, status=show)
        finally:
            out.write("\n")
            out.flush()
    if not records:
        raise ConfigError("the run ended before its first control tick; nothing to write")
    return stack_ticks(records)
