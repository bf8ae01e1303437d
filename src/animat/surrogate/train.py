"""Training the subspace surrogate through rollouts (Holden et al. 2019, section 4).

Top to bottom: load a dataset -> hold out the last episodes -> PCA of the training frames ->
alpha/beta fit -> normalisation statistics -> AMSGrad on windows of ``window`` frames, batches of
``batch``: the two starting frames get Gaussian noise (std ``noise_frac`` x the mean standard
deviation of the data's first three components; the two frames' draws correlated by
``noise_correlation``), then the network is rolled forward on its own predictions with ``lax.scan``.
Independent draws (correlation 0) perturb the velocity ``z1 - z0`` by sqrt(2) x that std per
component, often more than the velocities in the data; correlation 1 perturbs only the pose.

Loss (as in the paper): L1 on the subspace positions and on their per-frame velocities, each
averaged over components, frames and the batch, against the reference encoded into the subspace.
The basis is orthonormal, so the subspace error has the Euclidean norm of the decoded vertex error
(metres); this is much cheaper than decoding every frame of every window (k numbers a frame against 3V).
The PCA floor is
reported separately by ``evaluate``. ``loss = L1(pos) + velocity_weight * L1(vel)``.

Deviations from the paper's recipe, each an option (off by default, so earlier runs resume with
the same draws) with the measurement behind it in the configs: ``motion_weighting`` draws training
windows with probability rising with the cloth's motion (:mod:`animat.surrogate.windows`; with holds
in the data about a third of the windows are cloth at rest, where alpha/beta is already right);
``alpha_beta_frames = "still"`` fits alpha/beta on the frames where the external objects stand
still, i.e. on the cloth's free motion (fitted on every frame the sphere's pushes are absorbed into
the coefficients and the first component is left undamped); ``long_window`` frames per window
for the last ``long_epochs`` epochs (a curriculum: 32-frame windows never show the network the
seconds over which cloth comes to rest); ``settle_probes`` keeps the best validation epoch among
those that settle when the external objects stop on random paths (:mod:`animat.surrogate.settle`);
``cloth_frame = "azimuth"`` (the flag) models the cloth in its own frame, its azimuth about the pole a
state entry (:mod:`animat.surrogate.frame`; it lowers the flag's held-out error, but the cloth creeps about
the pole in still air); ``rest_weight`` adds a loss on the motion the model keeps ``rest_seconds`` after the
external objects stop (:mod:`animat.surrogate.rest`); ``input_noise_frac`` adds noise to the external input of
the training windows (:func:`input_noise`). Their measured effects are in RESULTS.md (learned cloth).

Episodes split into [train | validation | held-out test] (the last ones held out, or shuffled first
with ``split_seed``). The checkpoint kept in ``checkpoints/`` is the epoch with the lowest rollout
loss on ``val_windows`` evenly spaced validation windows of ``val_window`` frames (default 256 of
120, evaluate's horizon: the selection then scores what the evaluation scores, drift included,
unweighted as the evaluation is; the training windows when there are no validation episodes);
``checkpoints/last/`` holds the latest epoch as one
checkpoint (:func:`animat.checkpoint.save_checkpoint`, ``last/checkpoints/gen-<epoch>`` and its
``latest.json``: network, statistics, optimiser state and random-number state, verified by sha256), from which
``--resume`` continues exactly with the run's saved PCA basis, split and normals regression.

Learning rate ``lr`` x ``lr_decay`` ** epoch (AMSGrad, ``optax.amsgrad``; with ``weight_decay`` > 0 the
decoupled weight decay of AdamW (Loshchilov & Hutter 2019) is added to AMSGrad's step).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from animat import runs
from animat.errors import CheckpointError
from animat.surrogate.data import Dataset, load_dataset
from animat.surrogate.model import Surrogate, alpha_beta_only, init_mlp, rollout
from animat.surrogate.normals import angle_degrees, vertex_normals
from animat.surrogate.options import TrainConfig
from animat.surrogate.rest import make_lead, rest_loss, start_states
from animat.surrogate.scenes import scene_from_dict
from animat.surrogate.settle import SETTLE_LIMIT, make_probe, probe_inputs
from animat.surrogate.subspace import PCA, reconstruction_table
from animat.surrogate.train_state import Baselines, Best, Learner, TrainState, load_last, save_last
from animat.surrogate.training_data import TrainingData, Windows
from animat.surrogate.windows import gather

LAST = "last"  # checkpoints/last/: the latest epoch plus optimiser state, one checkpoint, for --resume


def make_loss(velocity_weight: float) -> Callable:
    """loss(params, stats, Zw (B, window, k), Ww (B, window, w), noise (2, B, k)) -> scalar (m)."""

    def loss_fn(params, stats, Zw, Ww, noise):
        z0 = Zw[:, 0] + noise[0]
        z1 = Zw[:, 1] + noise[1]
        pred = rollout(params, stats, z0, z1, jnp.swapaxes(Ww[:, 2:], 0, 1))  # (T-2, B, k)
        pred = jnp.concatenate([z1[None], pred], axis=0)  # include frame 1 for the first velocity
        err = pred - jnp.swapaxes(Zw[:, 1:], 0, 1)  # (T-1, B, k)
        pos = jnp.abs(err[1:]).mean()
        vel = jnp.abs(err[1:] - err[:-1]).mean()
        return pos + velocity_weight * vel

    return loss_fn


def optimizer(schedule: Callable | float, weight_decay: float = 0.0) -> optax.GradientTransformation:
    """AMSGrad (``optax.amsgrad``, the paper's optimiser); with ``weight_decay`` > 0 each step also
    subtracts ``lr x weight_decay x`` the parameters, the decoupled weight decay of AdamW
    (Loshchilov & Hutter 2019, "Decoupled weight decay regularization")."""
    if not weight_decay:
        return optax.amsgrad(schedule)
    return optax.chain(
        optax.scale_by_amsgrad(), optax.add_decayed_weights(weight_decay), optax.scale_by_learning_rate(schedule)
    )


def start_noise(key: jax.Array, std: float, batch: int, k: int, correlation: float = 0.0) -> jax.Array:
    """(2, batch, k) Gaussian noise of std ``std`` for the two starting frames of each window, the
    frames' draws with correlation ``correlation`` (rho): the velocity noise then has std
    ``std * sqrt(2 (1 - rho))`` (rho = 0: independent, sqrt(2) std; rho = 1: the same offset twice)."""
    xi = jax.random.normal(key, (2, batch, k))
    rho = float(correlation)
    return std * jnp.stack([rho * xi[1] + np.sqrt(1.0 - rho * rho) * xi[0], xi[1]])


def input_noise(key: jax.Array, Ww: np.ndarray, std: jax.Array) -> jax.Array:
    """The windows' external inputs ``Ww`` (B, window, w) with independent Gaussian noise of std ``std`` (w,) on
    every frame: the network cannot lean on the exact input of a motion it was trained on (the noise injection of
    Sanchez-Gonzalez et al. 2020, "Learning to simulate complex physics with graph networks", section 4, applied
    to the external input)."""
    return jnp.asarray(Ww) + std * jax.random.normal(key, np.shape(Ww), jnp.float32)


def normals_error_degrees(R: np.ndarray, pca: PCA, X: np.ndarray, triangles: np.ndarray) -> dict:
    """Angle between regressed normals (from the encoded frames) and exact normals of X (T, V, 3)."""
    angle = angle_degrees(pca.normals(R, pca.encode(X)), vertex_normals(X, triangles))
    return {"normals_mean_error_deg": float(angle.mean()), "normals_p95_error_deg": float(np.percentile(angle, 95))}


def model_megabytes(surrogate: Surrogate, pca: PCA, normals: np.ndarray) -> float:
    """Stored model size, MB (issue 5 item 4): network parameters + statistics + PCA basis and mean + the
    full-rank normals regression. The per-frame runtime keeps a rank-r factorization of the regression
    instead (:attr:`animat.surrogate.runtime.Runtime.megabytes`, reported by benchmarks/surrogate_speed.py)."""
    arrays = [*surrogate.params.values(), *surrogate.stats.values(), pca.components, pca.mean, normals]
    return float(sum(np.asarray(a).nbytes for a in arrays) / 1e6)


def _make_update(loss_fn: Callable, stats: dict, opt: optax.GradientTransformation, rest_weight: float) -> Callable:
    """The jitted step ``update(params, opt_state, Zw, Ww, noise, rest=None) -> (params, opt_state, loss)``;
    ``rest``: the coming-to-rest term's states, weighted by ``rest_weight``."""

    def total_loss(params, Zw, Ww, noise, rest):
        loss = loss_fn(params, stats, Zw, Ww, noise)
        return loss if rest is None else loss + rest_weight * rest_loss(params, stats, *rest)

    @jax.jit
    def update(params, opt_state, Zw, Ww, noise, rest=None):
        loss, grads = jax.value_and_grad(total_loss)(params, Zw, Ww, noise, rest)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return update


@dataclass
class Trainer:
    """What stays fixed through a run: its options, directory, dataset (and its scene), training data and windows; the
    network's statistics (``stats``, as JAX arrays), hidden width and ``model_config``; the schedule
    (``per_epoch`` batches, learning rate ``schedule(step)``), the jitted ``update`` and ``loss(params,
    stats, Zw, Ww)`` (no noise); with settle probes ``probe(params)``; with a rest weight ``lead`` and
    ``rest_motion`` (:mod:`animat.surrogate.rest`)."""

    cfg: TrainConfig
    run_dir: Path
    ds: Dataset
    scene: Any
    data: TrainingData
    windows: Windows
    stats: dict
    hidden: int
    model_config: dict
    per_epoch: int
    schedule: Callable
    update: Callable
    loss: Callable
    probe: Callable | None = None
    lead: Callable | None = None
    rest_motion: Callable | None = None

    @property
    def ckpt_dir(self) -> Path:
        return self.run_dir / "checkpoints"

    def eval_loss(self, params: dict, windows: tuple) -> float:
        """Rollout loss (m) of ``params`` on ``windows`` ``(Zw, Ww)``, without noise."""
        return float(self.loss(params, self.stats, *windows))


def setup(
    cfg: TrainConfig, run_dir: Path, scene: str | None = None, resume: bool = False
) -> tuple[Trainer, Learner, TrainState]:
    """Everything a run needs before its first epoch: a new run's training data fitted and saved, or with
    ``resume`` the run in ``run_dir`` restored from ``checkpoints/last/`` (refused when it has done
    ``cfg.epochs`` already)."""
    ds = load_dataset(cfg.data, scene)
    if resume:
        saved, saved_meta = load_last(run_dir / "checkpoints" / LAST)
        runs.refuse_finished(run_dir, int(saved_meta["state"]["epoch"]), cfg.epochs, "epochs", "--epochs")
        data = TrainingData.load(cfg, run_dir, ds, saved["stat"])
    else:
        data = TrainingData.fit(cfg, ds)
        data.save(run_dir, cfg, ds)
    rng = np.random.default_rng(cfg.seed)
    windows = Windows.make(cfg, data, rng)
    trainer, params, opt_state = _trainer(cfg, run_dir, ds, data, windows)
    loss, stats = trainer.loss, trainer.stats
    baseline = alpha_beta_only(Surrogate(params, stats, {}))
    if resume:
        learner, state = _restored(trainer, saved, saved_meta, params, opt_state, rng)
    else:
        learner = Learner(params, opt_state, jax.random.PRNGKey(cfg.seed + 1), rng)
        held = float(loss(baseline.params, baseline.stats, *windows.held))
        state = TrainState(
            0,
            0.0,
            [],
            Baselines(trainer.eval_loss(params, windows.held), trainer.eval_loss(params, windows.fixed_train), held),
        )
    if state.baselines.alpha_beta_select_loss_m is None:
        state.baselines.alpha_beta_select_loss_m = float(loss(baseline.params, baseline.stats, *windows.select))
    _add_checks(trainer, state)
    return trainer, learner, state


def _trainer(cfg: TrainConfig, run_dir: Path, ds: Dataset, data: TrainingData, windows: Windows):
    """``(trainer, params, optimiser state)``: the run's fixed parts (:class:`Trainer`: the residual network's
    size and statistics, the learning-rate schedule of ``per_epoch`` batches, the jitted update and loss) and the
    network's initial parameters (seed ``cfg.seed``) and optimiser state."""
    k, w_dim = data.pca.state_dim, data.w_dim  # k: the state's size (the subspace's, + 1 with a frame)
    hidden = max(1, int(round(cfg.hidden_mult * data.pca.n_components)))
    stats = {name: jnp.asarray(v, jnp.float32) for name, v in data.stats.items()}
    params = init_mlp(jax.random.PRNGKey(cfg.seed), 2 * k + w_dim, k, hidden, cfg.layers)
    loss_fn = make_loss(cfg.velocity_weight)
    per_epoch = cfg.batches_per_epoch or min(200, max(1, math.ceil(len(windows.train) / cfg.batch)))
    schedule = optax.exponential_decay(cfg.lr, transition_steps=per_epoch, decay_rate=cfg.lr_decay, staircase=True)
    opt = optimizer(schedule, cfg.weight_decay)
    opt_state = opt.init(params)
    loss = jax.jit(lambda p, st, Zw, Ww: loss_fn(p, st, Zw, Ww, jnp.zeros((2,) + Zw[:, 0].shape)))
    model_config = {
        "components": k,
        "layers": cfg.layers,
        "hidden": hidden,
        "w_dim": w_dim,
        "scene": ds.meta["scene"]["name"],
    }
    sc = scene_from_dict(ds.meta["scene"])
    update = _make_update(loss_fn, stats, opt, cfg.rest_weight)
    trainer = Trainer(
        cfg, run_dir, ds, sc, data, windows, stats, hidden, model_config, per_epoch, schedule, update, loss
    )
    return trainer, params, opt_state


def _add_checks(trainer: Trainer, state: TrainState) -> None:
    """The trainer's settle probes (``settle_probes``: the best epoch only among those that settle) and
    coming-to-rest term (``rest_weight``), where the options ask for them."""
    cfg, data, stats, sc = trainer.cfg, trainer.data, trainer.stats, trainer.scene
    if cfg.settle_probes:
        start = data.Z[(data.val_ids or data.train_ids)[0]]
        trainer.probe = make_probe(stats, probe_inputs(sc, cfg.settle_probes), start[0], start[1], sc.fps)
        if state.best.settle_ratio is None:
            state.best.settle_ratio = float("inf")
    if cfg.rest_weight:
        trainer.lead = make_lead(stats, int(round(cfg.rest_seconds * sc.fps)))
        trainer.rest_motion = jax.jit(lambda p, rest: rest_loss(p, stats, *rest))


def _restored(trainer: Trainer, saved: dict, saved_meta: dict, params, opt_state, rng) -> tuple[Learner, TrainState]:
    """The learner and the training state of ``checkpoints/last/`` (``saved``, ``saved_meta``), checked against
    this configuration's network ``params`` and optimiser state; ``rng`` continues where the run left it."""
    treedef = jax.tree_util.tree_structure(opt_state)
    if treedef.num_leaves != len(saved["opt"]) or set(saved["param"]) != set(params):
        raise CheckpointError(
            f"{str(trainer.ckpt_dir / LAST)!r} does not match this configuration (network or optimiser differ)"
        )
    meta = dict(saved_meta["state"])
    rng.bit_generator.state = meta.pop("rng")
    learner = Learner(
        {name: jnp.asarray(v) for name, v in saved["param"].items()},
        jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in saved["opt"]]),
        jnp.asarray(saved["noise_key"]),
        rng,
    )
    state = TrainState.from_meta(meta)
    if state.best.epoch:  # the kept checkpoint scored on this code's selection windows (earlier runs: 64 random ones)
        state.best.select_loss_m = trainer.eval_loss(Surrogate.load(trainer.ckpt_dir).params, trainer.windows.select)
        # it is saved whenever an epoch improves, checkpoints/last/ only every checkpoint_every epochs: it may
        # come from an epoch after last/, which the replay reproduces without beating it
        kept = runs.read_json(trainer.ckpt_dir / "model.json")
        state.best.epoch = int(kept["epoch"])
        if "settle_probe_ratio" in kept:
            state.best.settle_ratio = float(kept["settle_probe_ratio"])
    return learner, state


def train_epoch(trainer: Trainer, learner: Learner, state: TrainState, epoch: int) -> dict:
    """One epoch: ``per_epoch`` updates on noisy windows, the metrics row (also written to ``metrics.csv``),
    the kept checkpoint when the epoch is the best so far, ``checkpoints/last/`` when one is due.
    Advances ``learner`` and ``state``; returns the row."""
    cfg, data, windows = trainer.cfg, trainer.data, trainer.windows
    t0 = time.perf_counter()
    window = cfg.long_window if cfg.long_window and epoch >= cfg.epochs - cfg.long_epochs else cfg.window
    buffer = None
    if cfg.rest_weight:  # the states the model reaches long after the external objects stop
        z0, z1, w_stop = (
            jnp.asarray(a)
            for a in start_states(data.Z, trainer.ds.Y, data.train_ids, cfg.rest_states, trainer.scene, learner.rng)
        )
        buffer = (*trainer.lead(learner.params, z0, z1, w_stop), w_stop)
    train_loss = _updates(trainer, learner, window, buffer)
    if not np.isfinite(train_loss):
        raise FloatingPointError(f"training loss became {train_loss} at epoch {epoch}")
    params = learner.params
    select_loss = trainer.eval_loss(params, windows.select)
    row = {
        "epoch": epoch,
        "train_loss_m": train_loss,
        "val_loss_m": select_loss,
        "test_loss_m": trainer.eval_loss(params, windows.held),
        "lr": float(trainer.schedule((epoch + 1) * trainer.per_epoch - 1)),
        "seconds": time.perf_counter() - t0,
    }
    if cfg.rest_weight:  # after the epoch's updates, from the states its first parameters reached
        row["rest_motion_m"] = float(trainer.rest_motion(params, buffer))
    state.rows.append(row)
    model = Surrogate(params, trainer.stats, trainer.model_config)
    better = select_loss < state.best.select_loss_m
    if trainer.probe is not None:  # settled epochs first, then the validation loss
        row["settle_probe_ratio"] = settle = float(trainer.probe(params).max())
        settled, best_settled = settle <= SETTLE_LIMIT, state.best.settle_ratio <= SETTLE_LIMIT
        better = (settled and not best_settled) or (settled == best_settled and better)
    runs.atomic_write_csv(trainer.run_dir / "metrics.csv", state.rows, list(row))
    if better:
        model.save(
            trainer.ckpt_dir,
            extra={
                "epoch": epoch + 1,
                "val_loss_m": select_loss,
                "test_loss_m": row["test_loss_m"],
                **({"settle_probe_ratio": row["settle_probe_ratio"]} if trainer.probe is not None else {}),
            },
        )
        state.best = Best(
            epoch + 1, select_loss, row["settle_probe_ratio"] if trainer.probe is not None else state.best.settle_ratio
        )
    state.epoch, state.seconds = epoch + 1, state.seconds + row["seconds"]
    if (epoch + 1) % cfg.checkpoint_every == 0 or epoch + 1 == cfg.epochs:
        save_last(trainer.ckpt_dir / LAST, model, learner, state)
    return row


def _updates(trainer: Trainer, learner: Learner, window: int, buffer: tuple | None) -> float:
    """The epoch's ``per_epoch`` updates of ``learner`` on noisy windows of ``window`` frames (with rest states
    drawn from ``buffer`` when the rest term is on); returns their mean training loss (m)."""
    cfg, data = trainer.cfg, trainer.data
    losses = []
    for _ in range(trainer.per_epoch):
        picked = trainer.windows.samplers[window].draw(learner.rng, cfg.batch)
        Zw, Ww = gather(data.Z, data.W, data.train_ids, picked, window)
        learner.noise_key, sub = jax.random.split(learner.noise_key)
        noise = start_noise(sub, data.noise_std, cfg.batch, data.pca.state_dim, cfg.noise_correlation)
        if cfg.input_noise_frac:  # a draw of its own, so runs without it keep their draws
            learner.noise_key, sub = jax.random.split(learner.noise_key)
            Ww = input_noise(sub, Ww, cfg.input_noise_frac * trainer.stats["in_std"][-data.w_dim :])
        rest = None
        if buffer is not None:
            pick = learner.rng.integers(0, cfg.rest_states, cfg.batch)
            rest = tuple(a[pick] for a in buffer)
        learner.params, learner.opt_state, loss = trainer.update(
            learner.params, learner.opt_state, jnp.asarray(Zw), jnp.asarray(Ww), noise, rest
        )
        losses.append(loss)
    return float(np.mean([float(x) for x in losses]))


def finish(trainer: Trainer, learner: Learner, state: TrainState) -> dict:
    """The loss plot, the PCA table (``pca_table.csv``) and ``summary.json`` of a run whose epochs are done; returns the
    summary."""
    from animat.viz.plots import series_plot

    cfg, data, windows, rows = trainer.cfg, trainer.data, trainer.windows, state.rows
    k, pca = data.pca.state_dim, data.pca
    curves = {"train": [r["train_loss_m"] for r in rows], "held-out": [r["test_loss_m"] for r in rows]}
    curves[f"{'validation' if data.val_ids else 'train'} ({windows.select_frames} frames)"] = [
        r["val_loss_m"] for r in rows
    ]
    series_plot(
        np.arange(1, len(rows) + 1),
        curves,
        trainer.run_dir / "plots" / "loss.png",
        ylabel="rollout L1 loss (m)",
        title=f"surrogate training ({trainer.model_config['scene']}, k={k})",
    )
    best = Surrogate.load(trainer.ckpt_dir)
    held_frames = np.concatenate([trainer.ds.X[i] for i in data.test_ids])
    table = reconstruction_table(
        pca, held_frames, sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, k} & set(range(1, k + 1))), trainer.ds.side_m
    )
    b = state.baselines
    summary = {
        "components": k,
        "hidden": trainer.hidden,
        "layers": cfg.layers,
        "epochs": cfg.epochs,
        "batches_per_epoch": trainer.per_epoch,
        "train_windows": int(len(windows.train)),
        "select_windows": int(len(windows.select[0])),
        "select_window_frames": int(windows.select_frames),
        "train_episodes": len(data.train_ids),
        "val_episodes": len(data.val_ids),
        "test_episodes": len(data.test_ids),
        "best_epoch": int(state.best.epoch),
        "initial_test_loss_m": b.initial_test_loss_m,
        "alpha_beta_test_loss_m": b.alpha_beta_test_loss_m,
        "alpha_beta_select_loss_m": b.alpha_beta_select_loss_m,
        "best_select_loss_m": state.best.select_loss_m,
        "best_test_loss_m": trainer.eval_loss(best.params, windows.held),
        "initial_train_rollout_loss_m": b.initial_train_rollout_loss_m,
        "final_train_rollout_loss_m": trainer.eval_loss(learner.params, windows.fixed_train),
        "final_train_loss_m": rows[-1]["train_loss_m"],
        "final_test_loss_m": rows[-1]["test_loss_m"],
        "seconds": state.seconds,
        "noise_std": data.noise_std,
        "pca_error_percent_of_size_at_k": table[-1]["mean_error_percent_of_size"],
        **normals_error_degrees(data.normals, pca, held_frames, trainer.ds.topology["triangles"]),
        "model_megabytes": model_megabytes(best, pca, data.normals),
    }
    runs.atomic_write_csv(trainer.run_dir / "pca_table.csv", table, list(table[0]))
    runs.atomic_write_json(trainer.run_dir / "summary.json", summary)
    from animat.surrogate.report import write_surrogate_report

    write_surrogate_report(trainer.run_dir)
    return summary


def train(
    cfg: TrainConfig,
    run_dir: str | Path,
    *,
    scene: str | None = None,
    on_epoch: Callable[[dict], None] | None = None,
    resume: bool = False,
) -> dict:
    """Train on dataset ``cfg.data``; writes config.json, pca.npz, normals.npz, checkpoints/ (best)
    and checkpoints/last/, metrics.csv, plots/loss.png, summary.json into ``run_dir``; returns the
    summary. ``resume``: continue the run in ``run_dir`` from checkpoints/last/ up to ``cfg.epochs``.
    ``on_epoch(row)`` after each epoch's metrics row."""
    trainer, learner, state = setup(cfg, Path(run_dir), scene, resume)
    for epoch in range(state.epoch, cfg.epochs):
        row = train_epoch(trainer, learner, state, epoch)
        if on_epoch is not None:
            on_epoch(row)
    return finish(trainer, learner, state)
