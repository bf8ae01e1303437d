"""Ray evaluation backend for the skier (``animat skier train --backend ray``).

The generation is split into contiguous chunks, one Ray task each (:meth:`animat.parallel.RayPool.map_chunks`,
which also does the validation, Ray start-up, address handling, retries and shutdown); a task builds
the skier model and scores its chunk with a one-thread :class:`animat.skier.rollout.Evaluator`. A
skier's motion depends only on its own gene (no solver warm start, see :mod:`animat.skier.model`),
so the gathered scores equal the local backend's bit for bit (tests/skier/test_distributed.py).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from animat.parallel import RayPool
from animat.skier.model import SkierParams
from animat.skier.rollout import Evaluator, Scores


def _score_chunk(genes: np.ndarray, settings: dict) -> Scores:
    """Ray task body: scores of one chunk of genes (a pure function of its inputs)."""
    params = SkierParams.from_dict(settings["params"])
    with Evaluator(params, nthread=1, **settings["evaluator"]) as ev:
        return ev(genes)


class RaySkierEvaluator:
    """Drop-in for :class:`animat.skier.rollout.Evaluator` (``__call__(genes) -> Scores``, ``close()``)
    running on Ray. ``address``/``num_workers``/``chunks``/``max_retries`` as in
    :class:`animat.parallel.RayPool` (``num_workers`` is its ``workers``); the other arguments as in
    :class:`Evaluator`."""

    def __init__(
        self,
        params: SkierParams,
        seconds: float = 20.0,
        frame_dt: float = 0.02,
        *,
        fall_deg: float = 80.0,
        bonus: float = 5.0,
        tau: float = 0.5,
        chunk_seconds: float | None = 2.0,
        skate_weight: float = 0.0,
        skate_min_yaw_deg: float = 10.0,
        effort_weight: float = 0.0,
        skate_max_yaw_deg: float = 180.0,
        effort_free_cot: float = 0.0,
        address: str | None = None,
        num_workers: int | None = None,
        chunks: int | None = None,
        max_retries: int = 3,
    ):
        settings = {
            "params": params.to_dict(),
            "evaluator": dict(
                seconds=seconds,
                frame_dt=frame_dt,
                fall_deg=fall_deg,
                bonus=bonus,
                tau=tau,
                chunk_seconds=chunk_seconds,
                skate_weight=skate_weight,
                skate_min_yaw_deg=skate_min_yaw_deg,
                effort_weight=effort_weight,
                skate_max_yaw_deg=skate_max_yaw_deg,
                effort_free_cot=effort_free_cot,
            ),
        }
        self._pool = RayPool(address=address, workers=num_workers, chunks=chunks, max_retries=max_retries)
        self.chunks = self._pool.chunks
        self._settings = self._pool.put(settings)

    def __call__(self, genes: np.ndarray) -> Scores:
        parts = self._pool.map_chunks(_score_chunk, np.asarray(genes), self._settings, what="genes")
        if not parts:
            return Scores(np.zeros(0), np.zeros(0, dtype=bool), *(np.zeros(0) for _ in range(len(fields(Scores)) - 2)))
        return Scores(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Scores)))

    def close(self) -> None:
        """Shut Ray down if this evaluator started it."""
        self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
