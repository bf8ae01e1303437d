"""Datasets of reference episodes: one ``episode_NNNNN.npz`` per episode plus ``dataset.json``.

Layout of a dataset folder::

    dataset.json          scene (resolved options), episodes, frames, seed, topology file name
    topology.npz          rest positions, edges, triangles, pinned vertex ids
    episode_00000.npz     X (T, V, 3) float32 m, Y (T, y) float32 (the scene's external state: sheet
                          sphere centre m, flag wind m/s, cape torso position m + quaternion, y = 7; the
                          garments: the character's 15 body frames, position m + quaternion each, y = 105),
                          dropped, seconds_per_frame

Each file is written atomically, so an interrupted ``generate`` leaves only whole episodes behind
and a second call with the same arguments simulates only the missing ones. Episode ``i`` is seeded
from ``SeedSequence([seed, i])``: the same seed gives the same data however the work is split.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from animat import runs
from animat.config import require
from animat.errors import ConfigError, RunDirError
from animat.parallel import RayPool, process_map
from animat.surrogate.scenes import get_scene, scene_from_dict

DATASET_JSON = "dataset.json"


def episode_path(out: Path, index: int) -> Path:
    return Path(out) / f"episode_{index:05d}.npz"


def read_episode(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """One episode file's arrays (X, Y, dropped, seconds_per_frame); a ConfigError in one line that says how
    to redo it when it is unreadable."""
    try:
        return runs.read_npz(
            path, keys=("X", "Y", "dropped", "seconds_per_frame"), error=ConfigError, what="dataset file"
        )
    except ConfigError as exc:
        raise ConfigError(f"{exc}; delete it and run generate again to redo it") from None


def _episode_done(path: Path) -> bool:
    """Whether an episode file is there and complete (its archive lists X and Y; written atomically);
    checked without reading the arrays, so a resume does not read the whole dataset an extra time."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return "X" in z.files and "Y" in z.files
    except Exception:  # noqa: BLE001 - missing, truncated or not an archive: simulate again
        return False


def _simulate_one(scene_dict: dict, frames: int, seed: int, index: int, out: str) -> dict:
    scene = get_scene(scene_dict["name"], **{k: v for k, v in scene_dict.items() if k != "name"})
    result = scene.simulate(frames, np.random.SeedSequence([int(seed), int(index)]))
    runs.atomic_save_npz(
        episode_path(Path(out), index),
        X=result["X"],
        Y=result["Y"],
        dropped=np.int64(result["dropped"]),
        seconds_per_frame=np.float64(result["seconds_per_frame"]),
    )
    return {
        "index": index,
        "frames": int(len(result["X"])),
        "dropped": result["dropped"],
        "seconds_per_frame": result["seconds_per_frame"],
    }


def generate(
    scene: str,
    episodes: int,
    frames: int,
    seed: int,
    out: str | os.PathLike,
    *,
    workers: int = 1,
    backend: str = "local",
    scene_options: dict | None = None,
    on_episode: Callable[[dict], None] | None = None,
    on_skipped: Callable[[int], None] | None = None,
) -> dict:
    """Simulate ``episodes`` episodes of ``frames`` frames of ``scene`` into folder ``out``;
    ``on_episode(row)`` after each new episode, ``on_skipped(count)`` once before them.

    Resumable: episodes whose file already loads are skipped (``skipped`` in the result). The
    folder's ``dataset.json`` must match the request if it exists. Returns a summary dict with
    the dataset size, dropped frames and mean reference seconds per frame of the new episodes.
    """
    require("episodes", episodes, gt=0)
    require("frames", frames, gt=0)
    require("seed", seed, ge=0)
    require("backend", backend, choices=("local", "ray"))
    sc = get_scene(scene, **(scene_options or {}))
    out = Path(out)
    _open_dataset(out, sc, {"scene": sc.to_dict(), "episodes": int(episodes), "frames": int(frames), "seed": int(seed)})

    todo = [i for i in range(int(episodes)) if not _episode_done(episode_path(out, i))]
    skipped = int(episodes) - len(todo)
    if on_skipped is not None:
        on_skipped(skipped)
    done: list[dict] = []

    def record(row: dict) -> None:
        done.append(row)
        if on_episode is not None:
            on_episode(row)

    args = [(sc.to_dict(), int(frames), int(seed), i, str(out)) for i in todo]
    if backend == "ray":
        with RayPool(workers=max(1, int(workers))) as pool:
            for _, row in pool.map(_simulate_one, args, name=lambda i: f"episode {todo[i]}"):
                record(row)
    else:
        for _, row in process_map(_simulate_one, args, int(workers)):
            record(row)

    stats = dataset_stats(out, int(episodes))
    stats.update(
        simulated_episodes=len(done),
        skipped_episodes=skipped,
        reference_seconds_per_frame=float(np.mean([r["seconds_per_frame"] for r in done]))
        if done
        else stats["reference_seconds_per_frame"],
    )
    return stats


def _open_dataset(out: Path, sc, config: dict) -> None:
    """Make or reopen the dataset folder ``out`` for ``config`` (scene, episodes, frames, seed): its topology and
    ``dataset.json`` written; a folder of another dataset, or of something else, is refused."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"dataset folder {str(out)!r} is a file")
    if out.is_dir() and not (out / DATASET_JSON).exists() and any(out.iterdir()):
        raise RunDirError(
            f"{str(out)!r} holds files but no {DATASET_JSON}: not a dataset to resume; choose another --out"
        )
    meta_path = out / DATASET_JSON
    if meta_path.exists():
        old = runs.read_json(meta_path)
        same = {k: old.get(k) for k in ("scene", "frames", "seed")}
        if isinstance(same["scene"], dict) and "name" in same["scene"]:  # options added since: their defaults
            same["scene"] = json.loads(json.dumps(scene_from_dict(same["scene"]).to_dict()))
        want = json.loads(json.dumps(config))  # tuples -> lists, as stored
        if same != {k: want[k] for k in ("scene", "frames", "seed")}:
            raise ConfigError(f"{str(out)!r} holds a dataset made with other scene/frames/seed; choose another --out")
        config = {**config, "episodes": max(config["episodes"], int(old.get("episodes", 0)))}
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "topology.npz").exists():
        runs.atomic_save_npz(out / "topology.npz", **sc.topology())
    runs.atomic_write_json(meta_path, {**config, "topology": "topology.npz"})


def dataset_stats(out: str | os.PathLike, episodes: int | None = None) -> dict:
    out = Path(out)
    meta = load_meta(out)
    n = int(episodes if episodes is not None else meta["episodes"])
    frames, dropped, spf, nbytes = 0, 0, [], 0
    for i in range(n):
        p = episode_path(out, i)
        if not p.exists():
            continue
        nbytes += p.stat().st_size
        z = read_episode(p)
        frames += int(z["X"].shape[0])
        dropped += int(z["dropped"])
        spf.append(float(z["seconds_per_frame"]))
    return {
        "episodes": n,
        "frames": frames,
        "dropped_frames": dropped,
        "vertices": scene_from_dict(meta["scene"]).n_vertices,
        "dataset_megabytes": nbytes / 1e6,
        "reference_seconds_per_frame": float(np.mean(spf)) if spf else float("nan"),
    }


def check_dataset(folder: str | os.PathLike, scene: str | None = None) -> dict:
    """The dataset's ``dataset.json`` (:func:`load_meta`); ConfigError if it is of another ``scene``."""
    meta = load_meta(folder)
    if scene is not None and meta["scene"]["name"] != scene:
        raise ConfigError(f"dataset {str(folder)!r} is of scene {meta['scene']['name']!r}, not {scene!r}")
    return meta


def load_meta(folder: str | os.PathLike) -> dict:
    path = Path(folder) / DATASET_JSON
    if not path.is_file():
        raise ConfigError(
            f"{str(folder)!r} holds no {DATASET_JSON}; is it a dataset made by 'animat surrogate generate'?"
        )
    return runs.read_json(path)


@dataclass
class Dataset:
    """Episodes loaded in memory: ``X[i]`` (T_i, V, 3), ``Y[i]`` (T_i, y) (see the module docstring); ``meta`` from
    dataset.json."""

    X: list[np.ndarray]
    Y: list[np.ndarray]
    meta: dict
    topology: dict

    @property
    def side_m(self) -> float:
        return float(self.meta["scene"]["side_m"])


def load_dataset(folder: str | os.PathLike, scene: str | None = None) -> Dataset:
    folder = Path(folder)
    meta = check_dataset(folder, scene)
    X, Y = [], []
    for i in range(int(meta["episodes"])):
        p = episode_path(folder, i)
        if not p.exists():
            raise ConfigError(f"dataset {str(folder)!r} lacks {p.name}; run generate again to finish it")
        z = read_episode(p)
        X.append(z["X"].astype(np.float32))
        Y.append(z["Y"].astype(np.float32))
    topology = runs.read_npz(
        folder / meta.get("topology", "topology.npz"), what="dataset topology file", error=ConfigError
    )
    return Dataset(X, Y, meta, topology)
