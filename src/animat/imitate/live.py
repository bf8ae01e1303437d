"""The character played live (``animat play imitate SOURCE``): a trained imitation policy
(:mod:`animat.imitate.policy`) stepped at its 30 Hz control rate by the play server (:mod:`animat.play`).

A policy trained with a task goal (``goal = true``: a heading and speed in its observation,
:mod:`animat.imitate.goal`) would take those as commands. ``pretrained:walk`` has none: it imitates its clip's
pose and position (its observation holds the clip's target root, and it stops where it strays 1 m from it), so its
speed cannot be commanded. What can be steered is its heading: a turn key turns the reference clip itself by
:data:`TURN` from now on (:class:`animat.character.playback.Playback`, blended over 0.2 s, the gait's phase kept),
and the policy follows the turned reference.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from animat import pretrained, runs
from animat.character.playback import Playback, Segment
from animat.errors import ConfigError
from animat.imitate.policy import load_run

KEYS = {"ArrowLeft": "left", "ArrowRight": "right"}
TURN = math.radians(30.0)  # rad, each turn key
BLEND_S = 0.2  # s, the reference's blend into a turn (turns closer together are dropped)


class TurnedClip:
    """The clip ``clip`` (looping) played from t = 0 and turned live (:meth:`turn`): what the environment imitates
    (``sample(t)``, ``cycle_seconds``, ``root_advance``, ``loop`` as a clip's). Each turn starts a segment at the clip
    time that keeps the gait's phase (t modulo the cycle)."""

    def __init__(self, clip):
        self.base, self.cycle_seconds, self.root_advance = clip, clip.cycle_seconds, clip.root_advance
        self.loop = "wrap"  # played on for as long as the page plays (animat.imitate.skills.clip_ended)
        self.turns: list[tuple[float, float]] = [(0.0, 0.0)]  # (start s, turn rad)
        self._build()

    def _build(self) -> None:

        ends = [start for start, _ in self.turns[1:]] + [math.inf]
        self.playback = Playback(
            [
                Segment(self.base, min(end - start, 1e9), turn=turn, offset=start % self.cycle_seconds)
                for (start, turn), end in zip(self.turns, ends)
            ],
            blend=BLEND_S,
        )

    def turn(self, t: float, angle: float) -> None:
        if t - self.turns[-1][0] < BLEND_S:
            raise ConfigError(f"a turn within {BLEND_S} s of the last one")
        self.turns.append((float(t), float(angle)))
        self._build()

    def sample(self, t: float):
        return self.playback.sample(t)


class CharacterLive:
    """``source``: an imitation run directory or ``pretrained:NAME``; the episode starts at the clip's start."""

    system = "imitate"
    rate = 1.0
    keys = KEYS
    targets = False
    arena = ((-10.0, -10.0, 0.0), (10.0, 10.0, 2.0))

    def __init__(self, source: str, seed: int = 0):
        from animat.imitate.env import CONTROL_HZ

        self.source, self.seed = source, int(seed)
        self.cfg, self.policy = load_run(pretrained.resolve(source))
        if self.cfg.goal:
            raise ConfigError(f"{source!r} was trained with a task goal; animat play steers goal-free policies only")
        self.dt = 1.0 / CONTROL_HZ
        self.reset()

    def reset(self) -> None:
        from animat.imitate.env import make_env

        self.env = make_env(self.cfg, rsi=False, max_seconds=1e9)
        if self.env.observation_space.shape[0] != self.policy.obs_dim:
            raise ConfigError(f"the policy of {self.source!r} does not fit its environment")
        self.env.clip = self.clip = TurnedClip(self.env.clip)
        self.obs, _ = self.env.reset(seed=self.seed)
        self.name, self.fell, self.ticks = "walk", False, 0
        self.records: dict[str, list] = {"time": [], "r_imitation": [], "root_pos": [], "qpos": [], "ghost_qpos": []}

    def step(self) -> None:
        if self.fell:  # a fallen character stays down until reset
            return
        self.obs, _, terminated, _, info = self.env.step(self.policy.act(self.obs))
        self.ticks += 1
        self.fell = bool(terminated)
        q = self.env.data.qpos
        for key, value in zip(self.records, (self.env.t, info["r_imitation"], q[:3], q, self.env.ref_data.qpos)):
            self.records[key].append(np.array(value, float))

    def command(self, name: str) -> None:
        if name not in KEYS.values():
            raise ConfigError(f"unknown command {name!r}; the walk turns: {', '.join(KEYS.values())}")
        self.clip.turn(self.env.t, TURN if name == "left" else -TURN)
        self.name = f"walk, turned {name}"

    def target(self, x: float, y: float) -> None:
        raise ConfigError("the character takes turns, not targets")

    def _poses(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Centres ``(1, G, 3)`` m and quaternions ``(1, G, 4)`` of the character's geoms and of its reference's."""
        from animat.imitate.report import GHOST_OFFSET
        from animat.viz.mujoco_bodies import body_geoms, geom_poses

        ids = body_geoms(self.env.model)
        out = {}
        for name, qpos, offset in (
            ("character", self.env.data.qpos, 0.0),
            ("reference (ghost)", self.env.ref_data.qpos, GHOST_OFFSET),
        ):
            pos, quat = geom_poses(self.env.model, np.asarray(qpos, float)[None], ids)
            out[name] = (pos + np.asarray(offset, np.float32), quat)
        return out

    def scene(self):
        from animat.imitate.report import GHOST_OFFSET, GHOST_OPACITY, GHOST_RGB
        from animat.viz.mujoco_bodies import add_model
        from animat.viz.scene import Scene

        model, q = self.env.model, self.env.data.qpos
        scene = Scene(np.zeros(1), follow=np.asarray(q[:3], float)[None], focus=2.5, ground=0.0)
        add_model(scene, "character", model, np.asarray(q, float)[None])
        ghost = np.asarray(self.env.ref_data.qpos, float)[None]
        add_model(scene, "reference (ghost)", model, ghost, offset=GHOST_OFFSET, tint=GHOST_RGB, opacity=GHOST_OPACITY)
        return scene

    def frame(self) -> dict[str, dict[str, Any]]:
        return {name: {"pos": pos.ravel(), "quat": quat.ravel()} for name, (pos, quat) in self._poses().items()}

    def status(self) -> dict[str, Any]:
        return {
            "t": self.env.t,
            "position": np.asarray(self.env.data.qpos[:3], float),
            "velocity": np.asarray(self.env.data.qvel[:3], float),
            "command": self.name + (" (fell: reset)" if self.fell else ""),
            "network": f"imitation policy {self.source}",
        }

    def steps(self) -> int:
        return self.ticks

    def _commands_record(self) -> dict[str, Any]:
        """The summary's record of what was commanded: the turns (degrees)."""
        return {"turns_deg": [round(math.degrees(a), 1) for _, a in self.clip.turns[1:]]}

    def write(self, run_dir: Path, log: dict[str, Any]) -> dict[str, Any]:
        """``imitate play``'s run directory of the walk since the start (or the last reset): trajectory (per step
        and per drawn frame: every step), summary (``live``: true), report.html; no config.json, as imitate play."""
        from animat.imitate.report import write_imitate_report

        arrays = {k: np.asarray(v, np.float32 if k != "time" else float) for k, v in self.records.items()}
        runs.atomic_save_npz(run_dir / "trajectory.npz", qpos_time=arrays["time"], **arrays)
        summary = {
            "source": self.source,
            "seed": self.seed,
            "live": True,
            "episode_steps": self.ticks,
            "episode_seconds": round(self.ticks * self.dt, 4),
            "fell": self.fell,
            "mean_r_imitation": float(arrays["r_imitation"].mean()),
            **self._commands_record(),
        }
        runs.atomic_write_json(run_dir / "summary.json", summary)
        write_imitate_report(run_dir, model=self.env.model)
        return summary


class SkillLive(CharacterLive):
    """A skill-selector policy (``multi_clip = "selector"``) live: a skill's number or first letter switches to it,
    the arrows turn its heading by :data:`TURN`, as ``animat imitate steer --interactive`` does
    (:class:`animat.imitate.steer.SkillPilot`: the new clip at the old one's phase, blended in; a fall is counted and
    the character set back on its feet)."""

    def reset(self) -> None:
        from animat.imitate.steer import SkillPilot

        skills = self.cfg.skills
        self.pilot = SkillPilot(self.cfg, self.policy, 0)
        self.env = self.pilot.env
        letters = {s[0].lower(): s for s in skills}
        self.keys = {**KEYS, **{str(i + 1): s for i, s in enumerate(skills)}}
        self.keys.update(letters if len(letters) == len(skills) else {})
        self.name, self.fell, self.ticks, self.falls, self.switches = skills[0], False, 0, 0, []
        self.records = {"time": [], "r_imitation": [], "root_pos": [], "qpos": [], "ghost_qpos": []}

    def step(self) -> None:
        tick = self.pilot.tick()
        self.ticks += 1
        self.falls += int(tick["fell"])
        for key, name in zip(self.records, ("t", "r_imitation", "position", "qpos", "ghost_qpos")):
            self.records[key].append(np.array(tick[name], float))

    def command(self, name: str) -> None:
        skills = self.cfg.skills
        if name in skills:
            self.pilot.command(skills.index(name))
            self.name = name
        elif name in KEYS.values():
            self.pilot.command(self.env.skill, turn=TURN if name == "left" else -TURN)
        else:
            raise ConfigError(f"unknown command {name!r}; this policy's skills: {', '.join(skills)}; left, right")
        self.switches.append((round(self.pilot.time, 4), name))

    def status(self) -> dict[str, Any]:
        return {**super().status(), "command": f"{self.name} (falls: {self.falls})"}

    def _commands_record(self) -> dict[str, Any]:
        return {"commands": [f"{name}@{t:g}" for t, name in self.switches], "falls": self.falls}


def open(source: str, agents: int | None = None, seed: int = 0) -> CharacterLive:
    """``animat play imitate SOURCE``'s session (``agents`` is the flock's option: refused here): a skill selector's
    (:class:`SkillLive`) or a single clip's (:class:`CharacterLive`)."""
    if agents is not None:
        raise ConfigError("-n/--agents is the flock's option; the character is one")
    cfg, _ = load_run(pretrained.resolve(source))
    return (SkillLive if cfg.clips and cfg.multi_clip == "selector" else CharacterLive)(source, seed)
