"""The full PPO training state as safe files, so that ``animat imitate train --resume RUN_DIR`` continues a run.

Each save writes a new :mod:`animat.checkpoint` pair of kind ``imitate-train-state``,
``checkpoints/train_state-<seq>.npz`` + ``.json``, then replaces ``checkpoints/latest.json`` (the
pointer :func:`~animat.checkpoint.read_checkpoint` follows), then deletes all but the last
:data:`KEEP` states; a crash mid-save leaves the previous state valid. The ``.npz`` holds plain arrays
(no pickle): every tensor of the SB3 policy's ``state_dict`` (actor, critic, log std) as
``policy.<name>``, every tensor of the Adam optimiser's per-parameter state (``step``, ``exp_avg``,
``exp_avg_sq``) as ``optim.<index>.<key>``, and the observation normaliser's running mean and
variance (and the return normaliser's, with ``normalize_reward``). The manifest's ``meta`` holds the rest: the
optimiser's ``param_groups`` (learning rate, betas, …), the normaliser's sample count, the step counter
``num_timesteps``, the number of gradient updates, the run's earlier training seconds. The manifest's SHA-256 and array
shapes and dtypes are checked on load. SB3's own ``model.save`` zip (pickles) is never written or read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from animat import runs
from animat.checkpoint import CHECKPOINT_DIR, LATEST, read_checkpoint, write_checkpoint
from animat.errors import CheckpointError

KIND = "imitate-train-state"
POINTER = Path(CHECKPOINT_DIR) / LATEST  # inside a run directory
KEEP = 2  # training states kept: the latest and the one before it
_STATE_RE = re.compile(r"^train_state-(\d+)\.json$")


def _states(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """``(seq, manifest)`` of every saved training state in ``ckpt_dir``, oldest first."""
    return sorted((int(m.group(1)), p) for p in ckpt_dir.glob("train_state-*.json") if (m := _STATE_RE.match(p.name)))


def save_train_state(run_dir: str | os.PathLike, model, vec_normalize=None, **counters) -> Path:
    """Save the state of PPO ``model`` (+ its ``VecNormalize``) in ``run_dir`` as described above; ``counters``:
    extra JSON numbers. Returns the new manifest's path."""
    arrays = {f"policy.{k}": v.detach().cpu().numpy().copy() for k, v in model.policy.state_dict().items()}
    opt = model.policy.optimizer.state_dict()
    for index, slots in opt["state"].items():
        for key, value in slots.items():
            arrays[f"optim.{index}.{key}"] = (
                value.detach().cpu().numpy().copy() if hasattr(value, "detach") else np.asarray(value)
            )
    norm = vec_normalize is not None and vec_normalize.norm_obs
    if norm:
        arrays["obs_rms.mean"] = np.asarray(vec_normalize.obs_rms.mean, dtype=np.float64).copy()
        arrays["obs_rms.var"] = np.asarray(vec_normalize.obs_rms.var, dtype=np.float64).copy()
    scaled = vec_normalize is not None and vec_normalize.norm_reward
    if scaled:
        arrays["ret_rms.mean"] = np.asarray(vec_normalize.ret_rms.mean, dtype=np.float64).reshape(1).copy()
        arrays["ret_rms.var"] = np.asarray(vec_normalize.ret_rms.var, dtype=np.float64).reshape(1).copy()
    meta = {
        "num_timesteps": int(model.num_timesteps),
        "n_updates": int(model._n_updates),
        "param_groups": [
            {k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in opt["param_groups"]
        ],
        "obs_rms_count": float(vec_normalize.obs_rms.count) if norm else None,
        **({"ret_rms_count": float(vec_normalize.ret_rms.count)} if scaled else {}),
        **counters,
    }
    ckpt_dir = Path(run_dir) / CHECKPOINT_DIR
    states = _states(ckpt_dir) if ckpt_dir.is_dir() else []
    manifest = write_checkpoint(
        ckpt_dir / f"train_state-{states[-1][0] + 1 if states else 0:06d}.json", arrays, KIND, meta
    )
    runs.atomic_write_json(Path(run_dir) / POINTER, {"manifest": manifest.name, "num_timesteps": meta["num_timesteps"]})
    for _, old in states[: len(states) + 1 - KEEP]:
        old.unlink(missing_ok=True)
        old.with_suffix(".npz").unlink(missing_ok=True)
    return manifest


def load_train_state(run_dir: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and ``meta`` of the latest state saved in ``run_dir`` (CheckpointError if missing, changed or of
    another kind)."""
    if not (Path(run_dir) / POINTER).is_file():
        raise CheckpointError(
            f"no training state in {str(run_dir)!r} ({POINTER} is missing; written by animat imitate train)"
        )
    return read_checkpoint(Path(run_dir) / POINTER, kind=KIND)


def resumable_state(run_dir: str | os.PathLike, timesteps: int) -> tuple[dict[str, np.ndarray], dict] | None:
    """:func:`load_train_state`, refused (RunDirError, :func:`animat.runs.refuse_finished`) unless the run is short of
    ``timesteps`` (the new total) or, trained that far already, lacks its ``summary.json`` (a crash before the outputs:
    resuming writes them). None for a run stopped before its first training state (:func:`animat.runs.unstarted`):
    it starts again from step 0."""
    if runs.unstarted(run_dir, POINTER):
        return None
    arrays, meta = load_train_state(run_dir)
    done = int(meta["num_timesteps"])
    runs.refuse_finished(run_dir, done, timesteps, "timesteps", "--timesteps")
    return arrays, meta


def restore_train_state(model, vec_normalize, arrays: dict[str, np.ndarray], manifest: dict) -> None:
    """Load saved policy, optimiser, normaliser and counters into a freshly built PPO ``model`` of the same shape."""
    import torch

    policy = {k[len("policy.") :]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith("policy.")}
    try:
        model.policy.load_state_dict(policy)
    except RuntimeError as exc:
        raise CheckpointError(f"saved training state does not fit this network ({str(exc).splitlines()[0]})") from None
    state: dict[int, dict] = {}
    for k, v in arrays.items():
        if k.startswith("optim."):
            _, index, key = k.split(".", 2)
            state.setdefault(int(index), {})[key] = torch.from_numpy(np.array(v))
    groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()} for g in manifest["param_groups"]]
    model.policy.optimizer.load_state_dict({"state": state, "param_groups": groups})
    if vec_normalize is not None and vec_normalize.norm_obs:
        if "obs_rms.mean" not in arrays:
            raise CheckpointError(
                "saved training state has no observation normaliser, but the run normalises observations"
            )
        vec_normalize.obs_rms.mean = arrays["obs_rms.mean"].copy()
        vec_normalize.obs_rms.var = arrays["obs_rms.var"].copy()
        vec_normalize.obs_rms.count = float(manifest["obs_rms_count"])
    if vec_normalize is not None and vec_normalize.norm_reward:
        if "ret_rms.mean" not in arrays:
            raise CheckpointError("saved training state has no return normaliser, but the run normalises rewards")
        vec_normalize.ret_rms.mean = arrays["ret_rms.mean"].reshape(()).copy()
        vec_normalize.ret_rms.var = arrays["ret_rms.var"].reshape(()).copy()
        vec_normalize.ret_rms.count = float(manifest["ret_rms_count"])
    model.num_timesteps = int(manifest["num_timesteps"])
    model._n_updates = int(manifest["n_updates"])
