"""The skier's genes for the engine's keyframe GA (:mod:`animat.evolve.strategies.keyframe_ga`): their
layout (joint ranges, the 6 body groups, the left/right mirror) and the GA's operators with it filled in.

Defaults: the slides' GA (the best 5 pass unchanged; parents from the best 5 with probabilities
40/30/15/10/5 %; crossover takes each of the 6 body groups whole from one parent; mutation replaces
each joint value by a uniform random value in its range with probability 2 %). ``skier train`` adds
``symmetric`` breeding by default (:class:`animat.skier.options.TrainConfig`; ``GAParams(symmetric=True)``).
"""

from __future__ import annotations

import numpy as np

from animat.evolve.strategies import keyframe_ga

# (the skier's GA)
from animat.evolve.strategies.keyframe_ga import PARENT_PROBS, KeyframeLayout, choose_parents  # noqa: F401
from animat.evolve.strategies.keyframe_ga import KeyframeParams as GAParams
from animat.skier.gene import N_JOINTS, mirror_map
from animat.skier.model import groups as body_groups
from animat.skier.model import joint_ranges_deg


def layout(n_joints: int = N_JOINTS) -> KeyframeLayout:
    """The gene layout of ``n_joints`` columns (12: one-axis hip, 14: two-axis)."""
    swap, flip = mirror_map(n_joints)
    return KeyframeLayout(joint_ranges_deg(n_joints), tuple(body_groups(n_joints).values()), swap, flip)


ES_UNIT_DEG = 10.0  # an evolution strategy's vector x is in units of 10 degrees (animat.evolve.strategies.evosax_es)


def decode(x: np.ndarray, n_states: int, n_joints: int = N_JOINTS) -> np.ndarray:
    """Genes ``(P, n, m)`` int64 of an evolution strategy's vectors ``x (P, n/2 * m)`` (units of
    :data:`ES_UNIT_DEG`): the first ``n/2`` states, rounded to whole degrees and clipped to each joint's
    range, then mirrored. ``x = 0`` is the standing pose."""
    lay = layout(n_joints)
    half = np.rint(np.asarray(x, dtype=np.float64).reshape(len(x), n_states // 2, n_joints) * ES_UNIT_DEG)
    half = np.clip(half, lay.ranges[:, 0], lay.ranges[:, 1]).astype(np.int64)
    genes = np.concatenate([half, half], axis=1)
    return keyframe_ga.mirror(genes, lay.swap, lay.flip)


def crossover(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`keyframe_ga.crossover` over the body groups (``groups``: name -> columns, default the skier's)."""
    return keyframe_ga.crossover(rng, a, b, tuple((groups or body_groups(a.shape[-1])).values()))


def mutate(
    rng: np.random.Generator, genes: np.ndarray, rate: float = 0.02, ranges: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`keyframe_ga.mutate` within the joint ranges (default the skier's)."""
    return keyframe_ga.mutate(rng, genes, rate, joint_ranges_deg(np.shape(genes)[-1]) if ranges is None else ranges)


def creep(rng: np.random.Generator, genes: np.ndarray, rate: float, width_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`keyframe_ga.creep` of skier genes (degrees) within the joint ranges."""
    return keyframe_ga.creep(rng, genes, rate, width_deg, joint_ranges_deg(np.shape(genes)[-1]))


def next_generation(
    rng: np.random.Generator, genes: np.ndarray, fitness: np.ndarray, params: GAParams = GAParams()
) -> np.ndarray:
    """:func:`keyframe_ga.next_generation` of skier genes ``(P, n, m)``."""
    return keyframe_ga.next_generation(rng, genes, fitness, params, layout(np.shape(genes)[-1]))
