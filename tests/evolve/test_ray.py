"""Ray evaluation backend: same fitnesses as local, survives a killed worker, factory errors."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from animat.errors import ConfigError  # noqa: E402
from animat.evolve import network  # noqa: E402
from animat.evolve.evaluate import LocalEvaluator, RayEvaluator, make_evaluator  # noqa: E402

# Workers cannot import this test module (pytest puts tests/evolve on sys.path only in the driver),
# so ship its functions by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

LAYERS = (3, 5, 2)
ACTS = ("tanh", "tanh")
P = 37  # uneven chunks on 2 workers


@pytest.fixture(scope="module")
def ray_local():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def genes():
    return np.asarray(network.init_genes(jax.random.PRNGKey(0), P, LAYERS, 1.0))


_X = np.linspace(-1.0, 1.0, 3 * 4, dtype=np.float32).reshape(3, 4)


@jax.jit
def _batched_eval(params):
    return jnp.sum(network.activate_population(params, jnp.asarray(_X), ACTS), axis=(1, 2))


def batched_fitness(params):
    return np.asarray(_batched_eval(params))


def genome_fitness(genomes):
    """Per-genome, plain NumPy forward pass: bit-for-bit independent of the chunking."""
    out = []
    for g in genomes:
        a = _X
        for k in range(1, len(g.layers)):
            a = np.tanh(g.params[f"W{k}"] @ a + g.params[f"b{k}"])
        out.append(float(a.sum()))
    return out


def killing_fitness(marker: str):
    """Per-genome fitness that kills its own worker the first time any chunk runs it."""

    def fitness(genomes):
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return genome_fitness(genomes)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        os._exit(1)  # worker dies mid-generation: a system failure, Ray retries the task

    return fitness


def always_dies(genomes):
    os._exit(1)


def raises(genomes):
    raise ValueError("bad genome")


def test_batched_matches_local(ray_local, genes):
    local = LocalEvaluator(batched_fitness, LAYERS, ACTS, batched=True)(genes)
    ev = RayEvaluator(batched_fitness, LAYERS, ACTS, batched=True)
    try:
        assert ev.chunks == 2
        got = ev(genes)
        # XLA may round differently for different batch sizes; chunking changes the batch size.
        np.testing.assert_allclose(got, local, rtol=1e-6, atol=1e-6)
        assert got.dtype == np.float64 and got.shape == (P,)
        np.testing.assert_array_equal(ev(genes), got)  # deterministic across generations
    finally:
        ev.close()
    assert ray.is_initialized()  # not ours to shut down


def test_per_genome_matches_local_exactly(ray_local, genes):
    local = LocalEvaluator(genome_fitness, LAYERS, ACTS, batched=False)(genes)
    for chunks in (2, 5):
        ev = RayEvaluator(genome_fitness, LAYERS, ACTS, batched=False, chunks=chunks)
        try:
            np.testing.assert_array_equal(ev(genes), local)
        finally:
            ev.close()


def test_killed_worker_does_not_change_result(ray_local, genes, tmp_path):
    marker = tmp_path / "killed"
    local = LocalEvaluator(genome_fitness, LAYERS, ACTS, batched=False)(genes)
    ev = RayEvaluator(killing_fitness(str(marker)), LAYERS, ACTS, batched=False, chunks=3, max_retries=3)
    try:
        got = ev(genes)
    finally:
        ev.close()
    assert marker.exists(), "the worker was never killed"
    assert int(marker.read_text()) != os.getpid()
    np.testing.assert_array_equal(got, local)


def test_chunk_failing_after_retries_raises(ray_local, genes):
    ev = RayEvaluator(always_dies, LAYERS, ACTS, batched=False, chunks=1, max_retries=0)
    try:
        with pytest.raises(RuntimeError, match=r"genomes \[0, 37\) failed after 0 retries"):
            ev(genes)
    finally:
        ev.close()


def test_fitness_exception_propagates(ray_local, genes):
    ev = RayEvaluator(raises, LAYERS, ACTS, batched=False)
    try:
        with pytest.raises(ValueError, match="bad genome"):
            ev(genes)
    finally:
        ev.close()


def test_make_evaluator(ray_local, genes):
    assert isinstance(make_evaluator(genome_fitness, LAYERS, ACTS, False), LocalEvaluator)
    ev = make_evaluator(genome_fitness, LAYERS, ACTS, False, backend="ray", num_workers=2)
    try:
        assert isinstance(ev, RayEvaluator) and ev.chunks == 2
    finally:
        ev.close()
    with pytest.raises(ConfigError, match=r"'dask'.*\['local', 'ray'\]"):
        make_evaluator(genome_fitness, LAYERS, ACTS, False, backend="dask")


def test_unreachable_address_fails_fast():
    from animat.parallel import probe_address

    t0 = time.monotonic()
    with pytest.raises(ConfigError, match="127.0.0.1:1"):
        probe_address("127.0.0.1:1", timeout_s=2.0)
    with pytest.raises(ConfigError, match="ray://127.0.0.1:1"):
        probe_address("ray://127.0.0.1:1", timeout_s=2.0)
    assert time.monotonic() - t0 < 5.0


def test_missing_ray_is_a_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'animat\[distributed\]'"):
        RayEvaluator(genome_fitness, LAYERS, ACTS, batched=False)


_OWN_RAY_SCRIPT = """
import time, numpy as np, ray
from animat.errors import ConfigError
from animat.evolve.evaluate import RayEvaluator
t0 = time.monotonic()
try:
    RayEvaluator(lambda gs: [0.0] * len(gs), (2, 1), ("tanh",), False, address="127.0.0.1:1")
except ConfigError as e:
    assert "127.0.0.1:1" in str(e) and "\\n" not in str(e), e
else:
    raise SystemExit("no ConfigError")
assert time.monotonic() - t0 < 10 and not ray.is_initialized()
ev = RayEvaluator(lambda gs: [float(g.genes.sum()) for g in gs], (2, 1), ("tanh",), False, num_workers=1)
genes = np.arange(15, dtype=np.float32).reshape(5, 3)
assert ray.is_initialized() and ev.chunks == 1
assert ev(genes).tolist() == genes.sum(1).tolist()
ev.close()
assert not ray.is_initialized(), "close() must shut down the Ray it started"
print("OK")
"""


def test_own_instance_and_unreachable_address():
    """In a fresh interpreter: a bad address fails fast; a Ray we start is shut down by close()."""
    import subprocess

    res = subprocess.run([sys.executable, "-c", _OWN_RAY_SCRIPT], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr[-3000:]
