"""The paper's network GA as a strategy: genomes are flat network weights ``(P, G)`` float32, bred by
the JAX operators of :mod:`animat.evolve.operators` (the only strategy module that imports JAX).

``init(key)``: ``init_key, base_key = split(key)``; every gene from N(0, init_std^2) drawn with
``init_key``. ``tell(state, fitness)``: the next generation is
``next_generation(fold_in(base_key, generation), genes, rank_scores(fitness), ...)``: breeding keys
depend only on the seed and the generation number, so a resumed run breeds what an uninterrupted one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from animat.errors import CheckpointError
from animat.evolve import network, operators
from animat.evolve.ranking import rank_scores

#: metrics columns of the checkpoints written before the engine's loop, and their types
_OLD_HISTORY = {"generation": int, "best": float, "mean": float, "median": float, "crashes": int, "seconds": float}


@dataclass(frozen=True)
class PaperGAState:
    """``genes (P, G)`` float32: the generation to evaluate next; ``base_key (2,)`` uint32: the breeding
    key; ``generation``: generations bred so far."""

    genes: np.ndarray
    base_key: np.ndarray
    generation: int = 0


@dataclass(frozen=True)
class PaperGA:
    """``size`` networks of architecture ``layers``; breeding settings as in
    :func:`animat.evolve.operators.next_generation` (``mutation_std`` None: ``init_std``)."""

    name: ClassVar[str] = "paper_ga"
    State: ClassVar[type] = PaperGAState

    size: int
    layers: tuple[int, ...]
    init_std: float = 1.0
    pool_frac: float = 0.1
    elite_frac: float = 0.05
    crossover_prob: float = 0.5
    mutation_rate: float = 0.05
    mutation: str = "normal"
    mutation_std: float | None = None

    def init(self, key: Any) -> PaperGAState:
        """Generation 0 from a PRNG key (or an integer seed: ``PRNGKey(seed)``)."""
        key = jax.random.PRNGKey(key) if isinstance(key, int) else jnp.asarray(key)
        init_key, base_key = jax.random.split(key)
        genes = np.asarray(network.init_genes(init_key, self.size, self.layers, self.init_std))
        return PaperGAState(genes, np.asarray(base_key, dtype=np.uint32))

    def ask(self, state: PaperGAState) -> tuple[np.ndarray, PaperGAState]:
        return state.genes, state

    def tell(self, state: PaperGAState, fitness: np.ndarray) -> PaperGAState:
        key = jax.random.fold_in(jnp.asarray(state.base_key), state.generation)
        std = self.init_std if self.mutation_std is None else float(self.mutation_std)
        new = operators.next_generation(
            key,
            jnp.asarray(state.genes),
            jnp.asarray(rank_scores(fitness)),
            pool_frac=self.pool_frac,
            elite_frac=self.elite_frac,
            crossover_prob=self.crossover_prob,
            mutation_rate=self.mutation_rate,
            mutation=self.mutation,
            mutation_std=std,
        )
        return replace(state, genes=np.asarray(jax.block_until_ready(new)), generation=state.generation + 1)

    @staticmethod
    def upgrade(
        arrays: dict[str, np.ndarray], meta: dict[str, Any], where: str
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """A ``Population`` checkpoint written before the engine's loop (history as ``history_<column>``
        arrays) in the loop's layout (:mod:`animat.evolve.loop`)."""
        try:
            n = len(arrays["history_generation"])
            history = [{k: cast(arrays[f"history_{k}"][i]) for k, cast in _OLD_HISTORY.items()} for i in range(n)]
            state = {"generation": int(meta["generation"])}
            loop = {
                "state": state,
                "generation": state["generation"],
                "history": history,
                "threshold": meta["threshold"],
                "threshold_hits": meta.get("threshold_hits", []),
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {where!r} lacks or garbles field {exc}") from None
        kept = {k: v for k, v in arrays.items() if not k.startswith("history_")}
        return kept, {
            **{k: v for k, v in meta.items() if k not in ("generation", "threshold", "threshold_hits")},
            **loop,
        }


def check_state(state: PaperGAState, size: int, layers: Sequence[int], where: str) -> None:
    """CheckpointError unless ``state`` holds ``size`` genomes of ``layers`` and a 2-word key."""
    g = network.param_count(layers)
    if state.genes.shape != (size, g) or state.base_key.shape != (2,):
        raise CheckpointError(
            f"checkpoint {where!r} is inconsistent: genes {state.genes.shape} for ({size}, {g}), key "
            f"{state.base_key.shape}"
        )
