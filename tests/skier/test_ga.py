from __future__ import annotations

import numpy as np
import pytest

from animat.evolve.strategies.keyframe_ga import KeyframeParams
from animat.skier import ga
from animat.skier.gene import mirror, random_genes
from animat.skier.model import GROUPS, joint_ranges_deg


def test_parent_choice_frequencies():
    rng = np.random.default_rng(0)
    n = 100_000
    pairs = ga.choose_parents(rng, n)
    assert np.all(pairs[:, 0] != pairs[:, 1])
    p = np.array(ga.PARENT_PROBS)
    first = np.bincount(pairs[:, 0], minlength=5) / n
    assert np.all(np.abs(first - p) < 0.01)
    for f in range(5):  # second parent: the other four, renormalised
        sel = pairs[pairs[:, 0] == f, 1]
        expect = p.copy()
        expect[f] = 0
        expect /= expect.sum()
        freq = np.bincount(sel, minlength=5) / sel.size
        tol = 0.01 if sel.size > 10_000 else 0.02  # fewer draws for the rarest first parents
        assert np.all(np.abs(freq - expect) < tol), (f, freq, expect)


def test_mutation_rate():
    rng = np.random.default_rng(1)
    genes = random_genes(rng, 1000)
    new, mask = ga.mutate(rng, genes, 0.02)
    assert mask.mean() == pytest.approx(0.02, abs=0.003)
    assert np.all(new[~mask] == genes[~mask])
    r = joint_ranges_deg()
    assert np.all((new >= r[:, 0]) & (new <= r[:, 1]))
    assert not np.shares_memory(new, genes)


def test_creep_steps_by_its_width_within_the_ranges():
    rng = np.random.default_rng(4)
    genes = random_genes(rng, 2000)
    new, mask = ga.creep(rng, genes, 0.05, 6.0)
    assert mask.mean() == pytest.approx(0.05, abs=0.003)
    assert np.all(new[~mask] == genes[~mask]) and new.dtype == genes.dtype
    r = joint_ranges_deg()
    assert np.all((new >= r[:, 0]) & (new <= r[:, 1]))
    inside = mask & (genes - r[:, 0] > 30) & (r[:, 1] - genes > 30)  # far from a bound: no clipping
    step = (new - genes)[inside]
    assert step.std() == pytest.approx(6.0, rel=0.05) and abs(step.mean()) < 0.3
    assert np.all(np.abs(step) <= 40)  # a creep never jumps across the range as a uniform draw does


def test_creep_rate_zero_breeds_the_slides_ga_number_for_number():
    genes = random_genes(np.random.default_rng(5), 50)
    fit = np.random.default_rng(6).random(50)
    slides = ga.next_generation(np.random.default_rng(7), genes, fit, KeyframeParams())
    assert np.array_equal(slides, ga.next_generation(np.random.default_rng(7), genes, fit, KeyframeParams(creep_deg=9)))
    crept = ga.next_generation(np.random.default_rng(7), genes, fit, KeyframeParams(creep_rate=0.1))
    assert np.array_equal(crept[:5], slides[:5]) and not np.array_equal(crept, slides)  # elites kept, children moved


def test_crossover_moves_whole_groups():
    rng = np.random.default_rng(2)
    a = np.zeros((200, 10, 12), dtype=np.int64)
    b = np.ones((200, 10, 12), dtype=np.int64)
    child, from_b = ga.crossover(rng, a, b)
    for g, cols in enumerate(GROUPS.values()):
        block = child[:, :, list(cols)]
        assert np.all(block == from_b[:, g, None, None])  # whole group from one parent
    assert 0.4 < from_b.mean() < 0.6
    assert 0 < (from_b.sum(axis=1) % 6).mean()  # mixing happens


def test_elites_bit_identical_and_children_mirrored():
    rng = np.random.default_rng(3)
    genes = random_genes(rng, 50)
    fit = rng.random(50)
    before = genes.copy()
    nxt = ga.next_generation(rng, genes, fit)
    assert np.array_equal(genes, before)  # parents untouched
    order = np.argsort(-fit)[:5]
    assert np.array_equal(nxt[:5], genes[order])
    assert np.array_equal(mirror(nxt), nxt)
    assert nxt.shape == genes.shape and nxt.dtype == genes.dtype


def test_next_generation_deterministic():
    genes = random_genes(np.random.default_rng(4), 20)
    fit = np.arange(20.0)
    a = ga.next_generation(np.random.default_rng(9), genes, fit)
    b = ga.next_generation(np.random.default_rng(9), genes, fit)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n_joints", [12, 14])
def test_symmetric_breeding_gives_children_that_are_their_own_mirror_image(n_joints):
    """``symmetric``: every child's every state equals its mirror image (right limbs = mirrored left, hips
    negated); the elites pass unchanged (asymmetric ones too); and the same random draws as without it, so the
    left side and the unpaired columns (head, torso) are exactly the slides' GA's children."""
    from animat.skier.gene import mirror_state

    genes = random_genes(np.random.default_rng(5), 30, n_joints=n_joints)
    fit = np.arange(30.0)
    sym = ga.next_generation(np.random.default_rng(2), genes, fit, KeyframeParams(symmetric=True))
    free = ga.next_generation(np.random.default_rng(2), genes, fit, KeyframeParams())
    assert np.array_equal(sym[:5], free[:5]) and not np.array_equal(mirror_state(sym[:5]), sym[:5])
    assert np.array_equal(mirror_state(sym[5:]), sym[5:])
    assert np.array_equal(mirror(sym), sym)
    left = [0, 1, 2, 3, 4, 5, 6] + ([12] if n_joints == 14 else [])
    assert np.array_equal(sym[5:, :5][..., left], free[5:, :5][..., left])
    assert not np.array_equal(sym[5:], free[5:])
