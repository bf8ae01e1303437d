"""The flag scene's calm air (``calm_probability``): zero-wind holds in which the reference cloth comes to rest."""

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.scenes import get_scene


def _zero_runs(path: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs [a, b) of frames of ``path`` (T, 3) with zero wind."""
    calm = np.r_[0, (np.linalg.norm(path, axis=1) == 0).astype(int), 0]
    edges = np.flatnonzero(np.diff(calm))
    return list(zip(edges[::2], edges[1::2]))


def test_default_wind_paths_unchanged():
    """calm_probability = 0 draws no extra numbers: the values below came from the flag scene's
    controls before the option existed (seed 3, 90 frames after the 30-frame warm-up)."""
    path = get_scene("flag", size=5).controls(90, np.random.default_rng(3))
    expected = np.array(
        [
            [0.835419430576755, -0.5058249412561269, 0.0],
            [4.8085096774061284, 0.8273675085514128, 0.0],
            [3.0382925608421556, -2.103181305514771, 0.0],
        ]
    )
    np.testing.assert_array_equal(path[[0, 40, 119]], expected)
    assert not _zero_runs(path)


def test_calm_air_is_held_and_the_reference_flag_comes_to_rest():
    """Each calm spell lasts at least the ramp's last frame plus hold_seconds; in it the reference cloth slows
    from its wind-blown speed to a few per cent of it within 2 s (air damping 2 /s)."""
    scene = get_scene("flag", size=7, calm_probability=0.5, hold_seconds=(2.0, 2.0))
    path = scene.controls(300, np.random.default_rng(0))
    runs = _zero_runs(path)
    assert runs and all(b - a >= 121 or b == len(path) for a, b in runs)
    speeds = np.linalg.norm(path, axis=1)
    assert speeds.max() <= scene.wind_speed_mps[1] + 1e-9
    X = scene.simulate(300, path=path)["X"]
    speed = np.linalg.norm(np.diff(X, axis=0), axis=-1).mean(axis=1) * scene.fps  # (T-1,) m/s
    a, b = (r - scene.warmup_frames for r in runs[0])
    assert a >= 60 and b <= len(X)
    assert speed[b - 31 : b - 1].mean() < 0.1 * speed[a - 60 : a].mean()


def test_calm_probability_one_is_still_air_and_out_of_range_rejected():
    path = get_scene("flag", size=5, calm_probability=1.0).controls(60, np.random.default_rng(0))
    assert not path.any()
    with pytest.raises(ConfigError, match="calm_probability"):
        get_scene("flag", calm_probability=1.5)
    with pytest.raises(ConfigError, match="calm_probability"):
        get_scene("flag", calm_probability=-0.1)
