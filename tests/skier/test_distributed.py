"""The Ray backend scores a generation exactly as the local mujoco.rollout thread pool does."""

from __future__ import annotations

import numpy as np
import pytest

from animat.skier.gene import random_genes, standing_genes
from animat.skier.model import SkierParams
from animat.skier.rollout import Evaluator

ray = pytest.importorskip("ray")


@pytest.mark.slow
def test_ray_and_local_give_identical_scores():
    rng = np.random.default_rng(7)
    genes = np.concatenate([standing_genes(rng, 3, 10.0), random_genes(rng, 3)])
    params = SkierParams()
    with Evaluator(params, seconds=2.0, nthread=2) as local:
        want = local(genes)
    from animat.skier.distributed import RaySkierEvaluator

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with RaySkierEvaluator(params, seconds=2.0, chunks=2) as remote:
            got = remote(genes)
            empty = remote(genes[:0])  # no task submitted
    finally:
        ray.shutdown()
    for field in ("fitness", "fell", "net_forward_m", "scored_seconds"):
        assert np.array_equal(getattr(want, field), getattr(got, field)), field
        assert getattr(empty, field).shape == (0,) and getattr(empty, field).dtype == getattr(want, field).dtype, field


@pytest.mark.parametrize("kwargs", [dict(chunks=0), dict(num_workers=0), dict(max_retries=-1)])
def test_bad_ray_settings_are_config_errors(kwargs):
    """Checked by the shared RayPool (animat.parallel) before Ray is imported or started."""
    from animat.errors import ConfigError
    from animat.skier.distributed import RaySkierEvaluator

    with pytest.raises(ConfigError, match="must be >= "):
        RaySkierEvaluator(SkierParams(), **kwargs)
    assert not ray.is_initialized()
