"""animat.quaternions (NumPy) and the product it shares with animat.rotations (JAX)."""

import numpy as np

from animat import quaternions as quat


def _random_quats(n, seed=0):
    return quat.normalize(np.random.default_rng(seed).normal(size=(n, 4)))


def _matrix(q):
    """Rotation matrices (n, 3, 3) of unit quaternions, column by column (images of the basis vectors)."""
    return np.stack([quat.rotate(q, np.broadcast_to(e, q.shape[:-1] + (3,))) for e in np.eye(3)], axis=-1)


def test_product_composes_rotations_b_first():
    a, b = _random_quats(50, 1), _random_quats(50, 2)
    np.testing.assert_allclose(_matrix(quat.mul(a, b)), _matrix(a) @ _matrix(b), atol=1e-12)
    np.testing.assert_allclose(quat.mul(a, quat.conj(a)), np.broadcast_to([1.0, 0, 0, 0], a.shape), atol=1e-12)
    assert quat.mul(a.astype(np.float32), b).dtype == np.float64


def test_jax_product_is_the_same_product():
    import jax.numpy as jnp

    from animat.rotations import quat_mul

    a, b = _random_quats(50, 3), _random_quats(50, 4)
    got = np.asarray(quat_mul(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, quat.mul(a, b), atol=1e-6)


def test_exp_log_round_trip_and_angle():
    r = np.random.default_rng(5).uniform(-1.0, 1.0, size=(40, 3)) * 3.0 / np.sqrt(3.0)  # |r| < pi
    np.testing.assert_allclose(quat.log(quat.exp(r)), r, atol=1e-12)
    np.testing.assert_allclose(
        quat.angle_between(quat.exp(np.zeros(3)), quat.exp(r)), np.linalg.norm(r, axis=-1), atol=1e-7
    )
