"""Network layout and forward pass against a NumPy reference (with biases, which the original forgot)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve import network
from animat.evolve.genome import Genome

LAYERS = [15, 20, 20, 3]


def _np_forward(params, X, names):
    acts = {"tanh": np.tanh, "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)), "relu": lambda z: np.maximum(z, 0.0)}
    A = X.astype(np.float64)
    for k in range(1, len(names) + 1):
        A = acts[names[k - 1]](params[f"W{k}"].astype(np.float64) @ A + params[f"b{k}"].astype(np.float64))
    return A


def test_param_count_and_shapes():
    assert network.param_count(LAYERS) == 15 * 20 + 20 + 20 * 20 + 20 + 20 * 3 + 3 == 803
    genes = network.init_genes(jax.random.PRNGKey(0), 4, LAYERS, 1.0)
    assert genes.shape == (4, 803) and genes.dtype == jnp.float32
    params = network.unflatten(genes, LAYERS)
    assert params["W1"].shape == (4, 20, 15) and params["b1"].shape == (4, 20, 1)
    assert params["W3"].shape == (4, 3, 20) and params["b3"].shape == (4, 3, 1)


def test_flatten_unflatten_round_trip():
    genes = np.random.default_rng(0).normal(size=(5, 803)).astype(np.float32)
    back = network.flatten(network.unflatten(genes, LAYERS), LAYERS)
    np.testing.assert_array_equal(np.asarray(back), genes)
    jback = network.flatten(network.unflatten(jnp.asarray(genes), LAYERS), LAYERS)
    np.testing.assert_array_equal(np.asarray(jback), genes)
    # gene order is W1 (row-major), b1, W2, ...
    p = network.unflatten(genes[0], LAYERS)
    np.testing.assert_array_equal(p["W1"][1, 2], genes[0, 1 * 15 + 2])
    np.testing.assert_array_equal(p["b1"][:, 0], genes[0, 300:320])


def test_unflatten_wrong_size_raises():
    with pytest.raises(ConfigError):
        network.unflatten(np.zeros(804, np.float32), LAYERS)
    with pytest.raises(ConfigError):  # too few genes
        network.unflatten(np.zeros(802, np.float32), LAYERS)


@pytest.mark.parametrize("m", [1, 7])
def test_activate_closed_form_with_biases(m):
    rng = np.random.default_rng(1)
    genome = Genome(tuple(LAYERS), rng.normal(size=803).astype(np.float32))
    X = rng.normal(size=(15, m)).astype(np.float32)
    out = genome.activate(X)
    assert out.shape == (3, m)
    ref = _np_forward(genome.params, X, ("tanh",) * 3)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    # biases matter: dropping them changes the output
    no_bias = {k: (np.zeros_like(v) if k.startswith("b") else v) for k, v in genome.params.items()}
    assert not np.allclose(ref, _np_forward(no_bias, X, ("tanh",) * 3), atol=1e-3)


def test_zero_weights_output_is_activation_of_bias():
    layers = [2, 3]
    genes = np.zeros(network.param_count(layers), np.float32)
    genes[-3:] = [0.5, -1.0, 2.0]
    out = Genome((2, 3), genes, ("sigmoid",)).activate(np.ones((2, 4)))
    np.testing.assert_allclose(out, np.tile(1 / (1 + np.exp(-np.array([[0.5], [-1.0], [2.0]]))), (1, 4)), rtol=1e-6)


def test_per_layer_activations():
    rng = np.random.default_rng(2)
    names = ("relu", "sigmoid", "tanh")
    genome = Genome(tuple(LAYERS), rng.normal(size=803).astype(np.float32), names)
    assert genome.activations == names
    X = rng.normal(size=(15, 9)).astype(np.float32)
    np.testing.assert_allclose(genome.activate(X), _np_forward(genome.params, X, names), rtol=1e-4, atol=1e-5)
    sig_out = Genome(tuple(LAYERS), genome.genes, ("tanh", "tanh", "sigmoid")).activate(X)
    assert np.all((sig_out > 0) & (sig_out < 1))
    relu_out = Genome(tuple(LAYERS), genome.genes, ("tanh", "tanh", "relu")).activate(X)
    assert np.all(relu_out >= 0) and np.any(relu_out == 0)


def test_bad_activation_and_layers():
    with pytest.raises(ConfigError):
        network.layer_activations(LAYERS, "swish")
    with pytest.raises(ConfigError):
        network.layer_activations(LAYERS, ("tanh", "relu"))
    with pytest.raises(ConfigError):
        network.check_architecture([3])


def test_activate_population_matches_single():
    rng = np.random.default_rng(3)
    genes = rng.normal(size=(6, 803)).astype(np.float32)
    X = rng.normal(size=(15, 4)).astype(np.float32)
    batched = np.asarray(network.activate_population(network.unflatten(jnp.asarray(genes), LAYERS), jnp.asarray(X)))
    assert batched.shape == (6, 3, 4)
    for i in range(6):
        np.testing.assert_allclose(batched[i], Genome(tuple(LAYERS), genes[i]).activate(X), rtol=1e-5, atol=1e-6)
    Xp = rng.normal(size=(6, 15, 4)).astype(np.float32)
    per = np.asarray(network.activate_population(network.unflatten(jnp.asarray(genes), LAYERS), jnp.asarray(Xp)))
    np.testing.assert_allclose(per[2], Genome(tuple(LAYERS), genes[2]).activate(Xp[2]), rtol=1e-5, atol=1e-6)


def test_init_genes_std():
    genes = np.asarray(network.init_genes(jax.random.PRNGKey(0), 100, LAYERS, 0.5))
    assert abs(genes.mean()) < 0.01
    assert abs(genes.std() - 0.5) < 0.01
    assert np.abs(genes).max() < 0.5 * 6  # Gaussian, not uniform +-30


def test_widened_networks_compute_what_the_narrow_ones_did_whatever_the_new_inputs():
    """widen_inputs: 3 more inputs weighted zero; the outputs are the narrow network's (to float rounding: the
    sums run over more terms) for any values on them, every other gene is kept, and a population's rows widen alike."""
    genes = np.asarray(network.init_genes(jax.random.PRNGKey(1), 4, LAYERS, 1.0))
    wide = network.widen_inputs(genes, LAYERS, 3)
    wide_layers = [18, *LAYERS[1:]]
    assert wide.shape == (4, network.param_count(wide_layers)) and wide.dtype == np.float32
    X = np.random.default_rng(0).normal(size=(15, 7)).astype(np.float32)
    extra = np.random.default_rng(1).normal(0.0, 5.0, (3, 7)).astype(np.float32)
    for k in range(4):
        narrow = Genome(tuple(LAYERS), genes[k], "tanh").activate(X)
        widened = Genome(tuple(wide_layers), wide[k], "tanh")
        np.testing.assert_allclose(widened.activate(np.vstack([X, extra])), narrow, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(widened.params["W1"][:, 15:], 0.0)
        np.testing.assert_array_equal(widened.params["W1"][:, :15], network.unflatten(genes[k], LAYERS)["W1"])
    np.testing.assert_array_equal(network.widen_inputs(genes, LAYERS, 0), genes)
