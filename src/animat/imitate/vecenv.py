"""Stable-Baselines3 ``VecEnv`` over batched humanoids: :class:`BatchVecEnv` (auto-reset, SB3's infos) over
a batch, either :class:`~animat.imitate.batch.ImitateBatch` in this process (``vec_env = "batched"``)
or :class:`RayBatch`, the same batch cut into pieces held by Ray actors (``--backend ray``), which
steps the pieces in parallel and gives the same rollouts for the same seed (each character's
generator is seeded ``seed + i`` wherever it lives).

Episode ends follow SB3's ``DummyVecEnv``: ``done = terminated or truncated``,
``info["TimeLimit.truncated"]``, ``info["terminal_observation"]``, and the next observation is the
restarted character's. ``info["r_imitation"]`` is r_I before the termination zeroes the reward, and
``info["nonfinite"]`` marks a physics blow-up (as ``ImitateEnv``'s infos).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from animat.imitate.batch import ImitateBatch
from animat.parallel import RayPool, chunk_spans


class BatchVecEnv(VecEnv):
    """SB3's vectorised-environment contract over a batch (``n``, ``observation_size``, ``action_size``,
    ``reset(idx, seeds)``, ``step(actions)``, ``close()``: :class:`ImitateBatch` or :class:`RayBatch`)."""

    def __init__(self, batch):
        self.batch = batch
        obs = gym.spaces.Box(-np.inf, np.inf, shape=(batch.observation_size,), dtype=np.float32)
        act = gym.spaces.Box(-np.pi, np.pi, shape=(batch.action_size,), dtype=np.float32)
        super().__init__(batch.n, obs, act)
        self._actions: np.ndarray | None = None

    def reset(self):
        seeds = list(self._seeds)
        self._reset_seeds()
        self._reset_options()
        return self.batch.reset(None, seeds)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, reward, terminated, truncated, nonfinite, r_imitation = self.batch.step(self._actions)
        done = terminated | truncated
        infos: list[dict[str, Any]] = [
            {"r_imitation": float(r), "TimeLimit.truncated": bool(tr and not te)}
            for r, te, tr in zip(r_imitation, terminated, truncated)
        ]
        for i in np.nonzero(nonfinite)[0]:
            infos[i]["nonfinite"] = True
        ended = np.nonzero(done)[0]
        if ended.size:
            for i in ended:
                infos[i]["terminal_observation"] = obs[i]
            obs = obs.copy()
            obs[ended] = self.batch.reset(ended)[ended]
        return obs, reward.astype(np.float32), done, infos

    def close(self) -> None:
        self.batch.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * len(self._indices(indices))
        raise AttributeError(f"batched imitate environments have no attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"batched imitate environments do not set {attr_name!r}")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        raise AttributeError(f"batched imitate environments have no method {method_name!r}")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)


class _Piece:
    """A Ray actor: the characters ``[start, stop)`` of a batch (an :class:`ImitateBatch` seeded ``seed + start``)."""

    def __init__(self, clip, start: int, stop: int, seed: int | None, options: dict):
        self.batch = ImitateBatch(clip, stop - start, seed=None if seed is None else seed + start, threads=1, **options)

    def sizes(self) -> tuple[int, int]:
        return self.batch.observation_size, self.batch.action_size

    def reset(self, idx, seeds):
        return self.batch.reset(idx, seeds)

    def step(self, actions):
        return self.batch.step(actions)


class RayBatch:
    """``n`` characters in ``actors`` Ray actors (contiguous pieces, :func:`~animat.parallel.chunk_spans`), behind
    :class:`ImitateBatch`'s ``reset``/``step``; ``pool``: the :class:`~animat.parallel.RayPool` they run on
    (closed with this batch when ``own_pool``). ``options``: ImitateBatch's keyword arguments."""

    def __init__(
        self, clip, n: int, pool: RayPool, *, actors: int, seed: int | None = None, own_pool: bool = True, **options
    ):
        self.pool, self.own_pool, self.n = pool, own_pool, int(n)
        self.spans = chunk_spans(self.n, actors)
        shared = pool.put(clip)
        self.actors = [pool.actor(_Piece, shared, a, b, seed, options) for a, b in self.spans]
        self.observation_size, self.action_size = pool.get([a.sizes.remote() for a in self.actors])[0]

    def reset(self, idx=None, seeds=None) -> np.ndarray:
        idx = np.arange(self.n) if idx is None else np.asarray(idx, dtype=int)
        seeds = [None] * idx.size if seeds is None else list(seeds)
        calls = []
        for actor, (a, b) in zip(self.actors, self.spans):
            mine = (idx >= a) & (idx < b)
            calls.append(actor.reset.remote(idx[mine] - a, [s for s, m in zip(seeds, mine) if m]))
        return np.concatenate(self.pool.get(calls))

    def step(self, actions: np.ndarray):
        actions = np.asarray(actions)
        parts = self.pool.get([actor.step.remote(actions[a:b]) for actor, (a, b) in zip(self.actors, self.spans)])
        return tuple(np.concatenate(field) for field in zip(*parts))

    def close(self) -> None:
        for actor in self.actors:
            self.pool.kill(actor)
        self.actors = []
        if self.own_pool:
            self.pool.close()
