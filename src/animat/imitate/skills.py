"""Several clips for one policy (DeepMimic, Peng et al. 2018, sec. 7: multi-clip reward and skill selector).

Two ways, ``multi_clip`` of :class:`~animat.imitate.options.TrainConfig`:

``selector``  one policy, a skill command input: each episode draws its clip uniformly (per reset, from the
              episode's generator, before the reference-state start time) and starts on it; the observation ends
              with the one-hot of that skill (K numbers, in the order of ``clips``). A user switches the command at
              run time (``animat imitate steer``, :mod:`animat.imitate.steer`).
``max``       the multi-clip reward: r = max_j r_I(clip j), each clip j sampled at the same phase as the first,
              at time ``t · T_j / T_0`` (T the clips' lengths), so a walk and a turn of other lengths are
              compared cycle for cycle. Everything else (reference-state start, the phase and target terms of the
              observation, residual actions) comes from the first clip; the pose termination measures the key
              bodies' error from the nearest clip (the smallest over the clips), so following any clip keeps the
              episode alive. No one-hot.

Episode ends of a one-shot clip (``Loop: none``: kick, punch, get-ups): an episode is truncated when the clip
time reaches the clip's end plus ``hold`` seconds (``hold_seconds`` of the training config; whichever comes first
of that and ``max_seconds``). With ``hold`` 0 (the default) an episode lasts at most the clip's length and nothing
after its last frame is imitated; with ``hold`` > 0 the reference past the end is the clip's last pose held still
(:meth:`~animat.character.clip.Clip.sample`), as DeepMimic's kinematic character holds a non-looping motion's last
frame within its 20 s episodes, so the policy also learns to stay balanced after the skill. The observation's phase
of a one-shot clip is ``t / T`` clamped to 1 (:func:`clip_phase`; a looping clip's wraps). (``steer`` holds a
one-shot skill's last pose until the next command.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from animat.character.clip import Clip, MotionState
from animat.errors import ConfigError

MODES = ("selector", "max")
CLIP_PREFIX = "humanoid3d_"  # DeepMimic's file names: humanoid3d_<skill>.txt


def skill_name(source: str) -> str:
    """A skill's name from its clip's source (a path or ``shared:NAME``): the file's stem without DeepMimic's
    ``humanoid3d_`` prefix (``shared:humanoid3d_walk.txt`` -> ``walk``)."""
    return Path(str(source).split(":", 1)[-1]).stem.removeprefix(CLIP_PREFIX)


def skill_names(sources: Sequence[str]) -> list[str]:
    """The names of ``sources`` (:func:`skill_name`); ConfigError when two clips share one."""
    names = [skill_name(s) for s in sources]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"clips: each skill once; {', '.join(repr(n) for n in twice)} is given more than once")
    return names


def one_hot(skill: int, k: int) -> np.ndarray:
    """(k,) float32 with 1 at ``skill``."""
    out = np.zeros(k, np.float32)
    out[int(skill)] = 1.0
    return out


def clip_ended(clip: Clip, t, hold: float = 0.0) -> np.ndarray | bool:
    """Whether clip time ``t`` (s, scalar or (N,)) has reached the end of a one-shot clip plus ``hold`` s of its
    last pose (always False for a looping one); see the module docstring."""
    if clip.loop == "wrap":
        return np.zeros(np.shape(t), bool) if np.ndim(t) else False
    ended = np.asarray(t) >= clip.cycle_seconds + hold - 1e-9
    return ended if np.ndim(t) else bool(ended)


def clip_phase(t, cycle, one_shot):
    """The observation's phase in [0, 1] at clip time ``t`` s of a clip ``cycle`` s long (scalars or (N,) arrays
    alike): ``t / cycle`` clamped to 1 where ``one_shot`` (its last pose held past the end), wrapped otherwise."""
    return np.where(one_shot, np.minimum(t / cycle, 1.0), (t % cycle) / cycle)


def phase_times(clips: Sequence[Clip], t) -> list:
    """The times (s; scalar or (N,)) of each clip at the phase clip 0 has at ``t``: ``t · T_j / T_0``."""
    t0 = clips[0].cycle_seconds
    return [t if j == 0 else t * (c.cycle_seconds / t0) for j, c in enumerate(clips)]


def sample_skills(clips: Sequence[Clip], skill: np.ndarray, t: np.ndarray) -> MotionState:
    """The reference states (a batched MotionState, leading axis N) of characters on clips ``clips[skill (N,)]``
    at times ``t (N,)`` s: each character's numbers are those of its clip's :meth:`~Clip.sample_batch`."""
    if len(clips) == 1:
        return clips[0].sample_batch(t)
    t = np.asarray(t, dtype=np.float64)
    parts = {int(k): clips[int(k)].sample_batch(t[skill == k]) for k in np.unique(skill)}
    fields = MotionState.__dataclass_fields__
    out = {}
    for name in fields:
        first = getattr(next(iter(parts.values())), name)
        arr = np.empty((t.shape[0], *first.shape[1:]))
        for k, state in parts.items():
            arr[skill == k] = getattr(state, name)
        out[name] = arr
    return MotionState(**out)
