"""``animat surrogate play SCENE``: run a trained surrogate live, one frame at a time, as a game would.

The cloth starts at rest -- the scene's rest mesh (the flat grid MuJoCo starts from) encoded into
the subspace, as both previous states ``z_{-2} = z_{-1}`` -- with the external object held still
at its first state. Each frame then takes the next external state ``y_t`` of a path that the model
has never seen: ``random`` draws one from the scene's own generator (sphere strikes, wind changes,
torso motions; its warm-up frames are skipped, as in the recorded data) with ``seed``;
or a ``.npy`` file of shape (frames, y_dim) gives it; for the garment scenes the character plays the scene's random
chain of clips, or one clip (``--clip``, :mod:`animat.surrogate.character_clip`), and the video and report show the
garment on the character. The network input ``w_t`` is built from the
last three external states by :func:`animat.surrogate.model.external_input` (the object before
frame 0 stands still, so the first change is zero, as in training), and one call of
:meth:`animat.surrogate.runtime.Runtime.frame` gives ``z_t``, the projected vertices and the
regressed normals. Only that call is timed (``time.perf_counter`` around it, the result waited for):
the per-frame cost a game would pay (prediction, decompression, normals, collision projection).

Per frame (``metrics.csv``): the frame time (us); the mean vertex speed (m/s); the coefficient
range ratio ``max_j |z_j - c_j| / h_j`` with ``c_j``, ``h_j`` the centre and half-width of
component j over the training frames (when the training dataset is still on disk; 1 = the edge of
the training range); whether the frame is finite; how many vertices are still inside a proxy after
the projection (deeper than ``INSIDE_TOLERANCE_M``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from animat import runs
from animat.config import require
from animat.errors import ConfigError
from animat.surrogate.cape import euler_to_quat
from animat.surrogate.collision import INSIDE_TOLERANCE_M, penetration_depth
from animat.surrogate.data import episode_path, read_episode
from animat.surrogate.model import external_input
from animat.surrogate.options import load_run_config
from animat.surrogate.runtime import BACKENDS, BLAS_THREADS, Runtime
from animat.surrogate.scenes import rest_frame, start_state
from animat.surrogate.subspace import PCA, range_ratios


@dataclass
class Model:
    """What play needs from a training run: the runtime, the basis, the training range of z."""

    runtime: Runtime
    pca: PCA
    z_range: np.ndarray | None  # (2, k) per-component [min; max] of z over the training frames, or None


def load_model(model_dir: str | os.PathLike, scene: str, backend: str = "numba") -> Model:
    """The training run ``model_dir`` for ``scene``; ConfigError on a missing run, another scene or an unknown
    backend."""
    model_dir = Path(model_dir)
    require("--backend", backend, choices=BACKENDS)
    cfg = load_run_config(model_dir, scene)
    pca = PCA.load(model_dir / "pca.npz")
    return Model(Runtime.load(model_dir, backend), pca, training_range(cfg, pca))


def training_range(train_cfg: dict, pca: PCA) -> np.ndarray | None:
    """(2, k) per-component [min; max] of the encoded training episodes, read one at a time; None
    when the dataset is no longer where the run says or one of its files cannot be read (the range
    only serves the optional ``range_ratio`` column of play's metrics)."""

    lo = hi = None
    for i in train_cfg.get("train_episode_ids", []):
        path = episode_path(Path(train_cfg.get("data", "")), int(i))
        try:
            X = read_episode(path)["X"]
        except ConfigError:
            return None
        Z = pca.coefficients(pca.encode(X))
        lo = Z.min(0) if lo is None else np.minimum(lo, Z.min(0))
        hi = Z.max(0) if hi is None else np.maximum(hi, Z.max(0))
    return None if lo is None else np.stack([lo, hi])


def external_path(scene, frames: int | None, path: str = "random", seed: int = 0) -> np.ndarray:
    """(frames, y_dim) float32 external states: ``random`` (the scene's generator, after its warm-up;
    ``frames`` default 600) or a ``.npy`` file (its first ``frames`` rows; all by default)."""
    require("--frames", frames, gt=0)
    require("--seed", seed, ge=0)
    if path == "random":
        n = 600 if frames is None else int(frames)
        return scene.recorded_states(scene.controls(n, np.random.default_rng(seed))[scene.warmup_frames :])
    try:
        Y = np.load(path, allow_pickle=False)
        if not isinstance(Y, np.ndarray):  # an .npz archive
            Y.close()
            raise ValueError("an .npz archive; save one array with numpy.save")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--path {str(path)!r}: cannot read a .npy array ({str(exc).splitlines()[0]})") from None
    want = len(start_state(scene))
    if Y.ndim != 2 or Y.shape[1] != want or len(Y) == 0:
        raise ConfigError(
            f"--path {str(path)!r}: expected external states of shape (frames, {want}) for scene {scene.name!r}, got "
            f"{Y.shape}"
        )
    real = np.issubdtype(Y.dtype, np.integer) or np.issubdtype(Y.dtype, np.floating)
    if not real or not np.isfinite(Y).all():
        raise ConfigError(f"--path {str(path)!r}: external states must be finite real numbers, got dtype {Y.dtype}")
    require(f"--frames (at most the {len(Y)} frames in {str(path)!r})", frames, le=len(Y))
    return Y[: len(Y) if frames is None else int(frames)].astype(np.float32)


def inside_count(X: np.ndarray, spheres: np.ndarray, capsules: np.ndarray, tol: float = INSIDE_TOLERANCE_M) -> int:
    """Number of vertices of X (V, 3) deeper than ``tol`` m inside any sphere (S, 4) or capsule (C, 7)."""
    return int(np.sum(penetration_depth(X, spheres, capsules) > tol))


class Player:
    """The per-frame loop of a game: keeps ``(z_{t-2}, z_{t-1})`` and the last three external states."""

    def __init__(self, model: Model, rest: np.ndarray, y0: np.ndarray):
        self.runtime, self.scene = model.runtime, model.runtime.scene
        z = model.pca.encode(rest)
        self.z0, self.z1 = z, z
        self.recent = np.repeat(np.asarray(y0, np.float32)[None], 3, axis=0)  # the object still before frame 0
        np.asarray(
            self.runtime.frame(z, z, external_input(self.recent, self.scene.name)[-1], y0)[1]
        )  # load time: JAX compiles here

    def step(self, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """Next frame for external state y -> (seconds, z (k,), vertices (V, 3), normals (V, 3)); the
        arrays may be the runtime's buffers, overwritten by the next step."""
        self.recent = np.concatenate([self.recent[1:], np.asarray(y, np.float32)[None]])
        w = external_input(self.recent, self.scene.name)[-1]
        start = time.perf_counter()
        z, X, N = self.runtime.frame(self.z0, self.z1, w, y)
        X, N = np.asarray(X), np.asarray(N)  # JAX: wait for the result
        seconds = time.perf_counter() - start
        self.z0, self.z1 = self.z1, z
        return seconds, np.asarray(z), X, N


def play(
    model: Model,
    Y: np.ndarray,
    run_dir: str | os.PathLike,
    *,
    every: int = 2,
    video_fps: float = 30.0,
    video: bool = True,
    on_frame: Callable[[int], None] | None = None,
    on_draw: Callable[[int], None] | None = None,
    info: dict | None = None,
    character: np.ndarray | None = None,
) -> dict:
    """Run ``len(Y)`` frames driven by external states Y (T, y_dim); write metrics.csv, summary.json,
    trajectory.npz (Y, z per frame, the drawn frames' vertices) and media/play.gif|mp4 (every
    ``every``-th frame at ``video_fps``) into ``run_dir``; returns the summary. ``on_frame(t)`` after
    each frame, ``on_draw(i)`` after each video frame; ``info`` is merged into the summary. ``character``
    (T, 77): a garment scene's character path rows (qpos, qvel) of the frames, kept in trajectory.npz
    (``character_path``): the video and the report then show the garment on the character."""
    if len(Y) == 0 or int(every) < 1:
        raise ConfigError(f"play needs at least one frame and every >= 1, got {len(Y)} frames and every={every}")
    run_dir = Path(run_dir)
    scene = model.runtime.scene
    rest, triangles = rest_frame(scene)
    rows, Z, shown = _run_frames(model, rest, Y, every, video, on_frame)
    summary = _play_summary(model, rest, Y, rows, info)
    runs.atomic_write_csv(run_dir / "metrics.csv", rows, list(rows[0]))
    runs.atomic_save_npz(
        run_dir / "trajectory.npz",
        Y=np.asarray(Y, np.float32),
        z=np.stack(Z).astype(np.float32),
        shown_frames=np.array(shown["t"]),
        shown_vertices=np.stack(shown["X"]),
        **({"character_path": np.asarray(character)} if character is not None else {}),
    )
    if video:
        drawn = _character_video(run_dir, scene, Y, shown, character, video_fps) if character is not None else None
        if drawn is not None and on_draw is not None:
            on_draw(drawn["video_frames"] - 1)
        summary.update(
            drawn or _play_video(run_dir, scene, Y, rows, shown, triangles, summary["backend"], video_fps, on_draw)
        )
    runs.atomic_write_json(run_dir / "summary.json", summary)
    from animat.surrogate.report import write_surrogate_report

    write_surrogate_report(run_dir, normals=np.stack(shown["N"]) if video else None, cloth_scene=scene)
    return summary


def _run_frames(model: Model, rest: np.ndarray, Y: np.ndarray, every: int, video: bool, on_frame):
    """``(rows, Z, shown)``: the metrics row of each frame driven by ``Y`` (T, y_dim) from the ``rest`` frame
    (V, 3), its subspace state z (k,), and the drawn frames (every ``every``-th): ``t``, vertices ``X`` (V, 3),
    and with ``video`` normals ``N`` (V, 3). BLAS threads are limited over the whole loop (the timed call
    sits inside it)."""
    player = Player(model, rest, Y[0])
    rows, Z, shown = [], [], {"t": [], "X": [], "N": []}
    prev = rest
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):  # the whole loop: the timed call sits inside it
        for t, y in enumerate(Y):
            seconds, z, X, N = player.step(y)
            rows.append(_frame_row(model, t, seconds, z, X, prev, y))
            Z.append(z)
            if t % every == 0:
                shown["t"].append(t)
                shown["X"].append(X.copy())
                if video:
                    shown["N"].append(N.copy())
            prev = X.copy()
            if on_frame is not None:
                on_frame(t)
    return rows, Z, shown


def _frame_row(model: Model, t: int, seconds: float, z: np.ndarray, X: np.ndarray, prev: np.ndarray, y) -> dict:
    """Frame ``t``'s metrics row: its time (µs), whether its vertices ``X`` (V, 3) are finite, their mean speed
    (m/s) since ``prev``, its largest range ratio of the subspace state ``z`` (k,) ("" without the model's range),
    its vertices inside the collision proxies of external state ``y``."""
    scene = model.runtime.scene
    spheres, capsules = scene.proxies(y)
    finite = bool(np.isfinite(X).all())
    return {
        "frame": t,
        "microseconds": 1e6 * seconds,
        "finite": int(finite),
        "mean_speed_mps": float(np.linalg.norm(X - prev, axis=-1).mean() * scene.fps) if finite else float("nan"),
        "range_ratio": float(range_ratios(model.pca.coefficients(z[None]), model.z_range).max())
        if model.z_range is not None and finite
        else "",
        "inside_proxy_vertices": inside_count(X, spheres, capsules) if finite else 0,
    }


def _play_summary(model: Model, rest: np.ndarray, Y: np.ndarray, rows: list[dict], info: dict | None) -> dict:
    """The summary of a play's ``rows``: per-frame time (µs: mean, median, 99th percentile), frames a second,
    non-finite frames, proxy penetrations, range ratio, final speed, the rest frame's encoding error (mm)."""
    scene = model.runtime.scene
    us = np.array([r["microseconds"] for r in rows])
    ratios = [r["range_ratio"] for r in rows if r["range_ratio"] != ""]
    return {
        "scene": scene.name,
        "frames": len(Y),
        **(info or {}),
        "backend": model.runtime.backend,
        "blas_threads": BLAS_THREADS,
        "per_frame_us_mean": float(us.mean()),
        "per_frame_us_median": float(np.median(us)),
        "per_frame_us_p99": float(np.percentile(us, 99)),
        "frames_per_second": float(1e6 / us.mean()),
        "nonfinite_frames": int(sum(1 - r["finite"] for r in rows)),
        "inside_proxy_vertex_frames": int(
            sum(r["inside_proxy_vertices"] for r in rows)
        ),  # vertices inside, summed over the frames
        "max_range_ratio": float(max(ratios)) if ratios else None,
        "final_mean_speed_mps": rows[-1]["mean_speed_mps"] if rows[-1]["finite"] else None,
        "rest_encoding_error_mm": float(1e3 * np.linalg.norm(model.pca.round_trip(rest) - rest, axis=-1).mean()),
    }


def _play_video(run_dir: Path, scene, Y, rows, shown: dict, triangles, backend: str, video_fps: float, on_draw):
    """media/play.mp4 (play.gif without ffmpeg) of the ``shown`` frames, each captioned with its time a frame;
    the summary's video entries (path, frames, render seconds)."""
    from animat.surrogate.video import play_video
    from animat.viz.animate import ffmpeg_available

    path = run_dir / "media" / ("play.mp4" if ffmpeg_available() else "play.gif")
    start = time.perf_counter()
    captions = [f"frame {t:4d}  {rows[t]['microseconds']:6.0f} us/frame ({backend})" for t in shown["t"]]
    play_video(
        np.stack(shown["X"]),
        np.stack(shown["N"]),
        Y[shown["t"]],
        triangles,
        path,
        scene=scene,
        captions=captions,
        fps=video_fps,
        on_frame=on_draw,
    )
    return dict(
        video=str(path.relative_to(run_dir)),
        video_frames=len(shown["t"]),
        render_seconds=time.perf_counter() - start,
    )


def _character_video(run_dir: Path, scene, Y, shown: dict, character: np.ndarray, video_fps: float) -> dict | None:
    """media/play.gif (and .mp4) of the ``shown`` frames of a garment on its character (MuJoCo offscreen,
    :func:`animat.surrogate.video.garment_video`); the summary's video entries, or None without a GL context."""
    from animat.surrogate.video import garment_video

    start, t = time.perf_counter(), np.asarray(shown["t"])
    path = run_dir / "media" / "play.gif"
    written = garment_video(scene, np.stack(shown["X"]), Y[t], character[t], path, fps=video_fps, sample_fps=video_fps)
    if written is None:
        return None
    return dict(video=str(path.relative_to(run_dir)), video_frames=len(t), render_seconds=time.perf_counter() - start)


def need_display() -> None:
    """ConfigError unless a window can be opened here (X11/Wayland on Linux; assumed elsewhere)."""
    import sys

    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise ConfigError(
            "--interactive needs a display and none is set (DISPLAY/WAYLAND_DISPLAY); run without it to write a video"
        )


class Control:
    """The external object steered by the user; each frame it moves a fraction ``FOLLOW`` of the way
    to its target (smooth motion however the keys are hit).

    sheet: the mouse sets the sphere's (x, z) in the front view, up/down move it 5 cm towards/away
    from the viewer (-/+ y), left/right 5 cm in x. flag: left/right turn the wind 10 deg, up/down
    change its speed by 0.5 m/s. cape: left/right turn the torso 15 deg, up/down walk it 10 cm forwards/back."""

    FOLLOW = 0.1

    def __init__(self, scene, y0: np.ndarray):
        self.scene = scene
        y0 = np.asarray(y0, np.float64)
        if scene.name == "cape":
            self.state = np.array([*y0[:3], 0.0])  # x, y, z m, yaw rad (the start pose is upright, facing +y)
        elif scene.name == "flag":
            self.state = np.array([np.linalg.norm(y0[:2]), np.arctan2(y0[1], y0[0])])  # speed m/s, direction rad
        else:
            self.state = y0.copy()
        self.target = self.state.copy()

    def key(self, key: str) -> None:
        sign = {"right": 1.0, "up": 1.0, "left": -1.0, "down": -1.0}.get(key)
        if sign is None:
            return
        turn = key in ("left", "right")
        if self.scene.name == "cape":
            if turn:
                self.target[3] += np.radians(15.0) * sign
            else:
                self.target[:2] += 0.1 * sign * np.array([-np.sin(self.target[3]), np.cos(self.target[3])])
        elif self.scene.name == "flag":
            if turn:
                self.target[1] += np.radians(10.0) * sign
            else:
                self.target[0] = max(self.target[0] + 0.5 * sign, 0.0)
        elif turn:
            self.target[0] += 0.05 * sign
        else:
            self.target[1] -= 0.05 * sign  # up: towards the viewer, who looks along +y

    def mouse(self, x: float, z: float) -> None:
        if self.scene.name == "sheet":
            self.target[0], self.target[2] = x, z

    def next(self) -> np.ndarray:
        """The external state y of the next frame."""
        self.state += self.FOLLOW * (self.target - self.state)
        if self.scene.name == "cape":
            return np.concatenate([self.state[:3], euler_to_quat(self.state[3], 0.0, 0.0)]).astype(np.float32)
        if self.scene.name == "flag":
            return (self.state[0] * np.array([np.cos(self.state[1]), np.sin(self.state[1]), 0.0])).astype(np.float32)
        return self.state.astype(np.float32)


class Live:
    """The interactive window: the cloth from the front (x-z) lit by its predicted normals, advanced
    one frame per timer tick from the user's :class:`Control`."""

    def __init__(self, model: Model):
        import matplotlib.pyplot as plt

        self.scene = model.runtime.scene
        rest, self.triangles = rest_frame(self.scene)
        y0 = start_state(self.scene)
        self.control, self.player = Control(self.scene, y0), Player(model, rest, y0)
        self.fig, self.ax = plt.subplots(figsize=(6, 6))
        half = 0.8 * self.scene.side_m + 0.3
        centre = rest.mean(0)
        self.ax.set_xlim(centre[0] - half, centre[0] + half)
        self.ax.set_ylim(centre[2] - half, centre[2] + half)
        self.ax.set_aspect("equal")
        self.fig.canvas.mpl_connect("key_press_event", lambda e: self.control.key(str(e.key)))
        self.fig.canvas.mpl_connect("motion_notify_event", self.on_move)
        self.artists: list = []
        self.frame = 0

    def on_move(self, event) -> None:
        if event.inaxes is self.ax and event.xdata is not None:
            self.control.mouse(event.xdata, event.ydata)

    def advance(self) -> np.ndarray:
        """One frame: step the surrogate, redraw the cloth and proxies; returns the vertices (V, 3) m
        (with the NumPy runtime its buffer, overwritten by the next frame)."""
        from matplotlib.tri import Triangulation

        from animat.surrogate.video import FRONT_LIGHT, draw_proxies, lit

        y = self.control.next()
        seconds, _, X, N = self.player.step(y)
        for artist in self.artists:
            artist.remove()
        self.artists = []
        if np.isfinite(X).all():
            tri = Triangulation(X[:, 0], X[:, 2], self.triangles)
            self.artists.append(
                self.ax.tripcolor(tri, lit(N, FRONT_LIGHT), shading="gouraud", cmap="bone", vmin=-0.2, vmax=1.3)
            )
        xlim, ylim = self.ax.get_xlim(), self.ax.get_ylim()
        self.artists += draw_proxies(self.ax, self.scene, y, (xlim[0] + 0.1, ylim[1] - 0.1))
        self.ax.set_title(
            f"frame {self.frame}  {1e6 * seconds:.0f} us/frame  "
            f"(arrows{' / mouse' if self.scene.name == 'sheet' else ''})",
            fontsize=9,
        )
        self.frame += 1
        return X


def interactive(model: Model) -> None:
    """Open the window (the first interactive matplotlib backend that loads) and run until it is closed."""
    import matplotlib.pyplot as plt

    need_display()
    for backend in ("QtAgg", "TkAgg", "GTK3Agg", "MacOSX"):
        try:
            plt.switch_backend(backend)
            break
        except (ImportError, RuntimeError, ValueError):
            continue
    else:
        raise ConfigError("--interactive: no interactive matplotlib backend loads here (tried Qt, Tk, GTK3, macOS)")
    live = Live(model)

    def tick() -> None:
        live.advance()
        live.fig.canvas.draw_idle()

    timer = live.fig.canvas.new_timer(interval=int(1000 / live.scene.fps))
    timer.add_callback(tick)
    timer.start()
    with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):  # as in play(): the frame time shown is comparable
        plt.show()
