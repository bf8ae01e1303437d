"""The Stable-Baselines3 callback of :func:`animat.imitate.train.train` (a module of its own: it imports
SB3, which :mod:`animat.imitate.train` loads only when it trains)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from animat import interrupt
from animat.imitate.metrics import LOSS_FIELDS, RolloutEpisodes


class Recorder(BaseCallback):
    """One metrics.csv row per PPO iteration, from the episodes that ended during its rollout; a policy
    checkpoint when one is due, and after the update that follows it, a training state to resume from;
    learning stops after the iteration (rollout and update) during whose rollout ``max_minutes`` passed, so the
    last iteration has its metrics row. Torch runs on ``rollout_torch_threads`` while a rollout
    is collected and on ``torch_threads`` for the update. ``session``: the :class:`animat.imitate.train.Session`
    (not imported here: train imports this module)."""

    def __init__(self, session, on_iteration: Callable[[dict], Any] | None = None):
        super().__init__()
        self.session, self.on_iteration = session, on_iteration
        self.episodes = RolloutEpisodes(session.start, time.perf_counter())
        self.pending = dict(session.state.pending_losses)  # the losses of the update before a resume
        self.state_due = False
        self.out_of_time = False  # decided at a rollout's end, acted on at the next rollout's first step

    def _threads(self, n: int) -> None:
        import torch

        if n:
            torch.set_num_threads(n)

    def _on_rollout_start(self) -> None:
        cfg = self.session.cfg
        self._threads(cfg.rollout_torch_threads or cfg.torch_threads)
        if self.state_due:  # after the update that followed a checkpoint: a state to resume from
            self.session.save_state()
            self.state_due = False

    def _on_step(self) -> bool:
        interrupt.check()  # a signal whose KeyboardInterrupt was lost (animat.interrupt): stop here, state saved
        if self.out_of_time:  # the step just taken is dropped with the rollout it began: not counted
            self.model.num_timesteps -= self.training_env.num_envs
            return False
        self.episodes.add(self.locals["infos"])
        return True

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        logged = self.model.logger.name_to_value  # the previous update's losses (dumped after this)
        losses = {k: logged[f"train/{k}"] if f"train/{k}" in logged else self.pending.get(k, "") for k in LOSS_FIELDS}
        self.pending = {}
        row = self.session.record(self.episodes, losses, now)
        self.episodes = RolloutEpisodes(int(row["timesteps"]), now)
        self.state_due = self.session.checkpoint()
        if self.on_iteration is not None:
            self.on_iteration(row)
        self._threads(self.session.cfg.torch_threads)  # the update's
        self.out_of_time = self.session.out_of_time()
