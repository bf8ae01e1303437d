"""Ray evaluation backend for the skier (``animat skier train --backend ray``).

The generation is split into contiguous chunks, one ``@ray.remote`` task each; a task builds the
skier model and scores its chunk with a one-thread :class:`animat.skier.rollout.Evaluator`. A
skier's motion depends only on its own gene (no solver warm start, see :mod:`animat.skier.model`),
so the gathered scores equal the local backend's bit for bit (tests/skier/test_distributed.py).
Ray start-up, address handling and shutdown are the fly's (:class:`animat.evolve.evaluate.RayEvaluator`).
"""

from __future__ import annotations

import numpy as np

from animat.evolve.evaluate import RayEvaluator, _import_ray
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
        ray = _import_ray()
        self._ray, self._owns_ray, self.max_retries = ray, False, int(max_retries)
        if not ray.is_initialized():
            self._init_ray(address, num_workers)
        self.chunks = int(chunks or num_workers or int(ray.cluster_resources().get("CPU", 1)) or 1)
        settings = {"params": params.to_dict(), "evaluator": dict(seconds=seconds, frame_dt=frame_dt, fall_deg=fall_deg, bonus=bonus,
                                                                     tau=tau, chunk_seconds=chunk_seconds)}
        self._fitness_ref = ray.put(settings)
        self._task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_score_chunk)

    def __call__(self, genes: np.ndarray) -> Scores:
        genes = np.asarray(genes)
        bounds = np.linspace(0, genes.shape[0], min(self.chunks, genes.shape[0]) + 1).round().astype(int)
        refs = [self._task.remote(self._fitness_ref, genes[a:b]) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        parts = self._ray.get(refs)  # in chunk order
        return Scores(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("fitness", "fell", "net_forward_m", "scored_seconds")))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
