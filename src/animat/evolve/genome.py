"""Genome: the architecture plus every parameter of one network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import jax
import numpy as np

from animat.evolve import network


@dataclass(frozen=True)
class Genome:
    """One individual. ``genes``: ``(G,)`` float32, the flat ``W1, b1, W2, b2, ...`` vector.

    ``layers`` e.g. ``(15, 20, 20, 3)``; ``activations`` one name per non-input layer.
    """

    layers: tuple[int, ...]
    genes: np.ndarray
    activations: tuple[str, ...] = field(default=())

    def __post_init__(self):
        layers = network.check_architecture(self.layers)
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "activations", network.layer_activations(layers, self.activations or "tanh"))
        genes = np.asarray(self.genes, dtype=np.float32).reshape(-1)
        if genes.size != network.param_count(layers):
            raise ValueError(
                f"{genes.size} genes do not fit layers {list(layers)} ({network.param_count(layers)} needed)"
            )
        object.__setattr__(self, "genes", genes)

    @classmethod
    def random(
        cls, key: jax.Array, layers: Sequence[int], std: float = 1.0, activations: str | Sequence[str] = "tanh"
    ) -> Genome:
        """Every parameter drawn from N(0, std^2)."""
        return cls(
            tuple(layers),
            np.asarray(network.init_genes(key, 1, layers, std)[0]),
            network.layer_activations(layers, activations),
        )

    @property
    def params(self) -> dict[str, np.ndarray]:
        """Parameter dict ``{"W1": (n1, n0), "b1": (n1, 1), ...}`` (views of ``genes``)."""
        return network.unflatten(self.genes, self.layers)

    def activate(self, X) -> np.ndarray:
        """``X (n_inputs, m) -> (n_outputs, m)``."""
        return np.asarray(network.activate(self.params, np.asarray(X, dtype=np.float32), self.activations))
