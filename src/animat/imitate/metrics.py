"""What one PPO iteration's metrics row is made of: the losses logged (:data:`LOSS_FIELDS`) and the episodes
that ended during its rollout (:class:`RolloutEpisodes`); shared by :mod:`animat.imitate.train` and its SB3
callback :mod:`animat.imitate.recorder`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

LOSS_FIELDS = ["approx_kl", "clip_fraction", "entropy_loss", "value_loss", "policy_gradient_loss", "explained_variance"]


@dataclass
class RolloutEpisodes:
    """The episodes that ended during one PPO rollout, from the environments' ``infos``, and where the
    rollout started (``timesteps``, wall-clock ``started`` s)."""

    timesteps: int
    started: float
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    nonfinite: int = 0

    def add(self, infos: list[dict]) -> None:
        """Count one step of every environment (``VecMonitor``'s ``episode`` entries, ImitateEnv's ``nonfinite``)."""
        for info in infos:
            self.nonfinite += bool(info.get("nonfinite"))
            ep = info.get("episode")
            if ep is not None:
                self.returns.append(float(ep["r"]))
                self.lengths.append(int(ep["l"]))

    def stats(self, timesteps: int, now: float) -> dict:
        """The metrics row's episode columns, and the steps per second since the rollout started."""
        ret, ln = np.array(self.returns), np.array(self.lengths)
        return {
            "episodes": len(ret),
            "nonfinite": self.nonfinite,
            "ep_return_mean": float(ret.mean()) if len(ret) else math.nan,
            "ep_len_mean": float(ln.mean()) if len(ln) else math.nan,
            "r_i_per_step_mean": float(ret.sum() / ln.sum()) if len(ln) else math.nan,
            "ep_seconds_mean": float(ln.mean() / 30.0) if len(ln) else math.nan,
            "fps": round((timesteps - self.timesteps) / max(now - self.started, 1e-9), 1),
        }
