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
(metres); this is ~100x cheaper than decoding every frame of every window. The PCA floor is
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
state entry (:mod:`animat.surrogate.frame`; 6.10 -> 4.99 % held-out error at the same schedule, but
it creeps about the pole in still air); ``rest_weight`` adds a loss on the motion the model keeps
``rest_seconds`` after the external objects stop (:mod:`animat.surrogate.rest`; the flag in its frame:
3.8 -> 0.78 mm/s mean vertex speed after 20 s of still air, 4.99 -> 5.09 % held-out error).

Episodes split into [train | validation | held-out test] (the last ones held out, or shuffled first
with ``split_seed``). The checkpoint kept in ``checkpoints/`` is the epoch with the lowest rollout
loss on ``val_windows`` evenly spaced validation windows of ``val_window`` frames (default 256 of
120, evaluate's horizon: the selection then scores what the evaluation scores, drift included,
unweighted as the evaluation is; the training windows when there are no validation episodes);
``checkpoints/last/`` holds the latest epoch as one
checkpoint (:func:`animat.checkpoint.save_checkpoint`, ``last/checkpoints/gen-<epoch>`` and its
``latest.json``: network, statistics, optimiser state and random-number state, verified by sha256), from which ``--resume`` continues exactly with the run's
saved PCA basis, split and normals regression.

Learning rate ``lr`` x ``lr_decay`` ** epoch (AMSGrad, ``optax.amsgrad``; with ``weight_decay`` > 0 the
decoupled weight decay of AdamW (Loshchilov & Hutter 2019) is added to AMSGrad's step).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from animat import runs
from animat.errors import CheckpointError, ConfigError
from animat.checkpoint import read_checkpoint, save_checkpoint
from animat.surrogate.alpha_beta import fit_alpha_beta
from animat.surrogate.data import Dataset, load_dataset
from animat.surrogate.frame import AzimuthFrame
from animat.surrogate.inputs import network_input
from animat.surrogate.model import Surrogate, alpha_beta_only, external_input, init_mlp, rollout
from animat.surrogate.normals import angle_degrees, fit_normal_regression, load_regression, vertex_normals
from animat.surrogate.rest import make_lead, rest_loss, start_states
from animat.surrogate.scenes import scene_from_dict
from animat.surrogate.settle import SETTLE_LIMIT, make_probe, probe_inputs
from animat.surrogate.subspace import PCA, fit_pca, reconstruction_table
from animat.surrogate.options import TrainConfig, split_episodes
from animat.surrogate.windows import WindowSampler, all_windows, gather, spaced_windows, still_segments, window_motion

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
    return optax.chain(optax.scale_by_amsgrad(), optax.add_decayed_weights(weight_decay), optax.scale_by_learning_rate(schedule))


def start_noise(key: jax.Array, std: float, batch: int, k: int, correlation: float = 0.0) -> jax.Array:
    """(2, batch, k) Gaussian noise of std ``std`` for the two starting frames of each window, the
    frames' draws with correlation ``correlation`` (rho): the velocity noise then has std
    ``std * sqrt(2 (1 - rho))`` (rho = 0: independent, sqrt(2) std; rho = 1: the same offset twice)."""
    xi = jax.random.normal(key, (2, batch, k))
    rho = float(correlation)
    return std * jnp.stack([rho * xi[1] + np.sqrt(1.0 - rho * rho) * xi[0], xi[1]])


def _encoded(pca: PCA, ds: Dataset) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Episodes encoded into the subspace (Z) and their external inputs (W)."""
    return [pca.encode(x) for x in ds.X], [external_input(y, ds.meta["scene"]["name"]) for y in ds.Y]


@dataclass
class TrainingData:
    """What training works on, fitted once per run and kept in its directory: the PCA basis, the
    episodes encoded into it (``Z``, the states, and ``W``, the external inputs), the episode split, the
    network's statistics (alpha/beta, input and output means and deviations), the starting-frame noise
    level (``noise_std``, the subspace's units) and the normals regression (``normals``, (k + 1, 3V))."""

    pca: PCA
    Z: list[np.ndarray]
    W: list[np.ndarray]
    train_ids: list[int]
    val_ids: list[int]
    test_ids: list[int]
    stats: dict
    noise_std: float
    normals: np.ndarray

    @property
    def w_dim(self) -> int:
        """Size of the external input per frame."""
        return int(self.W[0].shape[1])

    @classmethod
    def fit(cls, cfg: TrainConfig, ds: Dataset) -> "TrainingData":
        """PCA, alpha/beta, statistics, normals regression and encoded episodes of dataset ``ds``."""
        train_ids, val_ids, test_ids = split_episodes(len(ds.X), cfg.test_episodes, cfg.val_episodes, cfg.split_seed)
        frames = np.concatenate([ds.X[i] for i in train_ids])
        k_max = min(frames.shape[0], frames.shape[1] * 3)
        if cfg.components > k_max:
            raise ConfigError(f"components={cfg.components} exceeds what {frames.shape[0]} training frames of {frames.shape[1]} vertices allow ({k_max})")
        sample = np.random.default_rng(cfg.seed).choice(len(frames), min(len(frames), cfg.pca_samples), replace=False)  # fit_pca's sample
        frame = None
        if cfg.cloth_frame == "azimuth":
            if ds.meta["scene"]["name"] != "flag":
                raise ConfigError(f"cloth_frame 'azimuth' is the flag's (a cloth on a vertical pole), not the {ds.meta['scene']['name']!r} scene's")
            frame = AzimuthFrame.fit(frames[np.sort(sample)], ds.topology["pinned"])
        pca = fit_pca(frames, cfg.components, max_samples=cfg.pca_samples, seed=cfg.seed, frame=frame)
        Z, W = _encoded(pca, ds)
        alpha, beta = fit_alpha_beta(_alpha_beta_pieces(cfg.alpha_beta_frames, [Z[i] for i in train_ids], [ds.Y[i] for i in train_ids]),
                                     unit_alpha=[pca.n_components] if frame is not None else ())  # the azimuth: no preferred direction
        stats = {"alpha": alpha, "beta": beta, **({"frame_scale": np.float32(frame.scale)} if frame is not None else {})}
        # statistics of the network's input and output, from the teacher-forced training data
        ins, outs = [], []
        for i in train_ids:
            z = Z[i]
            if len(z) < 3:
                continue
            zbar, x = network_input(stats, z[:-2], z[1:-1], W[i][2:], xp=np)
            ins.append(x)
            outs.append(z[2:] - zbar)
        ins, outs = np.concatenate(ins), np.concatenate(outs)
        z_train = np.concatenate([Z[i] for i in train_ids])
        stats.update({"in_mean": ins.mean(0), "in_std": ins.std(0) + 1e-6, "out_mean": outs.mean(0), "out_std": outs.std(0) + 1e-6})
        noise_std = float(cfg.noise_frac * z_train[:, : min(3, z_train.shape[1])].std(0).mean())
        triangles = ds.topology["triangles"]
        shapes = frames[sample] if frame is None else frame.rotate(frames[sample], -frame.angles(frames[sample]))  # in the cloth's frame
        normals = fit_normal_regression(z_train[sample][:, : pca.n_components], vertex_normals(shapes, triangles))
        return cls(pca, Z, W, train_ids, val_ids, test_ids, stats, noise_std, normals)

    def save(self, run_dir: Path, cfg: TrainConfig, ds: Dataset) -> None:
        """``config.json`` (the options, the dataset's scene, the split and the noise level), ``pca.npz``, ``normals.npz``."""
        runs.atomic_write_json(run_dir / "config.json", {**asdict(cfg), "data": str(Path(cfg.data).resolve()), "scene": ds.meta["scene"],
                                                          "train_episode_ids": self.train_ids, "val_episode_ids": self.val_ids,
                                                          "test_episode_ids": self.test_ids, "noise_std": self.noise_std})
        self.pca.save(run_dir / "pca.npz")
        runs.atomic_save_npz(run_dir / "normals.npz", R=self.normals)

    @classmethod
    def load(cls, cfg: TrainConfig, run_dir: Path, ds: Dataset, stats: dict) -> "TrainingData":
        """What :meth:`save` kept of the run in ``run_dir`` (for ``--resume``): its PCA basis, normals
        regression, episode split and noise level, with ``ds`` encoded again; ``stats`` from its checkpoint."""
        saved = runs.read_json(run_dir / "config.json")
        pca = PCA.load(run_dir / "pca.npz")
        normals = load_regression(run_dir)
        if pca.components.shape[1] != ds.X[0].shape[1] * 3 or max(saved["test_episode_ids"]) >= len(ds.X):
            raise CheckpointError(f"dataset {str(cfg.data)!r} does not match the run in {str(run_dir)!r} (vertices or episodes differ)")
        Z, W = _encoded(pca, ds)
        return cls(pca, Z, W, saved["train_episode_ids"], saved["val_episode_ids"], saved["test_episode_ids"], stats,
                   float(saved["noise_std"]), normals)


def _alpha_beta_pieces(frames: str, Z: list[np.ndarray], Y: list[np.ndarray]) -> list[np.ndarray]:
    """The trajectories alpha/beta are fitted on: whole episodes (``all``, the paper) or only the
    pieces where the external state is unchanged (``still``: the cloth's free motion, which the
    damped-velocity model describes; fitted on every frame, the sheet's first component got a
    spectral radius of 1.0003, i.e. no damping, from the sphere's pushes)."""
    if frames == "all":
        return Z
    pieces = still_segments(Z, Y)
    if sum(max(0, len(p) - 2) for p in pieces) < 3:
        raise ConfigError("alpha_beta_frames='still': the training episodes have no frames where the external state stays unchanged")
    return pieces


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


def _fixed_windows(Z, W, ids: list[int], window: int, rng: np.random.Generator, count: int = 64):
    """Up to ``count`` random full windows of episodes ``ids`` (for loss curves), or None."""
    win = all_windows([len(Z[i]) for i in ids], window)
    if len(win) == 0:
        return None
    return gather(Z, W, ids, win[rng.choice(len(win), min(len(win), count), replace=False)], window)


def _sampler(cfg: TrainConfig, Z: list[np.ndarray], rows: np.ndarray, window: int) -> WindowSampler:
    """Training draws over ``rows`` (windows of ``window`` frames of the episodes Z)."""
    return WindowSampler(rows, window_motion(Z, rows, window) if cfg.motion_weighting else None, cfg.motion_weighting)


def _selection_windows(cfg: TrainConfig, Z, W, ids: list[int]):
    """Best-epoch selection windows: ``cfg.val_windows`` evenly spaced windows of ``cfg.val_window``
    frames (at most the shortest episode of ``ids``, at least ``cfg.window``) -> (Zw, Ww, frames)."""
    lengths = [len(Z[i]) for i in ids]
    frames = max(cfg.window, min(cfg.val_window, min(lengths)))
    rows = spaced_windows(lengths, frames, cfg.val_windows)
    if len(rows) == 0:
        raise ConfigError(f"the validation episodes are too short for windows of {cfg.window} frames; lower --window")
    return (*gather(Z, W, ids, rows, frames), frames)


@dataclass
class Windows:
    """The windows of a run: the training rows (``train``, windows of ``cfg.window`` frames) and their
    samplers by window length, up to 64 fixed held-out and training windows for the loss curves
    (``held``, ``fixed_train``: ``(Zw, Ww)``) and the best-epoch selection windows (``select``, of
    ``select_frames`` frames)."""

    train: np.ndarray
    samplers: dict[int, WindowSampler]
    held: tuple
    fixed_train: Optional[tuple]
    select: tuple
    select_frames: int

    @classmethod
    def make(cls, cfg: TrainConfig, data: TrainingData, rng: np.random.Generator) -> "Windows":
        """The windows of ``data``; the fixed ones drawn from ``rng`` (held-out first, then training)."""
        Z, W, train_ids = data.Z, data.W, data.train_ids
        train_win = all_windows([len(Z[i]) for i in train_ids], cfg.window)
        held = _fixed_windows(Z, W, data.test_ids, cfg.window, rng)
        if len(train_win) == 0 or held is None:
            raise ConfigError(f"episodes are too short for windows of {cfg.window} frames; generate more frames or lower --window")
        fixed_train = _fixed_windows(Z, W, train_ids, cfg.window, rng)  # no noise: the rollout loss on training data
        *select, select_frames = _selection_windows(cfg, Z, W, data.val_ids or train_ids)
        samplers = {cfg.window: _sampler(cfg, [Z[i] for i in train_ids], train_win, cfg.window)}
        if cfg.long_window and cfg.long_epochs:
            long_rows = all_windows([len(Z[i]) for i in train_ids], cfg.long_window)
            if len(long_rows) == 0:
                raise ConfigError(f"no training episode has long_window={cfg.long_window} frames")
            samplers[cfg.long_window] = _sampler(cfg, [Z[i] for i in train_ids], long_rows, cfg.long_window)
        return cls(train_win, samplers, held, fixed_train, tuple(select), select_frames)


@dataclass
class Learner:
    """What every training step changes: the network's parameters, the optimiser's state, the PRNG key of
    the starting-frame noise and the NumPy generator of the window draws."""

    params: dict
    opt_state: Any
    noise_key: jax.Array
    rng: np.random.Generator


@dataclass
class Baselines:
    """Rollout losses (m) fixed for a run: the untrained network's on the held-out and training windows,
    alpha/beta alone on the held-out and selection windows (None in checkpoints that predate it)."""

    initial_test_loss_m: float
    initial_train_rollout_loss_m: float
    alpha_beta_test_loss_m: float
    alpha_beta_select_loss_m: Optional[float] = None


@dataclass
class Best:
    """The kept checkpoint (``checkpoints/``): its epoch (counted from 1; 0: none yet), selection loss (m)
    and, with settle probes, its settle ratio (None without them)."""

    epoch: int = 0
    select_loss_m: float = float("inf")
    settle_ratio: Optional[float] = None


@dataclass
class TrainState:
    """Epochs done, training seconds, the metrics rows so far, the baselines and the best epoch; saved in
    ``checkpoints/last/`` as the manifest's flat ``state`` table, in the keys earlier versions wrote."""

    epoch: int
    seconds: float
    rows: list[dict]
    baselines: Baselines
    best: Best = field(default_factory=Best)

    def to_meta(self) -> dict:
        b = self.baselines
        meta = {"epoch": self.epoch, "best_epoch": self.best.epoch, "best_select_loss_m": self.best.select_loss_m, "seconds": self.seconds,
                "initial_test_loss_m": b.initial_test_loss_m, "initial_train_rollout_loss_m": b.initial_train_rollout_loss_m,
                "alpha_beta_test_loss_m": b.alpha_beta_test_loss_m, "rows": self.rows, "alpha_beta_select_loss_m": b.alpha_beta_select_loss_m}
        if self.best.settle_ratio is not None:
            meta["best_settle_ratio"] = self.best.settle_ratio
        return meta

    @classmethod
    def from_meta(cls, meta: dict) -> "TrainState":
        baselines = Baselines(meta["initial_test_loss_m"], meta["initial_train_rollout_loss_m"], meta["alpha_beta_test_loss_m"],
                              meta.get("alpha_beta_select_loss_m"))
        best = Best(int(meta["best_epoch"]), meta["best_select_loss_m"], meta.get("best_settle_ratio"))
        return cls(int(meta["epoch"]), meta["seconds"], list(meta["rows"]), baselines, best)


def _save_last(folder: Path, model: Surrogate, learner: Learner, state: TrainState) -> None:
    """The latest epoch, exactly resumable, as one checkpoint (a new name per epoch, then the
    ``latest.json`` pointer): network, statistics, optimiser leaves, PRNG key, NumPy rng state and
    ``state``. Only the latest is kept, so a damaged one is refused rather than replaced by an older epoch."""
    arrays = {f"param/{k}": np.asarray(v) for k, v in model.params.items()}
    arrays.update({f"stat/{k}": np.asarray(v) for k, v in model.stats.items()})
    arrays.update({f"opt/{i:04d}": np.asarray(x) for i, x in enumerate(jax.tree_util.tree_leaves(learner.opt_state))})
    meta = {"config": model.config, "state": {**state.to_meta(), "rng": learner.rng.bit_generator.state}}
    save_checkpoint(folder, state.epoch, {**arrays, "noise_key": np.asarray(learner.noise_key)}, meta, keep=1)


def _load_last(folder: Path) -> tuple[dict, dict]:
    """``(arrays by group, meta)`` of the checkpoint written by :func:`_save_last`: groups ``param``,
    ``stat``, ``opt`` (leaves in order) and ``noise_key``."""
    arrays, meta = read_checkpoint(folder)
    groups: dict[str, Any] = {"param": {}, "stat": {}, "opt": {}, "noise_key": arrays.pop("noise_key", None)}
    for name, value in arrays.items():
        group, _, key = name.partition("/")
        groups.setdefault(group, {})[key] = value
    if groups["noise_key"] is None or "state" not in meta:
        raise CheckpointError(f"{str(folder)!r} is not a surrogate training checkpoint")
    groups["opt"] = [groups["opt"][key] for key in sorted(groups["opt"])]
    return groups, meta


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
    probe: Optional[Callable] = None
    lead: Optional[Callable] = None
    rest_motion: Optional[Callable] = None

    @property
    def ckpt_dir(self) -> Path:
        return self.run_dir / "checkpoints"

    def eval_loss(self, params: dict, windows: tuple) -> float:
        """Rollout loss (m) of ``params`` on ``windows`` ``(Zw, Ww)``, without noise."""
        return float(self.loss(params, self.stats, *windows))


def setup(cfg: TrainConfig, run_dir: Path, scene: Optional[str] = None, resume: bool = False) -> tuple[Trainer, Learner, TrainState]:
    """Everything a run needs before its first epoch: a new run's training data fitted and saved, or with
    ``resume`` the run in ``run_dir`` restored from ``checkpoints/last/`` (refused when it has done
    ``cfg.epochs`` already)."""
    ds = load_dataset(cfg.data, scene)
    if resume:
        saved, saved_meta = _load_last(run_dir / "checkpoints" / LAST)
        runs.refuse_finished(run_dir, int(saved_meta["state"]["epoch"]), cfg.epochs, "epochs", "--epochs")
        data = TrainingData.load(cfg, run_dir, ds, saved["stat"])
    else:
        data = TrainingData.fit(cfg, ds)
        data.save(run_dir, cfg, ds)
    rng = np.random.default_rng(cfg.seed)
    windows = Windows.make(cfg, data, rng)

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
    model_config = {"components": k, "layers": cfg.layers, "hidden": hidden, "w_dim": w_dim, "scene": ds.meta["scene"]["name"]}
    sc = scene_from_dict(ds.meta["scene"])
    trainer = Trainer(cfg, run_dir, ds, sc, data, windows, stats, hidden, model_config, per_epoch, schedule,
                      _make_update(loss_fn, stats, opt, cfg.rest_weight), loss)
    baseline = alpha_beta_only(Surrogate(params, stats, {}))
    if resume:
        treedef = jax.tree_util.tree_structure(opt_state)
        if treedef.num_leaves != len(saved["opt"]) or set(saved["param"]) != set(params):
            raise CheckpointError(f"{str(trainer.ckpt_dir / LAST)!r} does not match this configuration (network or optimiser differ)")
        meta = dict(saved_meta["state"])
        rng.bit_generator.state = meta.pop("rng")
        learner = Learner({name: jnp.asarray(v) for name, v in saved["param"].items()},
                          jax.tree_util.tree_unflatten(treedef, [jnp.asarray(x) for x in saved["opt"]]), jnp.asarray(saved["noise_key"]), rng)
        state = TrainState.from_meta(meta)
        if state.best.epoch:  # the kept checkpoint scored on this code's selection windows (earlier runs used 64 random ones)
            state.best.select_loss_m = trainer.eval_loss(Surrogate.load(trainer.ckpt_dir).params, windows.select)
            # it is saved whenever an epoch improves, checkpoints/last/ only every checkpoint_every epochs: it may
            # come from an epoch after last/, which the replay reproduces without beating it
            kept = runs.read_json(trainer.ckpt_dir / "model.json")
            state.best.epoch = int(kept["epoch"])
            if "settle_probe_ratio" in kept:
                state.best.settle_ratio = float(kept["settle_probe_ratio"])
    else:
        learner = Learner(params, opt_state, jax.random.PRNGKey(cfg.seed + 1), rng)
        state = TrainState(0, 0.0, [], Baselines(trainer.eval_loss(params, windows.held), trainer.eval_loss(params, windows.fixed_train),
                                                 float(loss(baseline.params, baseline.stats, *windows.held))))
    if state.baselines.alpha_beta_select_loss_m is None:
        state.baselines.alpha_beta_select_loss_m = float(loss(baseline.params, baseline.stats, *windows.select))
    if cfg.settle_probes:
        start = data.Z[(data.val_ids or data.train_ids)[0]]
        trainer.probe = make_probe(stats, probe_inputs(sc, cfg.settle_probes), start[0], start[1], sc.fps)
        if state.best.settle_ratio is None:
            state.best.settle_ratio = float("inf")
    if cfg.rest_weight:
        trainer.lead = make_lead(stats, int(round(cfg.rest_seconds * sc.fps)))
        trainer.rest_motion = jax.jit(lambda p, rest: rest_loss(p, stats, *rest))
    return trainer, learner, state


def train_epoch(trainer: Trainer, learner: Learner, state: TrainState, epoch: int) -> dict:
    """One epoch: ``per_epoch`` updates on noisy windows, the metrics row (also written to ``metrics.csv``),
    the kept checkpoint when the epoch is the best so far, ``checkpoints/last/`` when one is due.
    Advances ``learner`` and ``state``; returns the row."""
    cfg, data, windows = trainer.cfg, trainer.data, trainer.windows
    t0 = time.perf_counter()
    losses = []
    window = cfg.long_window if cfg.long_window and epoch >= cfg.epochs - cfg.long_epochs else cfg.window
    if cfg.rest_weight:  # the states the model reaches long after the external objects stop
        z0, z1, w_stop = (jnp.asarray(a) for a in start_states(data.Z, trainer.ds.Y, data.train_ids, cfg.rest_states, trainer.scene, learner.rng))
        buffer = (*trainer.lead(learner.params, z0, z1, w_stop), w_stop)
    for _ in range(trainer.per_epoch):
        Zw, Ww = gather(data.Z, data.W, data.train_ids, windows.samplers[window].draw(learner.rng, cfg.batch), window)
        learner.noise_key, sub = jax.random.split(learner.noise_key)
        noise = start_noise(sub, data.noise_std, cfg.batch, data.pca.state_dim, cfg.noise_correlation)
        rest = None
        if cfg.rest_weight:
            pick = learner.rng.integers(0, cfg.rest_states, cfg.batch)
            rest = tuple(a[pick] for a in buffer)
        learner.params, learner.opt_state, loss = trainer.update(learner.params, learner.opt_state, jnp.asarray(Zw), jnp.asarray(Ww), noise, rest)
        losses.append(loss)
    train_loss = float(np.mean([float(x) for x in losses]))
    if not np.isfinite(train_loss):
        raise FloatingPointError(f"training loss became {train_loss} at epoch {epoch}")
    params = learner.params
    select_loss = trainer.eval_loss(params, windows.select)
    row = {"epoch": epoch, "train_loss_m": train_loss, "val_loss_m": select_loss, "test_loss_m": trainer.eval_loss(params, windows.held),
           "lr": float(trainer.schedule((epoch + 1) * trainer.per_epoch - 1)), "seconds": time.perf_counter() - t0}
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
        model.save(trainer.ckpt_dir, extra={"epoch": epoch + 1, "val_loss_m": select_loss, "test_loss_m": row["test_loss_m"],
                                            **({"settle_probe_ratio": row["settle_probe_ratio"]} if trainer.probe is not None else {})})
        state.best = Best(epoch + 1, select_loss, row["settle_probe_ratio"] if trainer.probe is not None else state.best.settle_ratio)
    state.epoch, state.seconds = epoch + 1, state.seconds + row["seconds"]
    if (epoch + 1) % cfg.checkpoint_every == 0 or epoch + 1 == cfg.epochs:
        _save_last(trainer.ckpt_dir / LAST, model, learner, state)
    return row


def finish(trainer: Trainer, learner: Learner, state: TrainState) -> dict:
    """The loss plot, the PCA table (``pca_table.csv``) and ``summary.json`` of a run whose epochs are done; returns the summary."""
    from animat.viz.plots import series_plot

    cfg, data, windows, rows = trainer.cfg, trainer.data, trainer.windows, state.rows
    k, pca = data.pca.state_dim, data.pca
    curves = {"train": [r["train_loss_m"] for r in rows], "held-out": [r["test_loss_m"] for r in rows]}
    curves[f"{'validation' if data.val_ids else 'train'} ({windows.select_frames} frames)"] = [r["val_loss_m"] for r in rows]
    series_plot(np.arange(1, len(rows) + 1), curves, trainer.run_dir / "plots" / "loss.png", ylabel="rollout L1 loss (m)",
                title=f"surrogate training ({trainer.model_config['scene']}, k={k})")
    best = Surrogate.load(trainer.ckpt_dir)
    held_frames = np.concatenate([trainer.ds.X[i] for i in data.test_ids])
    table = reconstruction_table(pca, held_frames, sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, k} & set(range(1, k + 1))), trainer.ds.side_m)
    b = state.baselines
    summary = {
        "components": k, "hidden": trainer.hidden, "layers": cfg.layers, "epochs": cfg.epochs, "batches_per_epoch": trainer.per_epoch,
        "train_windows": int(len(windows.train)), "select_windows": int(len(windows.select[0])), "select_window_frames": int(windows.select_frames),
        "train_episodes": len(data.train_ids), "val_episodes": len(data.val_ids), "test_episodes": len(data.test_ids),
        "best_epoch": int(state.best.epoch), "initial_test_loss_m": b.initial_test_loss_m, "alpha_beta_test_loss_m": b.alpha_beta_test_loss_m,
        "alpha_beta_select_loss_m": b.alpha_beta_select_loss_m, "best_select_loss_m": state.best.select_loss_m,
        "best_test_loss_m": trainer.eval_loss(best.params, windows.held),
        "initial_train_rollout_loss_m": b.initial_train_rollout_loss_m,
        "final_train_rollout_loss_m": trainer.eval_loss(learner.params, windows.fixed_train),
        "final_train_loss_m": rows[-1]["train_loss_m"], "final_test_loss_m": rows[-1]["test_loss_m"],
        "seconds": state.seconds, "noise_std": data.noise_std,
        "pca_error_percent_of_size_at_k": table[-1]["mean_error_percent_of_size"],
        **normals_error_degrees(data.normals, pca, held_frames, trainer.ds.topology["triangles"]),
        "model_megabytes": model_megabytes(best, pca, data.normals),
    }
    runs.atomic_write_csv(trainer.run_dir / "pca_table.csv", table, list(table[0]))
    runs.atomic_write_json(trainer.run_dir / "summary.json", summary)
    from animat.viz.report import write_report

    write_report(trainer.run_dir)
    return summary


def train(
    cfg: TrainConfig,
    run_dir: str | Path,
    *,
    scene: Optional[str] = None,
    on_epoch: Optional[Callable[[dict], None]] = None,
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
