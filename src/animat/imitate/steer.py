"""``animat imitate steer``: a skill-selector policy (``multi_clip = "selector"``, :mod:`animat.imitate.skills`)
switched between its skills at run time by a command script (``"walk:4,jog:3"``) or by keys.

The character starts at time 0 of the first command's clip. A command switches the policy's one-hot and its
reference (:class:`SkillReference`): the new clip starts at the phase the old one had (a looping clip after a
looping one: clip time ``phase · T_new``; a one-shot clip from its start; after a one-shot clip a looping one
starts at phase 0), placed under the character (its root's horizontal position and heading at the switch, turned
by ``turn`` rad for a heading command), and blended in from the old reference, continued, over
:data:`BLEND_S` (:func:`~animat.character.playback.blend_weight`). Re-placing the reference under the character
at each command keeps the drift between the two from carrying over from one skill to the next. A one-shot skill
holds its last pose until the next command. The run ignores the episode cap and the pose termination; a fall
(the training's early termination) is counted and the character is set back on its feet at the commanded clip's
pose where it fell (the reference re-placed, no blend).

Per-segment scores (one segment per command): ``r_imitation`` (mean r_I per step against the commanded clip,
the blended reference of :data:`TRANSITION_S` after a switch left out), ``forward_speed`` (m/s: the mean
horizontal root velocity along the character's heading, same steps) beside ``clip_speed`` (m/s: the clip's own,
its root advance per cycle over the cycle's length; 0 for a one-shot clip) and ``falls``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from animat import quaternions as quat
from animat.character.clip import Clip, MotionState
from animat.character.model import CONTROL_HZ, set_pose
from animat.character.playback import Z, blend_weight, heading_angle, mix_states, place_state
from animat.errors import CheckpointError, ConfigError
from animat.scripts import parse_timed

BLEND_S = 0.5  # s, a new skill's reference blended in from the old one
TRANSITION_S = 1.0  # s after a switch left out of a segment's score
TURN = math.radians(15.0)  # rad, one heading key


@dataclass(frozen=True)
class SkillCommand:
    """Skill ``skill`` (index into the policy's skills, named ``name``) for ``seconds`` s."""

    skill: int
    name: str
    seconds: float


def parse_commands(text: str, skills: list[str]) -> list[SkillCommand]:
    """``"walk:4,jog:3"`` -> commands over the policy's ``skills`` (names). ConfigError in one line for a
    malformed item, an unknown skill, or a duration that is not a finite number of seconds > 0
    (:func:`animat.scripts.parse_timed`)."""

    def check_skill(name: str) -> None:
        if name not in skills:
            raise ConfigError(f"unknown skill {name!r}; this policy's skills are {', '.join(skills)}")

    return [
        SkillCommand(skills.index(name), name, seconds)
        for name, seconds in parse_timed(text, check_skill, "skill", "walk:4,jog:3")
    ]


@dataclass(frozen=True)
class SkillReference:
    """What :class:`~animat.imitate.env.ImitateEnv` imitates while steered (a clip's ``loop``, ``cycle_seconds``,
    ``root_advance``, ``sample(t)``): ``clip`` turned by ``yaw`` rad about +z and shifted by ``shift (3,)`` m
    (:func:`~animat.character.playback.place_state`), blended in over ``blend`` s from ``prev`` (which plays on from
    its clip time ``prev_time`` at this clip's time ``start``)."""

    clip: Clip
    yaw: float = 0.0
    shift: np.ndarray = field(default_factory=lambda: np.zeros(3))
    prev: SkillReference | None = None
    prev_time: float = 0.0
    start: float = 0.0
    blend: float = 0.0

    @property
    def loop(self) -> str:
        return self.clip.loop

    @property
    def cycle_seconds(self) -> float:
        return self.clip.cycle_seconds

    @property
    def root_advance(self) -> np.ndarray:
        return quat.rotate(quat.about_axis(Z, self.yaw), self.clip.root_advance)

    def sample(self, t: float) -> MotionState:
        state = place_state(self.clip.sample(t), self.yaw, self.shift, 1.0)
        into = float(t) - self.start
        if self.prev is None or into >= self.blend:
            return state
        return mix_states(self.prev.sample(self.prev_time + into), state, *blend_weight(into, self.blend))


def clip_speed(clip: Clip) -> float:
    """m/s: a looping clip's root advance per cycle over the cycle's length; 0 for a one-shot clip."""
    return float(np.linalg.norm(clip.root_advance)) / clip.cycle_seconds


class SkillPilot:
    """The character of a selector policy under skill commands, one 30 Hz control step per :meth:`tick`
    (``cfg``: the policy's TrainConfig; ``policy``: its SavedPolicy; ``skill``: the first command)."""

    dt = 1.0 / CONTROL_HZ

    def __init__(self, cfg, policy, skill: int):
        from animat.imitate.env import make_env

        self.env = env = make_env(cfg, rsi=False, max_seconds=math.inf, pose_termination=0.0)
        if not env.selector:
            raise ConfigError("a skill command needs a skill-selector policy (multi_clip = 'selector')")
        if env.observation_space.shape[0] != policy.obs_dim:
            raise CheckpointError(
                f"the policy takes {policy.obs_dim} observations; its skills' environment gives "
                f"{env.observation_space.shape[0]}"
            )
        self.policy, self.time, self.ghost = policy, 0.0, mujoco.MjData(env.model)
        self.obs = env.reset(seed=cfg.seed, options={"skill": skill})[0]
        env.clip = SkillReference(env.clip)

    def command(self, skill: int, turn: float = 0.0, blend: float = BLEND_S) -> None:
        """Switch to ``skill`` (index), the heading turned by ``turn`` rad; see the module docstring."""
        env, old = self.env, self.env.clip
        if env.t - old.start >= old.blend:  # its blend is over: what it blended from is no longer needed
            old = replace(old, prev=None)
        clip = env.clips[skill]
        phase = (env.t % old.cycle_seconds) / old.cycle_seconds if old.loop == "wrap" else 0.0
        start = phase * clip.cycle_seconds if clip.loop == "wrap" else 0.0
        first = clip.sample(start)
        yaw = heading_angle(env.data.qpos[3:7]) - heading_angle(first.root_quat) + turn
        shift = (env.data.qpos[:3] - quat.rotate(quat.about_axis(Z, yaw), first.root_pos)) * [1.0, 1.0, 0.0]
        env.clip = SkillReference(clip, yaw, shift, old if blend > 0 else None, env.t, start, blend)
        env.skill, env.t = int(skill), start
        self.obs = env.observation()

    def tick(self) -> dict:
        """One control step: ``t`` s, ``qpos`` and the reference's ``ghost_qpos`` (nq,), ``position (3,)`` m,
        ``command`` (skill index), ``r_imitation``, ``forward_speed`` m/s and ``fell`` (the character fell in this
        step and was set back on its feet)."""
        env = self.env
        self.obs, _, terminated, _, info = env.step(self.policy.act(self.obs))
        self.time += self.dt
        heading = quat.rotate(quat.heading(env.data.qpos[3:7]), np.array([1.0, 0.0, 0.0]))
        set_pose(env.model, self.ghost, env.clip.sample(env.t), env.layout)
        record = {
            "t": self.time,
            "qpos": env.data.qpos.copy(),
            "ghost_qpos": self.ghost.qpos.copy(),
            "position": env.data.qpos[:3].copy(),
            "command": env.skill,
            "r_imitation": float(info["r_imitation"]),
            "forward_speed": float(env.data.qvel[:2] @ heading[:2]),
            "fell": bool(terminated),
        }
        if terminated:
            self._stand_up()
        return record

    def _stand_up(self) -> None:
        """After a fall: the commanded clip's pose at the current clip time, where the character lies."""
        env = self.env
        self.command(env.skill, blend=0.0)
        set_pose(env.model, env.data, env.clip.sample(env.t), env.layout)
        mujoco.mj_forward(env.model, env.data)
        self.obs = env.observation()


def segment_scores(flight: dict[str, np.ndarray], skills: list[str], clips: list[Clip]) -> list[dict]:
    """One dict per segment (the ticks of one command, ``flight["segment"] (T,)``; see the module docstring) of
    the stacked ticks ``flight``; ``skills`` and ``clips``: the policy's, in its order."""
    rows, skip = [], int(round(TRANSITION_S * CONTROL_HZ))
    for i in np.unique(flight["segment"]):
        inside = np.nonzero(flight["segment"] == i)[0]
        scored = inside[skip:] if i else inside
        skill = int(flight["command"][inside[0]])
        mean = lambda key: float(flight[key][scored].mean()) if scored.size else math.nan  # noqa: E731
        rows.append(
            {
                "segment": int(i),
                "skill": skills[skill],
                "seconds": round(inside.size / CONTROL_HZ, 6),
                "r_imitation": mean("r_imitation"),
                "forward_speed": mean("forward_speed"),
                "clip_speed": clip_speed(clips[skill]),
                "falls": int(flight["fell"][inside].sum()),
            }
        )
    return rows
