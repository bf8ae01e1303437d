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


@pytest.mark.parametrize("fault", ["stretched", "mujoco-reset"])
def test_a_bad_frame_mid_episode_truncates_the_episode_there(fault):
    """At recorded frame 8 of 20 the cloth is restarted badly: one free vertex 1 m off (an edge 4x its rest
    length, over max_edge_ratio 3), or every vertex at 1e11 m/s (past mjMAXVAL: MuJoCo resets the state to
    rest and warns; the cloth is then finite with rest-length edges, only the warning shows). Either way
    the episode keeps exactly the 8 good frames before it, as the undisturbed run recorded them."""
    scene = get_scene("sheet", size=5)
    full = scene.simulate(20, 0)
    x, v = full["X"][8].astype(np.float64), np.zeros((scene.n_vertices, 3))
    free = np.setdiff1d(np.arange(scene.n_vertices), scene.pinned)
    if fault == "stretched":
        x[free[0], 1] += 1.0
    else:
        v[free] = 1e11
    out = scene.simulate(20, 0, restart=(8, x, v))
    assert out["dropped"] == 12 and out["X"].shape[0] == out["Y"].shape[0] == 8
    assert np.array_equal(out["X"], full["X"][:8]) and np.array_equal(out["Y"], full["Y"][:8])
    harmless = scene.simulate(20, 0, restart=(8, full["X"][8].astype(np.float64), np.zeros((scene.n_vertices, 3))))
    assert harmless["dropped"] == 0 and harmless["X"].shape[0] == 20


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


def test_flag_wind_starts_from_the_cloth_at_rest():
    """The first substep sees the vertices' rest positions, not zeros: in still air the cloth at
    rest gets no wind force (a zero ``prev`` would give every vertex a speed of x / dt)."""
    import mujoco

    from animat.surrogate.flag import FlagScene

    seen = []

    class Probe(FlagScene):
        def _setup(self, m, d) -> dict:
            state = super()._setup(m, d)
            seen.append(state["prev"].copy())  # _apply moves it on
            return state

    scene = Probe(size=5)
    rest = scene.topology()["rest"]
    scene.simulate(1, 0)
    assert np.allclose(seen[0], rest, atol=1e-6)
    m = scene.model()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    scene._apply(m, d, scene._setup(m, d), np.zeros(3))
    assert np.isfinite(d.xfrc_applied).all() and np.abs(d.xfrc_applied).max() == 0.0


def test_cape_follows_the_torso_in_its_frame_and_input_is_in_that_frame():
    from animat.surrogate.cape import cape_input, euler_to_quat

    scene = get_scene("cape", size=7)
    out = scene.simulate(120, 0)
    X, Y = out["X"], out["Y"]
    assert X.shape == (120, 49, 3) and Y.shape == (120, 7) and out["dropped"] == 0
    top = X[:, scene.pinned]  # attached row, in the torso frame: stays near its anchors
    assert np.abs(top[..., 2] - scene.torso_half_m).max() < 0.03
    assert np.ptp(Y[:, :3], axis=0).max() > 0.2  # the torso moves in the world
    assert np.ptp(X[:, :, 1], axis=0).max() > 0.02  # and the cape swings in its frame
    # cape_input, closed forms: a torso yawing at a constant rate while moving along world +x
    T, rate = 5, 0.1
    yaw = rate * np.arange(T)
    Yc = np.concatenate(
        [np.stack([np.arange(T) * 0.02, np.zeros(T), np.ones(T)], 1), euler_to_quat(yaw, 0 * yaw, 0 * yaw)], 1
    )
    w = cape_input(Yc)
    assert w.shape == (T, 15)
    assert np.allclose(w[1:, 3:6], [0, 0, rate], atol=1e-6)  # angular velocity, body frame
    assert np.allclose(w[1:, 0], 0.02 * np.cos(yaw[1:]), atol=1e-6) and np.allclose(
        w[1:, 1], -0.02 * np.sin(yaw[1:]), atol=1e-6
    )
    assert np.allclose(w[:, 6:9], [0, 0, -1], atol=1e-6)  # upright: gravity straight down
    tilted = cape_input(
        np.concatenate([np.zeros((2, 3)), euler_to_quat(np.zeros(2), np.full(2, np.pi / 2), np.zeros(2))], 1)
    )
    assert np.allclose(tilted[:, 6:9], [1, 0, 0], atol=1e-6)  # pitched 90 deg about y: gravity along body +x
    sphere, capsule = scene.proxies(Y[0])
    assert sphere.shape == (0, 4) and capsule.shape == (1, 7)


def test_stopped_external_state_holds_the_sphere_and_torso_and_zeroes_the_wind():
    """The settling checks stop the external objects: the sheet's sphere and the cape's torso stay
    where they are (held state), the flag's wind drops to zero (a held wind keeps a flag fluttering)."""
    y = np.array([[0.3, -0.2, 1.1]], np.float32)
    np.testing.assert_array_equal(get_scene("sheet", size=5).stopped(y), y)
    cape_y = np.arange(7, dtype=np.float32)[None]
    np.testing.assert_array_equal(get_scene("cape", size=5).stopped(cape_y), cape_y)
    wind = get_scene("flag", size=5).stopped(y)
    assert wind.shape == y.shape and not wind.any()


def _still_stretches(path: np.ndarray, frames: int) -> list[np.ndarray]:
    """Positions where ``path`` (T, 3) stands still for at least ``frames`` consecutive frames."""
    same = np.all(path[1:] == path[:-1], axis=1)
    run, out = 0, []
    for t, s in enumerate(same):
        run = run + 1 if s else 0
        if run == frames - 1:
            out.append(path[t])
    return out


def test_stop_anywhere_holds_the_sphere_between_away_and_through_points():
    """Default paths hold only away from the cloth (|y| >= 3 r + 0.2); with stop_anywhere = 1 every
    segment also stops part-way, so some holds are nearer the cloth plane; out-of-range rejected."""
    rng = lambda: np.random.default_rng(4)  # noqa: E731
    near = 3 * 0.1 + 0.2
    plain = get_scene("sheet", size=5, hold_seconds=(0.5, 0.5))
    holds = _still_stretches(plain.ball_path(3000, rng())[plain.warmup_frames :], 30)
    assert holds and all(abs(p[1]) >= near - 1e-9 for p in holds)
    anywhere = get_scene("sheet", size=5, hold_seconds=(0.5, 0.5), stop_anywhere=1.0)
    path = anywhere.ball_path(3000, rng())
    assert path.shape == (3000 + anywhere.warmup_frames, 3) and np.isfinite(path).all()
    holds = _still_stretches(path[anywhere.warmup_frames :], 30)
    assert sum(abs(p[1]) < near for p in holds) >= 5
    with pytest.raises(ConfigError, match="stop_anywhere"):
        get_scene("sheet", stop_anywhere=1.5)


def test_bending_stiffness_holds_a_small_flag_flat_while_a_membrane_droops():
    """A 0.2 m flag in still air, pinned along its vertical pole (z from 1.8 to 2.0 m): as a pure
    membrane (elastic2d = stretch) its free edge droops ~4 cm below the pole's foot after 1 s; with
    plate bending (both: D = E t^3 / 12(1 - nu^2) = 6.9e-4 N m, bending-gravity length
    (D / (rho g))^(1/3) = 0.07 m, a third of the flag's width) it stays within a few mm of it."""
    lowest = {}
    for elastic in ("stretch", "both"):
        scene = get_scene(
            "flag", size=7, side_m=0.2, mass_kg=0.01, thickness_m=2e-3, wind_speed_mps=(0.0, 0.0), elastic2d=elastic
        )
        run = scene.simulate(60, np.random.SeedSequence([0, 1]))
        assert run["dropped"] == 0 and not run["Y"].any()
        lowest[elastic] = float(run["X"][-1][:, 2].min() - run["X"][-1][scene.pinned, 2].min())
    assert lowest["stretch"] < -0.02 and lowest["both"] > -0.005
    with pytest.raises(ConfigError, match="elastic2d"):
        get_scene("flag", elastic2d="bend")
