import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.scenes import get_scene


def test_sheet_pinned_corners_fixed_and_data_finite():
    scene = get_scene("sheet", size=7)
    out = scene.simulate(60, 0)
    X, Y = out["X"], out["Y"]
    assert X.shape == (60, 49, 3) and Y.shape == (60, 3) and X.dtype == np.float32
    assert out["dropped"] == 0
    assert np.isfinite(X).all() and np.isfinite(Y).all()
    pinned = X[:, scene.pinned]
    assert np.abs(pinned - pinned[0]).max() < 1e-6
    assert np.allclose(pinned[0, :, 2], scene.top_z_m, atol=1e-5)  # the two top corners
    assert np.ptp(Y, axis=0).max() > 0.05  # the sphere moves
    assert np.ptp(X[:, :, 2], axis=0).max() > 0  # the cloth moves


def test_sheet_same_seed_same_data():
    scene = get_scene("sheet", size=5)
    a, b = scene.simulate(20, 3), scene.simulate(20, 3)
    assert np.array_equal(a["X"], b["X"]) and np.array_equal(a["Y"], b["Y"])


def test_misbehaving_frames_are_dropped():
    scene = get_scene("sheet", size=5, max_edge_ratio=0.5)  # every frame fails the edge check
    out = scene.simulate(10, 0)
    assert out["dropped"] == 10 and out["X"].shape[0] == 0


def test_bad_scene_input():
    with pytest.raises(ConfigError, match="unknown scene 'flagpole'"):
        get_scene("flagpole")
    with pytest.raises(ConfigError, match="size"):
        get_scene("sheet", size=2)
    with pytest.raises(ConfigError, match="unknown sheet scene option"):
        get_scene("sheet", colour="red")
    with pytest.raises(ConfigError, match="frames must be > 0"):
        get_scene("sheet", size=5).simulate(0, 0)


def test_flag_pole_fixed_wind_recorded_and_flag_blown():
    scene = get_scene("flag", size=7)
    out = scene.simulate(90, 1)
    X, Y = out["X"], out["Y"]
    assert X.shape == (90, 49, 3) and Y.shape == (90, 3) and out["dropped"] == 0
    assert np.isfinite(X).all()
    pole = X[:, scene.pinned]
    assert np.allclose(pole[:, :, 0], -scene.side_m / 2) and np.abs(pole - pole[0]).max() < 1e-6
    speed = np.linalg.norm(Y, axis=1)
    assert speed.min() >= scene.wind_speed_mps[0] * 0.99 - 1e-6 and speed.max() <= scene.wind_speed_mps[1] + 1e-6
    assert np.abs(X[:, :, 1]).max() > 0.05  # the wind pushes the cloth out of its plane
    assert scene.topology()["pinned"].shape == (7,)
