"""``--backend ray``: the batched humanoids in Ray actors give the rollouts of the local batch (a local Ray)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("ray")

from animat.character.demo import demo_clip  # noqa: E402
from animat.imitate.batch import ImitateBatch  # noqa: E402
from animat.imitate.vecenv import BatchVecEnv, RayBatch  # noqa: E402
from animat.parallel import RayPool  # noqa: E402

N, STEPS = 5, 60


@pytest.mark.parametrize("skills", [False, True])
def test_ray_actors_give_the_local_rollouts(skills):
    """Same seed and actions: the same observations, rewards and ends; with ``skills`` a skill selector over two
    clips (each character draws its skill per reset wherever it lives)."""
    clip = demo_clip()
    options = dict(pose_termination=0.4, max_seconds=1.0)
    if skills:
        options.update(clips=[clip, replace(clip, times=clip.times * 1.25)], multi_clip="selector")
    local = BatchVecEnv(ImitateBatch(clip, N, threads=2, **options))
    remote = BatchVecEnv(RayBatch(clip, N, RayPool(workers=2), actors=2, **options))
    try:
        for venv in (local, remote):
            venv.seed(11)
        np.testing.assert_array_equal(local.reset(), remote.reset())
        ends = 0
        for a in np.random.default_rng(0).normal(0.0, 0.3, (STEPS, N, 28)).astype(np.float32):
            o1, r1, d1, i1 = local.step(a)
            o2, r2, d2, i2 = remote.step(a)
            for x, y in ((o1, o2), (r1, r2), (d1, d2)):
                np.testing.assert_array_equal(x, y)
            assert [sorted(i) for i in i1] == [sorted(i) for i in i2]
            ends += int(d1.sum())
        assert ends >= N  # through episode ends and restarts
    finally:
        local.close()
        remote.close()
