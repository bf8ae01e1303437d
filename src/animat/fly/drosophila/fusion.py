"""Values the drosophila step computes once however many kernels read them.

XLA's CPU fusion copies an elementwise producer (a sine, the arctangent's polynomial, a product of jets) into
every fused kernel that reads it, so a value read in five places is computed five times. An optimisation barrier
ends fusion there: the value is written once and read back (a few bytes a fly, where the recomputation cost tens
of multiplies or a transcendental per copy). The numbers are the same; the time saved is in BENCHMARKS.md
(issue 50).
"""

from __future__ import annotations

import jax


def once(values):
    """``values`` (an array or a tuple of them) unchanged, evaluated once for all their readers."""
    return jax.lax.optimization_barrier(values)
