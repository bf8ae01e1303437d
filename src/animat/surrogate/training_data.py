"""What a surrogate training run works on, fitted once and kept in its directory: the PCA basis, the
episodes encoded into it, the split, the network's statistics and the normals regression
(:class:`TrainingData`), and the windows it trains, selects and reports on (:class:`Windows`).
The recipe is described in :mod:`animat.surrogate.train`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from animat import runs
from animat.errors import CheckpointError, ConfigError
from animat.surrogate.alpha_beta import fit_alpha_beta
from animat.surrogate.data import Dataset
from animat.surrogate.frame import AzimuthFrame
from animat.surrogate.inputs import network_input
from animat.surrogate.model import external_input
from animat.surrogate.normals import fit_normal_regression, load_regression, vertex_normals
from animat.surrogate.options import TrainConfig, split_episodes
from animat.surrogate.subspace import PCA, fit_pca
from animat.surrogate.windows import WindowSampler, all_windows, gather, spaced_windows, still_segments, window_motion


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
    def fit(cls, cfg: TrainConfig, ds: Dataset) -> TrainingData:
        """PCA, alpha/beta, statistics, normals regression and encoded episodes of dataset ``ds``."""
        train_ids, val_ids, test_ids = split_episodes(len(ds.X), cfg.test_episodes, cfg.val_episodes, cfg.split_seed)
        frames = np.concatenate([ds.X[i] for i in train_ids])
        k_max = min(frames.shape[0], frames.shape[1] * 3)
        if cfg.components > k_max:
            raise ConfigError(
                f"components={cfg.components} exceeds what {frames.shape[0]} training frames of {frames.shape[1]} "
                f"vertices allow ({k_max})"
            )
        sample = np.random.default_rng(cfg.seed).choice(
            len(frames), min(len(frames), cfg.pca_samples), replace=False
        )  # fit_pca's sample
        frame = None
        if cfg.cloth_frame == "azimuth":
            if ds.meta["scene"]["name"] != "flag":
                raise ConfigError(
                    "cloth_frame 'azimuth' is the flag's (a cloth on a vertical pole), not the "
                    f"{ds.meta['scene']['name']!r} scene's"
                )
            frame = AzimuthFrame.fit(frames[np.sort(sample)], ds.topology["pinned"])
        pca = fit_pca(frames, cfg.components, max_samples=cfg.pca_samples, seed=cfg.seed, frame=frame)
        Z, W = _encoded(pca, ds)
        alpha, beta = fit_alpha_beta(
            _alpha_beta_pieces(cfg.alpha_beta_frames, [Z[i] for i in train_ids], [ds.Y[i] for i in train_ids]),
            unit_alpha=[pca.n_components] if frame is not None else (),
        )  # the azimuth: no preferred direction
        stats = {
            "alpha": alpha,
            "beta": beta,
            **({"frame_scale": np.float32(frame.scale)} if frame is not None else {}),
        }
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
        stats.update(
            {
                "in_mean": ins.mean(0),
                "in_std": ins.std(0) + 1e-6,
                "out_mean": outs.mean(0),
                "out_std": outs.std(0) + 1e-6,
            }
        )
        noise_std = float(cfg.noise_frac * z_train[:, : min(3, z_train.shape[1])].std(0).mean())
        triangles = ds.topology["triangles"]
        shapes = (
            frames[sample] if frame is None else frame.rotate(frames[sample], -frame.angles(frames[sample]))
        )  # in the cloth's frame
        normals = fit_normal_regression(z_train[sample][:, : pca.n_components], vertex_normals(shapes, triangles))
        return cls(pca, Z, W, train_ids, val_ids, test_ids, stats, noise_std, normals)

    def save(self, run_dir: Path, cfg: TrainConfig, ds: Dataset) -> None:
        """``config.json`` (the options, the dataset's scene, the split and the noise level), ``pca.npz``,
        ``normals.npz``."""
        runs.atomic_write_json(
            run_dir / "config.json",
            {
                **runs.config_record("surrogate", "train", cfg),
                "data": str(Path(cfg.data).resolve()),
                "scene": ds.meta["scene"],
                "train_episode_ids": self.train_ids,
                "val_episode_ids": self.val_ids,
                "test_episode_ids": self.test_ids,
                "noise_std": self.noise_std,
            },
        )
        self.pca.save(run_dir / "pca.npz")
        runs.atomic_save_npz(run_dir / "normals.npz", R=self.normals)

    @classmethod
    def load(cls, cfg: TrainConfig, run_dir: Path, ds: Dataset, stats: dict) -> TrainingData:
        """What :meth:`save` kept of the run in ``run_dir`` (for ``--resume``): its PCA basis, normals
        regression, episode split and noise level, with ``ds`` encoded again; ``stats`` from its checkpoint."""
        saved = runs.read_json(run_dir / "config.json")
        pca = PCA.load(run_dir / "pca.npz")
        normals = load_regression(run_dir)
        if pca.components.shape[1] != ds.X[0].shape[1] * 3 or max(saved["test_episode_ids"]) >= len(ds.X):
            raise CheckpointError(
                f"dataset {str(cfg.data)!r} does not match the run in {str(run_dir)!r} (vertices or episodes differ)"
            )
        Z, W = _encoded(pca, ds)
        return cls(
            pca,
            Z,
            W,
            saved["train_episode_ids"],
            saved["val_episode_ids"],
            saved["test_episode_ids"],
            stats,
            float(saved["noise_std"]),
            normals,
        )


def _alpha_beta_pieces(frames: str, Z: list[np.ndarray], Y: list[np.ndarray]) -> list[np.ndarray]:
    """The trajectories alpha/beta are fitted on: whole episodes (``all``, the paper) or only the
    pieces where the external state is unchanged (``still``: the cloth's free motion, which the
    damped-velocity model describes; fitted on every frame, the sheet's first component got a
    spectral radius of 1.0003, i.e. no damping, from the sphere's pushes)."""
    if frames == "all":
        return Z
    pieces = still_segments(Z, Y)
    if sum(max(0, len(p) - 2) for p in pieces) < 3:
        raise ConfigError(
            "alpha_beta_frames='still': the training episodes have no frames where the external state stays unchanged"
        )
    return pieces


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
    fixed_train: tuple | None
    select: tuple
    select_frames: int

    @classmethod
    def make(cls, cfg: TrainConfig, data: TrainingData, rng: np.random.Generator) -> Windows:
        """The windows of ``data``; the fixed ones drawn from ``rng`` (held-out first, then training)."""
        Z, W, train_ids = data.Z, data.W, data.train_ids
        train_win = all_windows([len(Z[i]) for i in train_ids], cfg.window)
        held = _fixed_windows(Z, W, data.test_ids, cfg.window, rng)
        if len(train_win) == 0 or held is None:
            raise ConfigError(
                f"episodes are too short for windows of {cfg.window} frames; generate more frames or lower --window"
            )
        fixed_train = _fixed_windows(Z, W, train_ids, cfg.window, rng)  # no noise: the rollout loss on training data
        *select, select_frames = _selection_windows(cfg, Z, W, data.val_ids or train_ids)
        samplers = {cfg.window: _sampler(cfg, [Z[i] for i in train_ids], train_win, cfg.window)}
        if cfg.long_window and cfg.long_epochs:
            long_rows = all_windows([len(Z[i]) for i in train_ids], cfg.long_window)
            if len(long_rows) == 0:
                raise ConfigError(f"no training episode has long_window={cfg.long_window} frames")
            samplers[cfg.long_window] = _sampler(cfg, [Z[i] for i in train_ids], long_rows, cfg.long_window)
        return cls(train_win, samplers, held, fixed_train, tuple(select), select_frames)
