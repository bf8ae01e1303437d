"""Training the subspace surrogate through rollouts (Holden et al. 2019, section 4).

Top to bottom: load a dataset -> hold out the last episodes -> PCA of the training frames ->
alpha/beta fit -> normalisation statistics -> AMSGrad on windows of ``window`` frames, batches of
``batch``: the two starting frames get Gaussian noise (std ``noise_frac`` x the mean standard
deviation of the data's first three components), then the network is rolled forward on its own
predictions with ``lax.scan``.

Loss (documented choice): L1 on *decoded* vertex positions and on decoded per-frame vertex
velocities, each averaged over vertices, coordinates, frames and the batch, against the reference
projected into the subspace (so the loss measures only what the network can fix; the PCA floor is
reported separately by ``evaluate``). Positions in metres, velocities in metres per frame,
``loss = L1(pos) + velocity_weight * L1(vel)``.

Learning rate ``lr`` x ``lr_decay`` ** epoch (AMSGrad, ``optax.amsgrad``).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from animat import runs
from animat.config import load_toml
from animat.errors import ConfigError
from animat.surrogate.alpha_beta import fit_alpha_beta
from animat.surrogate.data import Dataset, load_dataset
from animat.surrogate.model import Surrogate, external_input, init_mlp, rollout
from animat.surrogate.subspace import PCA, fit_pca, reconstruction_table


@dataclass(frozen=True)
class TrainConfig:
    data: str = ""
    components: int = 64
    epochs: int = 100
    window: int = 32
    batch: int = 16
    batches_per_epoch: int = 0  # 0: one pass over all windows (at most 200 batches)
    layers: int = 10
    hidden_mult: float = 1.5
    lr: float = 1e-4
    lr_decay: float = 0.999
    noise_frac: float = 0.01
    velocity_weight: float = 1.0
    test_episodes: int = 0  # 0: 10 % of the episodes, at least 1
    pca_samples: int = 4000
    checkpoint_every: int = 10
    seed: int = 0

    @classmethod
    def build(cls, config_file: Optional[str | Path] = None, **options: Any) -> "TrainConfig":
        values: dict[str, Any] = {}
        known = {f.name for f in fields(cls)}
        if config_file is not None:
            loaded = load_toml(config_file)
            loaded = loaded.get("train", loaded)
            unknown = sorted(set(loaded) - known)
            if unknown:
                raise ConfigError(f"unknown train option(s) {unknown} in {str(config_file)!r}; expected some of {sorted(known)}")
            values.update(loaded)
        values.update({k: v for k, v in options.items() if v is not None and k in known})
        cfg = replace(cls(), **values)
        for name in ("components", "epochs", "window", "batch", "layers"):
            if int(getattr(cfg, name)) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(cfg, name)}")
        if cfg.window < 3:
            raise ConfigError(f"window must be >= 3 frames, got {cfg.window}")
        if not cfg.lr > 0:
            raise ConfigError(f"lr must be > 0, got {cfg.lr}")
        return cfg


def split_episodes(n: int, test_episodes: int) -> tuple[list[int], list[int]]:
    """Training and held-out episode indices (the held-out ones are the last)."""
    n_test = int(test_episodes) if test_episodes else max(1, n // 10)
    if n < 2 or not 1 <= n_test < n:
        raise ConfigError(f"need at least one training and one held-out episode; have {n} episodes, test_episodes={test_episodes}")
    return list(range(n - n_test)), list(range(n - n_test, n))


def _windows(lengths: list[int], window: int) -> np.ndarray:
    """(N, 2) array of (episode, start frame) for every full window."""
    rows = [(e, t) for e, T in enumerate(lengths) for t in range(0, T - window + 1)]
    return np.array(rows, np.int64).reshape(-1, 2)


def make_loss(components: jax.Array, window: int, velocity_weight: float) -> Callable:
    """loss(params, stats, Zw (B, window, k), Ww (B, window, w), noise (2, B, k)) -> scalar."""

    def loss_fn(params, stats, Zw, Ww, noise):
        z0 = Zw[:, 0] + noise[0]
        z1 = Zw[:, 1] + noise[1]
        pred = rollout(params, stats, z0, z1, jnp.swapaxes(Ww[:, 2:], 0, 1))  # (T-2, B, k)
        pred = jnp.concatenate([z1[None], pred], axis=0)  # include frame 1 for the first velocity
        true = jnp.swapaxes(Zw[:, 1:], 0, 1)
        err = (pred - true) @ components  # (T-1, B, 3V) decoded error (the mean cancels)
        pos = jnp.abs(err[1:]).mean()
        vel = jnp.abs(err[1:] - err[:-1]).mean()
        return pos + velocity_weight * vel

    return loss_fn


def prepare(cfg: TrainConfig, ds: Dataset) -> dict:
    """PCA, alpha/beta, statistics and encoded episodes for training and testing."""
    train_ids, test_ids = split_episodes(len(ds.X), cfg.test_episodes)
    frames = np.concatenate([ds.X[i] for i in train_ids])
    k_max = min(frames.shape[0], frames.shape[1] * 3)
    if cfg.components > k_max:
        raise ConfigError(f"components={cfg.components} exceeds what {frames.shape[0]} training frames of {frames.shape[1]} vertices allow ({k_max})")
    pca = fit_pca(frames, cfg.components, max_samples=cfg.pca_samples, seed=cfg.seed)
    Z = [pca.encode(x) for x in ds.X]
    W = [external_input(y) for y in ds.Y]
    alpha, beta = fit_alpha_beta([Z[i] for i in train_ids])
    # statistics of the network's input and output, from the teacher-forced training data
    ins, outs = [], []
    for i in train_ids:
        z = Z[i]
        if len(z) < 3:
            continue
        zbar = alpha * z[1:-1] + beta * (z[1:-1] - z[:-2])
        ins.append(np.concatenate([zbar, z[1:-1], W[i][2:]], axis=-1))
        outs.append(z[2:] - zbar)
    ins, outs = np.concatenate(ins), np.concatenate(outs)
    z_train = np.concatenate([Z[i] for i in train_ids])
    stats = {
        "alpha": alpha, "beta": beta,
        "in_mean": ins.mean(0), "in_std": ins.std(0) + 1e-6,
        "out_mean": outs.mean(0), "out_std": outs.std(0) + 1e-6,
    }
    noise_std = float(cfg.noise_frac * z_train[:, : min(3, z_train.shape[1])].std(0).mean())
    return {"pca": pca, "Z": Z, "W": W, "train_ids": train_ids, "test_ids": test_ids, "stats": stats,
            "noise_std": noise_std, "w_dim": int(W[0].shape[1])}


def _gather(Z: list[np.ndarray], W: list[np.ndarray], ids: list[int], idx: np.ndarray, window: int):
    Zw = np.stack([Z[ids[e]][t : t + window] for e, t in idx])
    Ww = np.stack([W[ids[e]][t : t + window] for e, t in idx])
    return Zw, Ww


def train(
    cfg: TrainConfig,
    run_dir: str | Path,
    *,
    scene: Optional[str] = None,
    on_epoch: Optional[Callable[[dict], None]] = None,
) -> dict:
    """Train on dataset ``cfg.data``; writes config.json, pca.npz, checkpoints/, metrics.csv,
    plots/loss.png, summary.json into ``run_dir``; returns the summary."""
    run_dir = Path(run_dir)
    ds = load_dataset(cfg.data, scene)
    prep = prepare(cfg, ds)
    pca: PCA = prep["pca"]
    Z, W, train_ids, test_ids = prep["Z"], prep["W"], prep["train_ids"], prep["test_ids"]
    runs.atomic_write_json(run_dir / "config.json", {**asdict(cfg), "data": str(Path(cfg.data).resolve()), "scene": ds.meta["scene"], "train_episodes": train_ids, "test_episodes": test_ids, "noise_std": prep["noise_std"]})
    pca.save(run_dir / "pca.npz")

    train_win = _windows([len(Z[i]) for i in train_ids], cfg.window)
    test_win = _windows([len(Z[i]) for i in test_ids], cfg.window)
    if len(train_win) == 0 or len(test_win) == 0:
        raise ConfigError(f"episodes are too short for windows of {cfg.window} frames; generate more frames or lower --window")
    rng = np.random.default_rng(cfg.seed)
    test_pick = test_win[rng.choice(len(test_win), min(len(test_win), 64), replace=False)]
    Zt, Wt = _gather(Z, W, test_ids, test_pick, cfg.window)
    train_pick = train_win[rng.choice(len(train_win), min(len(train_win), 64), replace=False)]
    Zf, Wf = _gather(Z, W, train_ids, train_pick, cfg.window)  # fixed training windows, no noise

    k, w_dim = pca.n_components, prep["w_dim"]
    hidden = max(1, int(round(cfg.hidden_mult * k)))
    stats = {name: jnp.asarray(v, jnp.float32) for name, v in prep["stats"].items()}
    params = init_mlp(jax.random.PRNGKey(cfg.seed), 2 * k + w_dim, k, hidden, cfg.layers)
    components = jnp.asarray(pca.components)
    loss_fn = make_loss(components, cfg.window, cfg.velocity_weight)

    per_epoch = cfg.batches_per_epoch or min(200, max(1, math.ceil(len(train_win) / cfg.batch)))
    schedule = optax.exponential_decay(cfg.lr, transition_steps=per_epoch, decay_rate=cfg.lr_decay, staircase=True)
    opt = optax.amsgrad(schedule)
    opt_state = opt.init(params)

    @jax.jit
    def update(params, opt_state, Zw, Ww, noise):
        loss, grads = jax.value_and_grad(loss_fn)(params, stats, Zw, Ww, noise)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    _eval = jax.jit(lambda p, st, Zw, Ww: loss_fn(p, st, Zw, Ww, jnp.zeros((2,) + Zw[:, 0].shape)))
    eval_loss = lambda p, Zw, Ww: _eval(p, stats, Zw, Ww)  # noqa: E731
    alpha_beta_params = {**params, f"W{cfg.layers - 1}": jnp.zeros_like(params[f"W{cfg.layers - 1}"]), f"b{cfg.layers - 1}": jnp.zeros_like(params[f"b{cfg.layers - 1}"])}
    zero_stats_loss = float(_eval(alpha_beta_params, {**stats, "out_mean": jnp.zeros_like(stats["out_mean"])}, Zt, Wt))
    initial_test = float(eval_loss(params, Zt, Wt))
    initial_train = float(eval_loss(params, Zf, Wf))

    model_config = {"components": k, "layers": cfg.layers, "hidden": hidden, "w_dim": w_dim, "scene": ds.meta["scene"]["name"]}
    ckpt_dir = run_dir / "checkpoints"
    rows: list[dict] = []
    start = time.perf_counter()
    noise_key = jax.random.PRNGKey(cfg.seed + 1)
    for epoch in range(cfg.epochs):
        t0 = time.perf_counter()
        losses = []
        for _ in range(per_epoch):
            idx = train_win[rng.integers(0, len(train_win), cfg.batch)]
            Zw, Ww = _gather(Z, W, train_ids, idx, cfg.window)
            noise_key, sub = jax.random.split(noise_key)
            noise = prep["noise_std"] * jax.random.normal(sub, (2, cfg.batch, k))
            params, opt_state, loss = update(params, opt_state, jnp.asarray(Zw), jnp.asarray(Ww), noise)
            losses.append(loss)
        train_loss = float(np.mean([float(x) for x in losses]))
        if not np.isfinite(train_loss):
            raise FloatingPointError(f"training loss became {train_loss} at epoch {epoch}")
        row = {"epoch": epoch, "train_loss_m": train_loss, "test_loss_m": float(eval_loss(params, Zt, Wt)),
               "lr": float(schedule((epoch + 1) * per_epoch - 1)), "seconds": time.perf_counter() - t0}
        rows.append(row)
        runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(row))
        if (epoch + 1) % cfg.checkpoint_every == 0 or epoch + 1 == cfg.epochs:
            Surrogate(params, stats, model_config).save(ckpt_dir, extra={"epoch": epoch + 1, "test_loss_m": row["test_loss_m"]})
        if on_epoch is not None:
            on_epoch(row)

    from animat.viz.plots import series_plot

    epochs = np.arange(1, len(rows) + 1)
    series_plot(epochs, {"train": [r["train_loss_m"] for r in rows], "held-out": [r["test_loss_m"] for r in rows]},
                run_dir / "plots" / "loss.png", ylabel="rollout L1 loss (m)", title=f"surrogate training ({ds.meta['scene']['name']}, k={k})")
    held_frames = np.concatenate([ds.X[i] for i in test_ids])
    table = reconstruction_table(pca, held_frames, sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, k} & set(range(1, k + 1))), ds.side_m)
    summary = {
        "components": k, "hidden": hidden, "layers": cfg.layers, "epochs": cfg.epochs, "batches_per_epoch": per_epoch,
        "train_windows": int(len(train_win)), "initial_test_loss_m": initial_test, "alpha_beta_test_loss_m": zero_stats_loss,
        "initial_train_rollout_loss_m": initial_train, "final_train_rollout_loss_m": float(eval_loss(params, Zf, Wf)),
        "final_train_loss_m": rows[-1]["train_loss_m"], "final_test_loss_m": rows[-1]["test_loss_m"],
        "seconds": time.perf_counter() - start, "noise_std": prep["noise_std"],
        "pca_error_percent_of_size_at_k": table[-1]["mean_error_percent_of_size"],
    }
    runs.atomic_write_csv(run_dir / "pca_table.csv", table, list(table[0]))
    runs.atomic_write_json(run_dir / "summary.json", summary)
    return summary
