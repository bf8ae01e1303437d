"""The slides' genetic algorithm over keyframe genes as a strategy: small pure NumPy functions (no JAX).

A genome is an ``(n, m)`` integer matrix: ``n`` keyframe states (even) by ``m`` columns, each in
its range ``[low, high]``; the second half of the states mirrors the first (columns swapped by a
permutation, some negated). The gene layout (:class:`KeyframeLayout`: ranges, crossover groups,
mirroring) is a parameter: the system that owns the genes supplies it (the skier: :mod:`animat.skier.ga`).

Every function takes a seeded ``np.random.Generator`` and returns new arrays (inputs are never
written), so a generation is a pure function of (genes, fitness, rng state): same seed, same run.
Children go into a new array, so parents still in use are never overwritten and the best
``elites`` are copied bit-identically into the next generation.

Defaults (:class:`KeyframeParams`): the best 5 pass unchanged; a child's first parent is one of the
best 5 with probabilities 40/30/15/10/5 %, its second one of the remaining four with those
probabilities renormalised; crossover takes each group of columns whole from a random one of the two
parents; mutation replaces each value by a uniform random integer in its range with probability
2 %. Only the first half of a gene is bred; the second half is its mirror image.

``creep_rate`` (not the slides'): after the uniform draws, each value of a child also moves with this probability by
a normal step of ``creep_deg`` degrees (rounded, clipped to its range): the "creep" mutation of real-coded GAs (Davis
1991, Handbook of Genetic Algorithms, ch. 4), which fine-tunes a gait that a uniform jump would mostly break, while the
uniform draws keep exploring. 0 draws nothing more: the slides' GA number for number.

``symmetric`` (not the slides'): each bred state is then made its own mirror image (:func:`symmetrise`:
the columns of one side are the mirror image of the other's), so children move both sides alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from animat.errors import CheckpointError
from animat.evolve.ranking import ranking

PARENT_PROBS = (0.40, 0.30, 0.15, 0.10, 0.05)


@dataclass(frozen=True)
class KeyframeParams:
    elites: int = 5
    parent_probs: tuple[float, ...] = PARENT_PROBS
    mutation_rate: float = 0.02
    symmetric: bool = False
    creep_rate: float = 0.0
    creep_deg: float = 3.0


@dataclass(frozen=True, eq=False)
class KeyframeLayout:
    """``ranges (m, 2)`` int: [low, high] of each column; ``groups``: the crossover's column groups (each
    taken whole from one parent); ``swap (m,)``: the column permutation of the mirror image, ``flip``:
    the columns whose sign it flips."""

    ranges: np.ndarray
    groups: tuple[tuple[int, ...], ...]
    swap: np.ndarray
    flip: np.ndarray


def mirror_states(states: np.ndarray, swap: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """(..., m) -> their mirror image: columns permuted by ``swap``, ``flip`` columns negated."""
    out = np.asarray(states)[..., swap].copy()
    out[..., flip] = -out[..., flip]
    return out


def mirror(genes: np.ndarray, swap: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """(..., n, m), ``n`` even -> a copy whose states ``n/2..n-1`` mirror states ``0..n/2-1``."""
    genes = np.array(genes, copy=True)
    n = genes.shape[-2]
    genes[..., n // 2 :, :] = mirror_states(genes[..., : n // 2, :], swap, flip)
    return genes


def symmetrise(states: np.ndarray, swap: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """(..., m) -> a copy equal to its own mirror image: each column ``i`` with ``swap[i] < i`` (the second of a
    swapped pair, e.g. a right limb) replaced by the mirror image of its partner ``swap[i]``; other columns kept."""
    states = np.asarray(states)
    dependent = np.flatnonzero(np.asarray(swap) < np.arange(len(swap)))
    out = states.copy()
    out[..., dependent] = mirror_states(states, swap, flip)[..., dependent]
    return out


def choose_parents(rng: np.random.Generator, k: int, probs=PARENT_PROBS) -> np.ndarray:
    """(k, 2) ranks (0 = best) of two distinct parents per child: the first with ``probs``, the
    second with ``probs`` over the ranks left, renormalised."""
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()
    first = rng.choice(p.size, size=k, p=p)
    rest = np.tile(p, (k, 1))
    rest[np.arange(k), first] = 0.0
    cdf = np.cumsum(rest / rest.sum(axis=1, keepdims=True), axis=1)
    u = rng.random(k)
    second = np.minimum((cdf < u[:, None]).sum(axis=1), p.size - 1)
    second = np.where(second == first, (second + 1) % p.size, second)  # only reachable through rounding at u ~ 1
    return np.stack([first, second], axis=1)


def crossover(
    rng: np.random.Generator, a: np.ndarray, b: np.ndarray, groups: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Children of parents ``a``, ``b`` (k, n, m): each group's columns (all states) come whole
    from ``a`` or ``b`` with equal chance. Returns (children, from_b (k, n_groups) bool)."""
    groups = list(groups)
    k = a.shape[0]
    from_b = rng.random((k, len(groups))) < 0.5
    col_from_b = np.zeros((k, a.shape[-1]), dtype=bool)
    for g, cols in enumerate(groups):
        col_from_b[:, list(cols)] = from_b[:, g : g + 1]
    children = np.where(col_from_b[:, None, :], b, a)
    return children, from_b


def mutate(
    rng: np.random.Generator, genes: np.ndarray, rate: float, ranges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each value becomes a uniform random integer in its column's range [low, high] with
    probability ``rate``. genes (..., m); ranges (m, 2). Returns (mutated copy, mask)."""
    r = np.asarray(ranges)
    genes = np.asarray(genes)
    mask = rng.random(genes.shape) < rate
    fresh = rng.integers(r[:, 0], r[:, 1] + 1, size=genes.shape)
    return np.where(mask, fresh, genes), mask


def creep(
    rng: np.random.Generator, genes: np.ndarray, rate: float, width: float, ranges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each value moves with probability ``rate`` by a normal step of standard deviation ``width`` (its units),
    rounded and clipped to its column's range [low, high]. genes (..., m) int; ranges (m, 2). Returns (moved copy,
    mask)."""
    r = np.asarray(ranges)
    genes = np.asarray(genes)
    mask = rng.random(genes.shape) < rate
    moved = np.clip(genes + np.rint(rng.normal(0.0, width, size=genes.shape)), r[:, 0], r[:, 1])
    return np.where(mask, moved, genes).astype(genes.dtype), mask


def next_generation(
    rng: np.random.Generator, genes: np.ndarray, fitness: np.ndarray, params: KeyframeParams, layout: KeyframeLayout
) -> np.ndarray:
    """The next population (P, n, m) from ``genes`` (P, n, m) and their ``fitness`` (P,): rows
    ``0..elites-1`` are the best genes unchanged (best first, :func:`animat.evolve.ranking.ranking`), the rest children
    (made symmetric, :func:`symmetrise`, with ``params.symmetric``)."""
    genes = np.asarray(genes)
    P, n, _ = genes.shape
    e = int(params.elites)
    if len(params.parent_probs) != e:
        raise ValueError(f"parent_probs has {len(params.parent_probs)} entries, expected one per elite ({e})")
    best = genes[ranking(fitness)[:e]]
    k = P - e
    out = np.empty_like(genes)
    out[:e] = best
    if k > 0:
        parents = choose_parents(rng, k, params.parent_probs)
        children, _ = crossover(rng, best[parents[:, 0]], best[parents[:, 1]], layout.groups)
        half, _ = mutate(rng, children[:, : n // 2, :], params.mutation_rate, layout.ranges)
        if params.creep_rate > 0:
            half, _ = creep(rng, half, params.creep_rate, params.creep_deg, layout.ranges)
        children[:, : n // 2, :] = symmetrise(half, layout.swap, layout.flip) if params.symmetric else half
        out[e:] = mirror(children, layout.swap, layout.flip)
    return out


# ------------------------------------------------------------------------------ the strategy
def _generator(rng_state: dict) -> np.random.Generator:
    rng = np.random.default_rng(0)
    rng.bit_generator.state = rng_state
    return rng


@dataclass(frozen=True)
class KeyframeGAState:
    """``genes (P, n, m)`` int: the generation to evaluate next; ``rng_state``: the NumPy bit generator's
    state (a JSON-serialisable dict) that breeds the next one."""

    genes: np.ndarray
    rng_state: dict


@dataclass(frozen=True)
class KeyframeGA:
    """The keyframe GA over ``layout`` with ``params``; ``initial(rng) -> genes (P, n, m)`` draws
    generation 0 from the run's generator (which then goes on to breed)."""

    name: ClassVar[str] = "keyframe_ga"
    State: ClassVar[type] = KeyframeGAState

    layout: KeyframeLayout
    initial: Callable[[np.random.Generator], np.ndarray]
    params: KeyframeParams = KeyframeParams()

    def init(self, key: int) -> KeyframeGAState:
        """Generation 0 from the integer seed ``key`` (``np.random.default_rng(key)``)."""
        rng = np.random.default_rng(key)
        genes = self.initial(rng)
        return KeyframeGAState(genes, rng.bit_generator.state)

    def ask(self, state: KeyframeGAState) -> tuple[np.ndarray, KeyframeGAState]:
        return state.genes, state

    def tell(self, state: KeyframeGAState, fitness: np.ndarray) -> KeyframeGAState:
        rng = _generator(state.rng_state)
        genes = next_generation(rng, state.genes, fitness, self.params, self.layout)
        return replace(state, genes=genes, rng_state=rng.bit_generator.state)

    @staticmethod
    def upgrade(
        arrays: dict[str, np.ndarray], meta: dict[str, Any], where: str
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """A skier training checkpoint written before the engine's loop (``genes``, ``best_gene``;
        meta ``rng_state``, ``history``, ``best_fitness``) in the loop's layout (:mod:`animat.evolve.loop`)."""
        try:
            new_arrays = {
                "genes": arrays["genes"],
                "best_genes": arrays["best_gene"],
                "best_fitness": np.float64(meta["best_fitness"]),
            }
            loop = {
                "state": {"rng_state": meta["rng_state"]},
                "generation": int(meta["generation"]),
                "history": meta["history"],
                "threshold": None,
                "threshold_hits": [],
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {where!r} lacks or garbles field {exc}") from None
        rest = {k: v for k, v in meta.items() if k not in ("rng_state", "history", "best_fitness", "generation")}
        return new_arrays, {**rest, **loop}
