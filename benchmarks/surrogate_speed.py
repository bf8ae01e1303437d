"""Per-frame cost of the cloth surrogate vs its MuJoCo reference, every scene, side by side in one run.

Reference: the scene simulated frame by frame at the settings its dataset uses (``configs/
surrogate_<scene>.toml``: cloth size, 60 fps, substeps, 30 CG iterations), timed over ``--frames``
frames after a 5-frame warm-up, best of ``--reference-repeats`` identical runs; and the *cheapest*
settings that still look right: the fewest substeps and solver iterations, tried from cheap to dear,
whose run drops no frame and stays within ``--tolerance`` % of the cloth's size (mean vertex
distance over the run) of the data-settings run with the same seed and external path.

Surrogate: :class:`animat.surrogate.runtime.Runtime` with the scene's architecture (k components, ``layers`` layers
of ``hidden_mult`` k units: the scene's config's ``[train]`` values, else 10 and 1.5), the runtime's default normals
rank, and random weights -- the cost does not depend on the weights -- doing per frame everything a game needs:
subspace step, decompression to vertices, normals by regression, projection out of the scene's collision proxies
(and, where the scene's config trains in the cloth's own frame, ``cloth_frame = "azimuth"`` -- the flag -- turning
the wind into that frame and the cloth back out of it). The runtime's backends are timed side by side: the compiled
numba kernel (one call per frame), the NumPy path (folded, preallocated) and jitted JAX; the fastest counts. The
plain NumPy definition (``frame_step``) is timed beside them, and the NumPy path per stage (network, positions
product, normals product, normal lengths, collision, proxy placement). ``numba_setup_seconds``: the first numba
Runtime's construction in the process (loading the cached kernel, or compiling it).

The reference MuJoCo step is single-threaded, so the surrogate runs on one core too: OpenBLAS is
pinned to one thread (``OPENBLAS_NUM_THREADS``, default 1, set before NumPy loads; export it to
compare -- on the shared 2-core test machine 2 threads made a frame ~60x slower) and so is XLA
(``XLA_FLAGS``, default ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``).
The 1-minute load average is recorded: all timings here are best-of-repeats.

Prints one JSON line; headline keys ``speedup_vs_reference_<scene>`` and
``speedup_vs_cheapest_reference_<scene>``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)  # before JAX starts

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAST_BACKENDS = ("numba", "numpy", "jax")  # the runtime's per-frame backends; the fastest counts
CHEAP_SETTINGS = [(1, 10), (1, 30), (2, 10), (2, 30), (3, 10), (3, 30)]  # (substeps, CG iterations), cheapest first


def data_settings(scene: str, section: str = "scene") -> dict:
    """The ``[section]`` table of ``configs/surrogate_<scene>.toml`` (empty when there is none)."""
    from animat.config import load_toml

    path = ROOT / "configs" / f"surrogate_{scene.replace('-', '_')}.toml"  # cape-character: surrogate_cape_character
    return dict(load_toml(path).get(section, {})) if path.is_file() else {}


def reference(scene: str, frames: int, seed: int, repeats: int = 1, **options) -> dict:
    """The run of ``repeats`` identical ones with the least seconds per frame (best-of, as for the surrogate)."""
    from animat.surrogate.scenes import get_scene

    sim = get_scene(scene, **{**options, "warmup_frames": 5})
    return min((sim.simulate(frames, seed) for _ in range(max(1, repeats))), key=lambda run: run["seconds_per_frame"])


def cheapest(scene: str, frames: int, seed: int, base: dict, full: dict, tolerance: float, repeats: int) -> dict:
    """The first setting of CHEAP_SETTINGS (cheaper than the data's) that looks right, else the data's."""
    from animat.surrogate.scenes import get_scene

    side = get_scene(scene, **base).side_m
    for substeps, iterations in CHEAP_SETTINGS:
        if (substeps, iterations) >= (int(base.get("substeps", 4)), 30):
            break
        run = reference(scene, frames, seed, repeats, **{**base, "substeps": substeps, "solver_iterations": iterations})
        if run["dropped"] == 0:
            deviation = 100 * float(np.linalg.norm(run["X"] - full["X"], axis=-1).mean()) / side
            if deviation <= tolerance:
                return {
                    "substeps": substeps,
                    "solver_iterations": iterations,
                    "deviation_percent_of_size": deviation,
                    "seconds_per_frame": run["seconds_per_frame"],
                }
    return {
        "substeps": int(base.get("substeps", 4)),
        "solver_iterations": 30,
        "deviation_percent_of_size": 0.0,
        "seconds_per_frame": full["seconds_per_frame"],
    }


def _best_seconds(fn, calls: int, repeats: int) -> float:
    """Best-of-``repeats`` mean seconds per call of ``fn()`` over ``calls`` calls."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _rollout(rt, W: np.ndarray, Y: np.ndarray, k: int) -> None:
    """``len(W)`` frames of Runtime ``rt`` from rest, each on its own prediction."""
    z0, z1 = np.zeros(k, np.float32), np.zeros(k, np.float32)
    for t in range(len(W)):
        z, X, N = rt.frame(z0, z1, W[t], Y[t])
        z0, z1 = z1, z
    np.asarray(X)  # waits for JAX's last frame


def surrogate_seconds_per_frame(
    scene_name: str,
    options: dict,
    k: int,
    frames: int,
    repeats: int = 20,
    framed: bool = False,
    hidden_mult: float = 1.5,
    layers: int = 10,
) -> dict:
    """Seconds per frame of each backend (and the NumPy path's stages); ``framed``: the model in the
    flag's own frame (``cloth_frame = "azimuth"``: one more state entry, the wind turned in and the
    cloth turned out every frame)."""
    import jax

    from animat.surrogate.model import external_input, init_mlp
    from animat.surrogate.runtime import NumpyFrame, Runtime
    from animat.surrogate.scenes import get_scene

    scene = get_scene(scene_name, **options)
    V = scene.n_vertices
    Y = scene.recorded_states(scene.controls(frames, np.random.default_rng(0))[-frames:])  # a garment's: body frames
    W = external_input(Y, scene_name)
    w = W.shape[1]
    rng = np.random.default_rng(1)
    s = k + int(framed)  # the state: the subspace's coefficients (and the flag's azimuth)
    rest = scene.topology()["rest"]
    arrays = {
        k_: np.asarray(v)
        for k_, v in init_mlp(jax.random.PRNGKey(0), 2 * s + w, s, int(round(hidden_mult * k)), layers).items()
    }
    arrays.update(
        alpha=np.full(s, 0.99),
        beta=np.full(s, 0.5),
        in_mean=np.zeros(2 * s + w),
        in_std=np.ones(2 * s + w),
        out_mean=np.zeros(s),
        out_std=np.ones(s),
        components=rng.normal(size=(k, 3 * V)) / np.sqrt(3 * V),
        mean=rest.reshape(-1),
        normals=rng.normal(size=(k + 1, 3 * V)),
        singular_values=np.geomspace(100.0, 1.0, k),
    )
    if framed:
        arrays.update(frame_scale=np.float32(0.3 * np.sqrt(V)), frame_pole=rest[scene.pinned, :2].mean(0))
    out = {}
    for backend in FAST_BACKENDS + ("reference",):
        t0 = time.perf_counter()
        rt = Runtime(arrays, layers, scene, backend)
        out[f"{backend}_setup"] = time.perf_counter() - t0
        rollout = partial(_rollout, rt, W, Y, s)
        rollout()  # compiles (JAX), warms caches
        out[backend] = _best_seconds(rollout, 1, repeats) / frames
    fast = NumpyFrame(rt.arrays, layers, V)
    spheres, capsules = scene.proxies(Y[0])
    z = np.zeros(s, np.float32)
    calls = 20 * frames
    out["stages"] = {
        "network": _best_seconds(lambda: fast.network(z, z, W[0]), calls, repeats),
        "positions_product": _best_seconds(fast.decode_positions, calls, repeats),
        "normals_product": _best_seconds(fast.decode_normals, calls, repeats),
        "normal_lengths": _best_seconds(fast.normalise, calls, repeats),
        "collision": _best_seconds(lambda: fast.project(fast.X, spheres, capsules), calls, repeats),
        "proxies": _best_seconds(lambda: scene.proxies(Y[0]), calls, repeats),
    }
    out["megabytes"] = rt.megabytes
    out["normals_rank"] = rt.normals_rank
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default="sheet,flag,cape")
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--components", type=int, default=64)
    ap.add_argument("--reference-repeats", type=int, default=3, help="best-of repeats of each timed reference run")
    ap.add_argument("--tolerance", type=float, default=1.0, help="'looks right': mean deviation, %% of cloth size")
    args = ap.parse_args()

    import jax

    result = {
        "benchmark": "surrogate_speed",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "jax_backend": jax.default_backend(),
        "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
        "xla_flags": os.environ["XLA_FLAGS"],
        "load_average_1min": os.getloadavg()[0],
        "frames": args.frames,
        "reference_repeats": args.reference_repeats,
        "components": args.components,
        "tolerance_percent_of_size": args.tolerance,
    }
    for scene in args.scenes.split(","):
        base = data_settings(scene)
        full = reference(scene, args.frames, 0, args.reference_repeats, **base)
        cheap = cheapest(scene, args.frames, 0, base, full, args.tolerance, args.reference_repeats)
        train = data_settings(scene, "train")
        framed = train.get("cloth_frame", "world") == "azimuth"
        hidden_mult, layers = float(train.get("hidden_mult", 1.5)), int(train.get("layers", 10))
        sur = surrogate_seconds_per_frame(
            scene, base, args.components, args.frames, framed=framed, hidden_mult=hidden_mult, layers=layers
        )
        fastest = min(FAST_BACKENDS, key=lambda b: sur[b])
        result.setdefault("numba_setup_seconds", sur["numba_setup"])
        result.update(
            {
                f"vertices_{scene}": int(full["X"].shape[1]),
                f"substeps_{scene}": int(base.get("substeps", 4)),
                f"cloth_frame_{scene}": framed,
                f"hidden_mult_{scene}": hidden_mult,
                f"layers_{scene}": layers,
                f"reference_ms_per_frame_{scene}": full["seconds_per_frame"] * 1e3,
                f"cheapest_reference_{scene}": f"substeps={cheap['substeps']} iterations={cheap['solver_iterations']}",
                f"cheapest_reference_deviation_percent_{scene}": cheap["deviation_percent_of_size"],
                f"cheapest_reference_ms_per_frame_{scene}": cheap["seconds_per_frame"] * 1e3,
                **{f"surrogate_{b}_ms_per_frame_{scene}": sur[b] * 1e3 for b in FAST_BACKENDS},
                f"surrogate_fastest_backend_{scene}": fastest,
                f"surrogate_numpy_plain_ms_per_frame_{scene}": sur["reference"] * 1e3,
                **{f"surrogate_numpy_{stage}_us_{scene}": sec * 1e6 for stage, sec in sur["stages"].items()},
                f"surrogate_megabytes_{scene}": sur["megabytes"],
                f"normals_rank_{scene}": sur["normals_rank"],
                f"speedup_vs_reference_{scene}": full["seconds_per_frame"] / sur[fastest],
                f"speedup_vs_cheapest_reference_{scene}": cheap["seconds_per_frame"] / sur[fastest],
            }
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
