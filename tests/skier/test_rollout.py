from __future__ import annotations

import math

import numpy as np
import pytest

from animat.skier.gene import random_genes
from animat.skier.rollout import Evaluator, score, step_loop_states

UP = np.array([1.0, 0, 0, 0])


def test_score_positive_progress_fall_and_bonus():
    x = np.array([[0.0, 1.0, 0.5, 1.5, 2.0]])  # +1, -0.5 (ignored), +1, +0.5
    q = np.tile(UP, (1, 5, 1))
    s = score(x, q, 0.1)
    assert s.fitness[0] == pytest.approx(2.5 + 5.0) and not s.fell[0]
    a = math.radians(85)
    q2 = q.copy()
    q2[0, 3:] = [math.cos(a / 2), math.sin(a / 2), 0, 0]  # tilted 85 deg about x from frame 3
    s2 = score(x, q2, 0.1)
    assert s2.fell[0] and s2.fitness[0] == pytest.approx(1.0)  # only frames before the fall count
    x3 = x.copy()
    x3[0, 4] = 100.0  # a divergence jump counts as a fall
    assert score(x3, q, 0.1).fell[0]


def test_rollout_matches_python_step_loop():
    genes = random_genes(np.random.default_rng(0), 3)
    with Evaluator(seconds=0.5, nthread=2) as ev:
        state = ev.states(genes)
        ref = step_loop_states(ev.model, genes, ev.nstep)
        pos, quat = ev.root(state)
        assert np.allclose(pos, ref[..., :3], atol=1e-9)
        assert np.allclose(quat, ref[..., 3:7], atol=1e-9)
        s = ev(genes)
        assert s.fitness.shape == (3,)
