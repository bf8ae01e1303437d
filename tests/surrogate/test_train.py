import jax.numpy as jnp
import numpy as np

from animat import runs
from animat.surrogate.evaluate import evaluate
from animat.surrogate.model import Surrogate, alpha_beta_rollout, init_mlp, rollout
from animat.surrogate.train import TrainConfig, train

import jax


def test_zero_network_is_alpha_beta_and_checkpoint_round_trip(tmp_path):
    k, w = 4, 6
    params = init_mlp(jax.random.PRNGKey(0), 2 * k + w, k, 6, 3)
    params = {n: jnp.zeros_like(v) if n in ("W2", "b2") else v for n, v in params.items()}
    stats = {"alpha": jnp.full(k, 0.9), "beta": jnp.full(k, 0.5), "in_mean": jnp.zeros(2 * k + w), "in_std": jnp.ones(2 * k + w),
             "out_mean": jnp.zeros(k), "out_std": jnp.ones(k)}
    z0, z1, W = jnp.ones(k), 2 * jnp.ones(k), jnp.zeros((10, w))
    assert np.allclose(rollout(params, stats, z0, z1, W), alpha_beta_rollout(stats, z0, z1, 10), atol=1e-6)
    Surrogate(params, stats, {"components": k}).save(tmp_path)
    loaded = Surrogate.load(tmp_path)
    assert all(np.array_equal(loaded.params[n], params[n]) for n in params)


def test_short_training_lowers_rollout_loss_and_evaluates(tiny_dataset, tmp_path):
    data, _ = tiny_dataset
    cfg = TrainConfig.build(None, data=str(data), components=8, epochs=8, batches_per_epoch=10, layers=4, window=12,
                            lr=1e-3, test_episodes=1, checkpoint_every=4)
    summary = train(cfg, tmp_path / "train")
    assert summary["final_train_rollout_loss_m"] < summary["initial_train_rollout_loss_m"]
    rows = (tmp_path / "train" / "metrics.csv").read_text().splitlines()
    assert len(rows) == 9
    assert (tmp_path / "train" / "plots" / "loss.png").stat().st_size > 0
    assert runs.read_json(tmp_path / "train" / "checkpoints" / "model.json")["epoch"] == 8
    ev = evaluate(tmp_path / "train", tmp_path / "eval", horizon=30, stability_frames=2000, video=True)
    assert ev["segments"] == 2
    assert ev["stability_frames"] == 2000 and isinstance(ev["stable"], bool)
    assert (tmp_path / "eval" / "media" / "rollout.gif").stat().st_size > 0
    assert (tmp_path / "eval" / "plots" / "rollout_error.png").stat().st_size > 0
    for key in ("surrogate_error_percent_of_size", "alpha_beta_error_percent_of_size", "pca_floor_error_percent_of_size", "surrogate_seconds_per_frame"):
        assert np.isfinite(ev[key]) and ev[key] >= 0
    assert ev["pca_floor_error_percent_of_size"] <= ev["surrogate_error_percent_of_size"] + 1e-6
