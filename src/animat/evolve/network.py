"""Fully connected networks as plain parameter dicts (the reference design).

Layers are given as a list such as ``[15, 20, 20, 3]``. Layer ``k >= 1`` has parameters
``W{k}: (n_k, n_{k-1})`` and ``b{k}: (n_k, 1)``; the input layer 0 has none. Forward pass::

    Z[k] = W[k] @ A[k-1] + b[k],   A[k] = g_k(Z[k]),   A[0] = X

``X`` has shape ``(n_inputs, m)``: one column per input set, ``m`` free to change between calls.
A population is the same dict with a leading population axis on every array (``(P, n_k, n_{k-1})``),
and the flat gene vector of one network is the concatenation of ``W1, b1, W2, b2, ...`` in row-major
order, so ``(P, G)`` genes and the stacked tree convert both ways without copies of logic.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from animat.config import require
from animat.errors import ConfigError

ACTIVATIONS = {
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "relu": jax.nn.relu,
}

Params = dict[str, jax.Array]


def check_architecture(layers: Sequence[int]) -> tuple[int, ...]:
    """Validate ``layers`` (at least input and output, all positive ints) and return it as a tuple."""
    if (
        isinstance(layers, (str, bytes))
        or not isinstance(layers, (Sequence, np.ndarray))
        or len(layers) < 2
        or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0 for n in layers)
    ):
        raise ConfigError(f"network layers must be a list of at least 2 positive integer sizes, got {layers!r}")
    return tuple(int(n) for n in layers)


def layer_activations(layers: Sequence[int], activations: str | Sequence[str]) -> tuple[str, ...]:
    """One activation name per non-input layer: a single name applies to every layer."""
    n = len(layers) - 1
    if not isinstance(activations, (str, Sequence)):
        raise ConfigError(f"activations must be a name or a list of names, got {activations!r}")
    names = (activations,) * n if isinstance(activations, str) else tuple(activations)
    if len(names) != n:
        raise ConfigError(f"need {n} activations for layers {list(layers)}, got {len(names)}")
    for name in names:
        require("activation", name, choices=sorted(ACTIVATIONS))
    return names


def param_shapes(layers: Sequence[int]) -> list[tuple[str, tuple[int, int]]]:
    """``[("W1", (n1, n0)), ("b1", (n1, 1)), ...]`` in gene order."""
    shapes = []
    for k in range(1, len(layers)):
        shapes.append((f"W{k}", (layers[k], layers[k - 1])))
        shapes.append((f"b{k}", (layers[k], 1)))
    return shapes


def param_count(layers: Sequence[int]) -> int:
    """Number of genes (weights + biases) of one network."""
    return sum(a * b for _, (a, b) in param_shapes(layers))


def unflatten(genes: jax.Array, layers: Sequence[int]) -> Params:
    """Flat genes ``(..., G)`` -> parameter dict with arrays ``(..., n_k, n_{k-1})``; leading axes kept."""
    lead = genes.shape[:-1]
    if genes.shape[-1] != param_count(layers):
        raise ConfigError(f"{genes.shape[-1]} genes do not fit layers {list(layers)} ({param_count(layers)} needed)")
    params, i = {}, 0
    for name, (a, b) in param_shapes(layers):
        params[name] = genes[..., i : i + a * b].reshape(*lead, a, b)
        i += a * b
    return params


def flatten(params: Params, layers: Sequence[int]) -> jax.Array:
    """Inverse of :func:`unflatten`: parameter dict (optionally batched) -> ``(..., G)``."""
    parts = []
    for name, (a, b) in param_shapes(layers):
        arr = params[name]
        parts.append(arr.reshape(*arr.shape[:-2], a * b))
    xp = np if all(isinstance(p, np.ndarray) for p in parts) else jnp
    return xp.concatenate(parts, axis=-1)


def widen_inputs(genes: np.ndarray, layers: Sequence[int], extra: int) -> np.ndarray:
    """Genes ``(..., G)`` of networks ``layers`` as genes of the network with ``extra`` more inputs after
    their own (layers ``[n0 + extra, n1, ...]``), weighted zero: the wider network computes exactly what
    the narrower one did, whatever the new inputs hold (a goal network started from a hover network: it
    flies as the hover network until evolution gives the command inputs weight)."""
    params = unflatten(np.asarray(genes, dtype=np.float32), layers)
    w1 = params["W1"]
    params["W1"] = np.concatenate([w1, np.zeros((*w1.shape[:-1], int(extra)), np.float32)], axis=-1)
    return flatten(params, [int(layers[0]) + int(extra), *layers[1:]])


def activate(params: Params, X: jax.Array, activations: str | Sequence[str] = "tanh") -> jax.Array:
    """Forward pass of one network: ``X (n_inputs, m) -> (n_outputs, m)``. Jittable."""
    n_layers = len(params) // 2
    names = (activations,) * n_layers if isinstance(activations, str) else tuple(activations)
    A = X
    for k in range(1, n_layers + 1):
        A = ACTIVATIONS[names[k - 1]](params[f"W{k}"] @ A + params[f"b{k}"])
    return A


def activate_population(params: Params, X: jax.Array, activations: str | Sequence[str] = "tanh") -> jax.Array:
    """Batched forward pass over a leading population axis.

    ``params`` arrays ``(P, n_k, n_{k-1})``; ``X`` either ``(n_inputs, m)`` (shared by all) or
    ``(P, n_inputs, m)`` (one input set per individual). Returns ``(P, n_outputs, m)``.
    """
    in_axis = 0 if X.ndim == 3 else None
    return jax.vmap(lambda p, x: activate(p, x, activations), in_axes=(0, in_axis))(params, X)


def init_genes(key: jax.Array, size: int, layers: Sequence[int], std: float) -> jax.Array:
    """``(size, G)`` float32 genes, every weight and bias drawn from N(0, std^2)."""
    return std * jax.random.normal(key, (size, param_count(layers)), dtype=jnp.float32)
