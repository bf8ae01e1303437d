"""Flock metrics (animat.swarm.metrics) against a hand computation on four agents."""

from __future__ import annotations

import math

import numpy as np
import pytest

from animat.swarm.metrics import flock_metrics


def test_flock_metrics_of_four_agents_by_hand():
    """Agents 0, 1, 2 at (0, 0), (3, 0), (0, 4) and agent 3 far away at (10, 10); r = 5, d = 3.
    Neighbours (distance < r): 0-1 (3) and 0-2 (4); 1-2 is exactly r = 5 apart, not neighbours.
    Ordered pairs |E| = 4: deviation energy 2 ((3 - 3)^2 + (4 - 3)^2) / ((4 + 1) 3^2) = 2 / 45.
    Centroid (3.25, 3.5): cohesion radius |(10, 10) - centroid| = sqrt(6.75^2 + 6.5^2).
    Velocities (1, 0), (0, 0), (0, 2), (-1, -2), mean 0: mismatch (1 + 4 + 5) / (2 * 4) = 1.25."""
    q = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0], [10.0, 10.0]])
    p = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0], [-1.0, -2.0]])
    m = flock_metrics(q, p, d=3.0, r=5.0)
    assert m["edges"] == 2 and m["components"] == 2 and m["connectivity"] == pytest.approx(2 / 3)
    assert m["deviation_energy"] == pytest.approx(2 / 45, rel=1e-12)
    assert m["cohesion_radius"] == pytest.approx(math.hypot(6.75, 6.5), rel=1e-12)
    assert m["velocity_mismatch"] == pytest.approx(1.25, rel=1e-12)
    assert m["min_distance"] == pytest.approx(3.0) and m["max_neighbour_error"] == pytest.approx(1 / 3)
    # a common velocity added to every agent changes no velocity mismatch; a lattice at exactly d has no deviation
    assert flock_metrics(q, p + 7.0, 3.0, 5.0)["velocity_mismatch"] == pytest.approx(1.25)
    line = np.array([[0.0, 0.0], [3.0, 0.0], [6.0, 0.0]])
    assert flock_metrics(line, np.zeros((3, 2)), 3.0, 5.0)["deviation_energy"] == 0.0
