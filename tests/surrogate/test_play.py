import json

import numpy as np
import pytest

from animat.surrogate.collision import max_penetration
from animat.surrogate.play import Model, inside_count, load_model, play, start_state
from animat.surrogate.train import TrainConfig, train


@pytest.fixture(scope="module")
def tiny_model(tiny_dataset, tmp_path_factory):
    data, _ = tiny_dataset
    run = tmp_path_factory.mktemp("play-model") / "run"
    cfg = TrainConfig.build(
        None, data=str(data), components=8, epochs=2, batches_per_epoch=2, layers=3, window=8, test_episodes=1
    )
    train(cfg, run)
    return run


def _play(animat_cli, model, out, *args):
    code, stdout, err = animat_cli("surrogate", "play", "sheet", "--model", str(model), "--out", str(out), *args)
    assert code == 0, err
    return json.loads((out / "summary.json").read_text()), np.load(out / "trajectory.npz")


def test_play_writes_run_counts_frames_projects_and_repeats_with_the_seed(
    animat_cli, tiny_model, tiny_dataset, tmp_path
):
    summary, traj = _play(animat_cli, tiny_model, tmp_path / "a", "--frames", "50", "--seed", "3", "--fps", "20")
    assert (tmp_path / "a" / summary["video"]).stat().st_size > 0 and summary[
        "video_frames"
    ] == 17  # frames 0, 3, ..., 48
    lines = (tmp_path / "a" / "metrics.csv").read_text().splitlines()
    rows = [dict(zip(lines[0].split(","), r.split(","))) for r in lines[1:]]
    assert summary["frames"] == len(rows) == 50 == len(traj["z"]) == len(traj["Y"])
    assert summary["nonfinite_frames"] == sum(1 - int(r["finite"]) for r in rows) == 0
    assert summary["inside_proxy_vertex_frames"] == sum(int(r["inside_proxy_vertices"]) for r in rows) == 0
    assert np.isclose(summary["per_frame_us_mean"], np.mean([float(r["microseconds"]) for r in rows]))
    assert summary["max_range_ratio"] == pytest.approx(max(float(r["range_ratio"]) for r in rows))
    # the range ratio is measured against the training episodes' range of z
    from animat.surrogate.data import load_dataset
    from animat.surrogate.subspace import PCA, range_ratios

    train_ids = json.loads((tiny_model / "config.json").read_text())["train_episode_ids"]
    train_Z = PCA.load(tiny_model / "pca.npz").encode(
        np.concatenate([load_dataset(tiny_dataset[0]).X[i] for i in train_ids])
    )
    assert np.allclose([float(r["range_ratio"]) for r in rows], range_ratios(traj["z"], train_Z).max(1), rtol=1e-4)
    # the sphere strikes the cloth on this path: the decoded (unprojected) cloth of some drawn frames
    # has vertices inside it, and no drawn vertex is left inside it
    from animat.surrogate.scenes import get_scene

    scene, pca = get_scene("sheet", size=7), PCA.load(tiny_model / "pca.npz")
    assert min(abs(float(y[1])) for y in traj["Y"]) < scene.ball_radius_m
    raw_inside = 0
    for t, X in zip(traj["shown_frames"], traj["shown_vertices"]):
        proxies = scene.proxies(traj["Y"][t])
        raw_inside += inside_count(pca.decode(traj["z"][t]), *proxies)
        assert max_penetration(X, *proxies) <= 1e-5
    assert raw_inside > 0

    _, again = _play(animat_cli, tiny_model, tmp_path / "b", "--frames", "50", "--seed", "3", "--fps", "20")
    assert all(np.array_equal(traj[k], again[k]) for k in ("Y", "z", "shown_vertices"))
    _, other = _play(animat_cli, tiny_model, tmp_path / "c", "--frames", "50", "--seed", "4", "--no-animation")
    assert not np.array_equal(traj["Y"], other["Y"])
    assert not (tmp_path / "c" / "media").exists()  # --no-animation: as --no-video, every verb's flag

    # a path file holding the same external states replays the same run
    np.save(tmp_path / "path.npy", traj["Y"])
    summary, replay = _play(animat_cli, tiny_model, tmp_path / "d", "--path", str(tmp_path / "path.npy"), "--fps", "20")
    assert summary["frames"] == 50 and np.array_equal(replay["z"], traj["z"])


def test_bad_input_is_one_line_exit_2(animat_cli, tiny_model, tmp_path, monkeypatch):
    import shutil

    np.save(tmp_path / "flat.npy", np.zeros((30, 2)))
    np.save(tmp_path / "complex.npy", np.zeros((30, 3), complex))
    np.savez(tmp_path / "archive.npz", Y=np.zeros((30, 3)))
    (tmp_path / "junk.npy").write_text("not an array")
    (tmp_path / "badcfg").mkdir()
    (tmp_path / "badcfg" / "config.json").write_text("[1, 2")
    shutil.copytree(tiny_model, tmp_path / "no-normals")
    (tmp_path / "no-normals" / "normals.npz").unlink()
    cases = [
        (("sheet", "--model", str(tmp_path / "badcfg")), "config.json' is corrupt"),
        (("sheet", "--model", str(tmp_path / "no-normals")), "cannot read normals file"),
        (("sheet", "--model", str(tiny_model), "--fps", "0"), "--fps must be in (0, 60]"),
        (("sheet", "--model", str(tiny_model), "--path", str(tmp_path / "archive.npz")), "an .npz archive"),
        (("sheet", "--model", str(tiny_model), "--path", str(tmp_path / "complex.npy")), "must be finite real numbers"),
        (("sheet", "--model", str(tmp_path / "none")), "config.json"),
        (("flag", "--model", str(tiny_model)), "trained on scene 'sheet', not 'flag'"),
        (("sheet", "--model", str(tiny_model), "--frames", "0"), "--frames must be > 0"),
        (("sheet", "--model", str(tiny_model), "--seed", "-1"), "--seed must be >= 0"),
        (
            ("sheet", "--model", str(tiny_model), "--path", str(tmp_path / "flat.npy")),
            "expected external states of shape (frames, 3)",
        ),
        (("sheet", "--model", str(tiny_model), "--path", str(tmp_path / "junk.npy")), "cannot read a .npy array"),
        (
            ("sheet", "--model", str(tiny_model), "--path", str(tmp_path / "flat.npy"), "--backend", "torch"),
            "--backend must be one of",
        ),
    ]
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    cases.append((("sheet", "--model", str(tiny_model), "--interactive"), "--interactive needs a display"))
    for i, (args, message) in enumerate(cases):
        code, _, err = animat_cli("surrogate", "play", *args, "--out", str(tmp_path / f"out{i}"))
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (args, err)
        assert not (tmp_path / f"out{i}").exists()


def test_cloth_left_alone_stays_finite_and_comes_to_rest(animat_cli, tiny_model, tmp_path):
    from animat.surrogate.scenes import get_scene

    y0 = start_state(get_scene("sheet", size=7))  # the sphere held away from the cloth
    np.save(tmp_path / "still.npy", np.repeat(y0[None], 1500, axis=0))
    summary, traj = _play(
        animat_cli, tiny_model, tmp_path / "still", "--path", str(tmp_path / "still.npy"), "--no-video"
    )
    assert summary["frames"] == 1500 and summary["nonfinite_frames"] == 0 and np.isfinite(summary["max_range_ratio"])
    # and it comes to rest: |dz| per frame (the vertices' motion, the basis being orthonormal) over the last second
    # is a vanishing fraction of the first second's (measured on 2026-12-01: 4e-3 -> 2e-12, float32 round-off)
    step = np.linalg.norm(np.diff(traj["z"].astype(np.float64), axis=0), axis=1)
    assert step[-60:].max() < 1e-4 * step[:60].mean(), (step[:60].mean(), step[-60:].max())


def test_nonfinite_frames_are_counted_and_drawn(tiny_model, tmp_path):
    model = load_model(tiny_model, "sheet")
    real = model.runtime.frame
    calls = []

    class Broken:  # the tiny runtime, non-finite from its 8th call on: the 1st is the warm-up, so frames 6-11
        scene, backend = model.runtime.scene, "numpy"

        def frame(self, *args):
            calls.append(1)
            z, X, N = real(*args)
            return (z, X * np.nan, N) if len(calls) >= 8 else (z, X, N)

    Y = np.repeat(start_state(model.runtime.scene)[None], 12, axis=0)
    summary = play(Model(Broken(), model.pca, model.z_range), Y, tmp_path, every=1)
    assert summary["frames"] == 12 and summary["nonfinite_frames"] == 6 and summary["video_frames"] == 12


def test_inside_count_closed_form():
    sphere = np.array([[0.0, 0.0, 0.0, 1.0]], np.float32)
    capsule = np.array([[5.0, 0.0, -1.0, 5.0, 0.0, 1.0, 0.5]], np.float32)
    X = np.array([[0.5, 0, 0], [0, 0.9, 0], [0, 0, 1.5], [5.2, 0, 0.9], [5.2, 0, 1.4], [5.6, 0, 0]], np.float32)
    none = np.zeros((0, 4), np.float32), np.zeros((0, 7), np.float32)
    assert inside_count(X, sphere, none[1]) == 2
    assert inside_count(X, none[0], capsule) == 2  # (5.2, 0, 1.4) is 0.45 from the end cap (5, 0, 1)
    assert inside_count(X, sphere, capsule) == 4 and inside_count(X, *none) == 0


def test_live_window_follows_the_keys_and_mouse_without_a_display(tiny_model):
    from types import SimpleNamespace

    import matplotlib.pyplot as plt

    from animat.surrogate.play import Live

    live = Live(load_model(tiny_model, "sheet"))  # drawn with the Agg backend here
    start = live.control.state.copy()
    live.control.key("up")  # 5 cm towards the viewer (-y)
    live.on_move(SimpleNamespace(inaxes=live.ax, xdata=0.2, ydata=1.7))
    for _ in range(60):
        X = live.advance()
    plt.close(live.fig)
    assert np.isfinite(X).all() and live.frame == 60
    assert np.allclose(live.control.state, [0.2, start[1] - 0.05, 1.7], atol=1e-3)  # 0.9^60 of the way left


@pytest.mark.parametrize(
    "scene, keys, expect",
    [
        (
            "flag",
            ["up", "left"],
            lambda y0, y: (
                np.isclose(np.linalg.norm(y[:2]), np.linalg.norm(y0[:2]) + 0.5, atol=1e-2)
                and np.isclose(np.degrees(np.arctan2(y[1], y[0]) - np.arctan2(y0[1], y0[0])), -10.0, atol=0.1)
                and y[2] == 0
            ),
        ),
        ("cape", ["up"], lambda y0, y: np.isclose(y[1] - y0[1], 0.1, atol=1e-3) and np.allclose(y[3:], [1, 0, 0, 0])),
    ],
)
def test_control_keys_move_the_flag_wind_and_the_cape(scene, keys, expect):
    from animat.surrogate.play import Control, start_state
    from animat.surrogate.scenes import get_scene

    sc = get_scene(scene, size=5)
    y0 = start_state(sc)
    control = Control(sc, y0)
    for k in keys:
        control.key(k)
    for _ in range(200):
        y = control.next()
    assert expect(y0, y), (y0, y)


def test_play_starts_at_rest_and_feeds_each_frame_its_own_state_and_input(tiny_model, tmp_path):
    """Frame 0 gets z_{-2} = z_{-1} = the encoded rest mesh and w_0 = [y_0, 0] (the object still
    before it); frame t gets (z_{t-2}, z_{t-1}) from the previous outputs and w_t = [y_t, y_t - y_{t-1}]."""
    from animat.surrogate.play import rest_frame

    model = load_model(tiny_model, "sheet")
    real, calls = model.runtime.frame, []

    class Recording:
        scene, backend = model.runtime.scene, "numpy"

        def frame(self, z0, z1, w, y):
            out = real(z0, z1, w, y)
            calls.append((np.array(z0), np.array(z1), np.array(w), np.array(y), np.array(out[0])))
            return out

    Y = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    play(Model(Recording(), model.pca, model.z_range), Y, tmp_path, every=1, video=False)
    assert len(calls) == 1 + len(Y)  # the warm-up, then one call per frame
    rest = model.pca.encode(rest_frame(model.runtime.scene)[0])
    z0, z1, w, y, _ = calls[1]
    assert np.array_equal(z0, rest) and np.array_equal(z1, rest) and np.array_equal(y, Y[0])
    assert np.array_equal(w, np.concatenate([Y[0], np.zeros(3, np.float32)]))
    for t in range(1, len(Y)):
        z0, z1, w, y, _ = calls[t + 1]
        assert np.array_equal(z0, calls[t][1]) and np.array_equal(z1, calls[t][4]) and np.array_equal(y, Y[t])
        assert np.allclose(w, np.concatenate([Y[t], Y[t] - Y[t - 1]]))
    assert np.array_equal(np.load(tmp_path / "trajectory.npz")["z"], np.stack([c[4] for c in calls[1:]]))
