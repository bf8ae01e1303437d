"""Ray evaluation backend for the skier (``animat skier train --backend ray``).

The generation is split into contiguous chunks, one ``@ray.remote`` task each; a task builds the
skier model and scores its chunk with a one-thread :class:`animat.skier.rollout.Evaluator`. A
skier's motion depends only on its own gene (no solver warm start, see :mod:`animat.skier.model`),
so the gathered scores equal the local backend's bit for bit (tests/skier/test_distributed.py).
Validation, Ray start-up, address handling, chunking, failure handling and shutdown are the fly's
(:class:`animat.evolve.evaluate.RayEvaluator`); this class only supplies the task body and the result type.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from animat.evolve.evaluate import RayEvaluator
from animat.skier.model import SkierParams
from animat.skier.rollout import Evaluator, Scores


def _score_chunk(settings: dict, genes: np.ndarray) -> Scores:
    """Ray task body: scores of one chunk of genes (a pure function of its inputs)."""
    params = SkierParams.from_dict(settings["params"])
    with Evaluator(params, nthread=1, **settings["evaluator"]) as ev:
        return ev(genes)


class RaySkierEvaluator(RayEvaluator):
    """Drop-in for :class:`animat.skier.rollout.Evaluator` (``__call__(genes) -> Scores``, ``close()``)
    running on Ray. ``address``/``num_workers``/``chunks`` as in :class:`RayEvaluator`; the other
    arguments as in :class:`Evaluator`."""

    def __init__(self, params: SkierParams, seconds: float = 20.0, frame_dt: float = 0.02, *, fall_deg: float = 80.0,
                 bonus: float = 5.0, tau: float = 0.5, chunk_seconds: float | None = 2.0, address: str | None = None,
                 num_workers: int | None = None, chunks: int | None = None, max_retries: int = 3):
        settings = {"params": params.to_dict(), "evaluator": dict(seconds=seconds, frame_dt=frame_dt, fall_deg=fall_deg, bonus=bonus,
                                                                     tau=tau, chunk_seconds=chunk_seconds)}
        self._start(settings, _score_chunk, address, num_workers, chunks, max_retries)

    def _submit(self, genes: np.ndarray):
        return self._task.remote(self._fitness_ref, genes)

    def _combine(self, parts: list[Scores]) -> Scores:
        return Scores(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Scores)))

    def _empty(self) -> Scores:
        return Scores(np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0), np.zeros(0))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
