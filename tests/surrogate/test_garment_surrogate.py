"""The surrogate on the garment scenes (issue 48): the character's input in its root frame, training on a small
garment dataset, ``evaluate --clip`` and ``play --clip`` on a tiny run, and their bad input."""

import json

import numpy as np
import pytest

from animat import quaternions as quat
from animat.surrogate.cape import cape_input
from animat.surrogate.character_input import CHARACTER_INPUT_SIZE, character_input

CLIPS = ["shared:humanoid3d_walk.txt", "shared:humanoid3d_kick.txt"]
SMALL = {"size": 5, "rows": 6, "warmup_frames": 5, "clips": CLIPS}
JOG = "shared:humanoid3d_jog.txt"  # held out of the scene's training clips


def _frames(rng, T: int = 6) -> np.ndarray:
    """(T, 105) random body frames: positions (m) and unit quaternions of 15 bodies."""
    pos = rng.normal(size=(T, 15, 3))
    rot = quat.normalize(rng.normal(size=(T, 15, 4)))
    return np.concatenate([pos, rot], axis=-1).reshape(T, -1)


def test_character_input_is_seen_from_the_root_frame():
    """Turning the whole world about the vertical and moving it leaves the input unchanged (every entry is in the
    root frame; gravity keeps its direction); the root's part is the capsule cape's input of the root's frame."""
    rng = np.random.default_rng(0)
    Y = _frames(rng)
    w = character_input(Y)
    assert w.shape == (6, CHARACTER_INPUT_SIZE) == (6, 99) and w.dtype == np.float32
    assert np.array_equal(w[:, :15], cape_input(Y[:, :7]))
    turn = quat.about_axis(np.array([0.0, 0.0, 1.0]), 0.7)
    frames = Y.reshape(6, 15, 7)
    moved = np.concatenate([quat.rotate(turn, frames[..., :3]) + [3.0, -1.0, 0.5], quat.mul(turn, frames[..., 3:])], -1)
    assert np.allclose(character_input(moved.reshape(6, -1)), w, atol=1e-5)
    # a joint's position in the root frame, and its world velocity seen from there
    p, q = frames[:, 0, :3], quat.normalize(frames[:, 0, 3:])
    local = quat.rotate(quat.conj(q), frames[:, 5, :3] - p)
    velocity = quat.rotate(quat.conj(q[1:]), np.diff(frames[:, 5, :3], axis=0))
    assert np.allclose(w[:, 15 + 4 * 3 : 15 + 5 * 3], local, atol=1e-5)
    assert np.allclose(w[1:, 57 + 4 * 3 : 57 + 5 * 3], velocity, atol=1e-5) and not w[0, 57:].any()


@pytest.mark.parametrize("name", ["cape-character", "skirt-character"])
def test_the_scene_proxies_are_the_shapes_placed_in_the_root_frame(name):
    """The runtime's one-pass placement (:class:`animat.surrogate.garment.RootShapes`) is the definition's."""
    from animat.character.bones import place_shapes
    from animat.surrogate.garment import CapeCharacterScene, SkirtCharacterScene
    from animat.surrogate.root_frame import bodies_in_root

    scene = {"cape-character": CapeCharacterScene, "skirt-character": SkirtCharacterScene}[name]()  # no clips read
    for y in _frames(np.random.default_rng(1), 20):
        spheres, capsules = scene.proxies(y)
        want = place_shapes(*bodies_in_root(y), pad=scene.contact_radius_m)
        assert np.allclose(spheres, want[0], atol=1e-6) and np.allclose(capsules, want[1], atol=1e-6)
        assert spheres.dtype == capsules.dtype == np.float32 and capsules.shape == (10, 7)


@pytest.mark.deepmimic
def test_recorded_states_are_what_simulate_records():
    from animat.surrogate.scenes import get_scene

    scene = get_scene("skirt-character", **{**SMALL, "clips": tuple(SMALL["clips"])})
    path = scene.controls(20, np.random.default_rng(3))
    simulated = scene.simulate(20, path=path)["Y"]
    assert np.abs(scene.recorded_states(path[scene.warmup_frames :]) - simulated).max() < 1e-6


@pytest.fixture(scope="module")
def garment_run(tmp_path_factory):
    """A 300-frame cape-character dataset (5 x 6 vertices, 3 episodes) and a run trained on it for 2 x 2 steps."""
    from animat.surrogate.data import generate
    from animat.surrogate.options import TrainConfig
    from animat.surrogate.train import train

    base = tmp_path_factory.mktemp("garment")
    generate("cape-character", 3, 100, 0, base / "data", scene_options=SMALL)
    cfg = TrainConfig.build(
        data=str(base / "data"), components=8, epochs=2, batches_per_epoch=2, window=8, batch=4, layers=2
    )
    summary = train(cfg, base / "run")
    return base, summary


@pytest.mark.deepmimic
def test_train_on_a_garment_dataset(garment_run):
    base, summary = garment_run
    model = json.loads((base / "run" / "checkpoints" / "model.json").read_text())
    assert model["config"]["w_dim"] == 99 and model["config"]["scene"] == "cape-character"
    assert summary["components"] == 8 and summary["test_episodes"] == 1
    assert np.isfinite(summary["best_test_loss_m"]) and summary["best_test_loss_m"] > 0


@pytest.mark.deepmimic
def test_evaluate_on_a_clip(animat_cli, garment_run):
    base, _ = garment_run
    out = base / "clip-eval"
    code, _, err = animat_cli(
        "surrogate", "evaluate", "cape-character", "--model", str(base / "run"), "--clip", JOG, "--frames", "30",
        "--no-video", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert s["frames"] == 30 and s["clip"] == JOG and s["clip_in_training"] is False and s["finite"]
    assert 0 < s["surrogate_projected_error_percent_of_size"] < 100 and s["pca_floor_error_percent_of_size"] > 0
    assert s["surrogate_projected_inside_fraction"] <= s["surrogate_inside_fraction"]
    speedup = s["surrogate_frames_per_second"] / s["reference_frames_per_second"]
    assert s["speedup_vs_reference"] == pytest.approx(speedup)
    traj = np.load(out / "trajectory.npz")
    assert traj["reference"].shape == traj["learned"].shape == (30, 30, 3) and traj["character_path"].shape == (30, 77)
    rows = (out / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 28  # the frames the surrogate predicts
    page = (out / "report.html").read_text()
    assert "character (learned)" in page and "character (reference)" in page


@pytest.mark.deepmimic
def test_play_on_a_clip_shows_the_garment_on_the_character(animat_cli, garment_run):
    from animat.viz.mujoco_render import gl_available

    base, _ = garment_run
    out = base / "clip-play"
    code, _, err = animat_cli(
        "surrogate", "play", "cape-character", "--model", str(base / "run"), "--clip", "shared:humanoid3d_dance_a.txt",
        "--frames", "8", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert s["frames"] == 8 and s["clip"] == "shared:humanoid3d_dance_a.txt" and s["nonfinite_frames"] == 0
    traj = np.load(out / "trajectory.npz")
    assert traj["character_path"].shape == (8, 77) and traj["Y"].shape == (8, 105)
    assert "character (learned)" in (out / "report.html").read_text()
    if gl_available():
        assert s["video"] == "media/play.gif" and (out / "media" / "play.gif").is_file()


def _refused(animat_cli, out, *args) -> str:
    code, _, err = animat_cli("surrogate", *args, "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out.exists(), (code, err)
    return err


@pytest.mark.deepmimic
@pytest.mark.parametrize("verb", ["evaluate", "play"])
def test_bad_clips_are_one_line_errors(animat_cli, garment_run, tmp_path, verb):
    base, _ = garment_run
    model = ("cape-character", "--model", str(base / "run"))
    err = _refused(animat_cli, tmp_path / "a", verb, *model, "--clip", "shared:humanoid3d_nope.txt")
    assert "humanoid3d_nope.txt" in err and "not found" in err
    frame = [0.0333, 0.0, 0.85, 0.0, 1.0, 0.0, 0.0, 0.0] + [1.0, 0.0, 0.0, 0.0] * 6 + [0.0] * 4
    other = tmp_path / "other_skeleton.txt"
    other.write_text(json.dumps({"Loop": "wrap", "Frames": [frame, frame]}))
    err = _refused(animat_cli, tmp_path / "b", verb, *model, "--clip", str(other))
    assert "another skeleton" in err


def test_play_refuses_interactive_on_a_garment(animat_cli, tmp_path):
    err = _refused(animat_cli, tmp_path / "out", "play", "skirt-character", "--model", str(tmp_path), "--interactive")
    assert "--interactive" in err and "skirt-character" in err


@pytest.mark.parametrize("verb", ["evaluate", "play"])
def test_a_clip_on_a_run_of_another_scene_is_one_line_exit_2(animat_cli, tmp_path, verb):
    run = tmp_path / "sheet-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"scene": {"name": "sheet"}, "test_episode_ids": [3]}))
    err = _refused(animat_cli, tmp_path / "out", verb, "sheet", "--model", str(run), "--clip", JOG)
    assert "--clip" in err and "garment scenes" in err and "'sheet'" in err


@pytest.mark.parametrize(
    "args, words",
    [
        (["--clip", JOG, "--horizon", "60", "--data", "d"], ["--clip", "--data, --horizon"]),
        (["--frames", "60"], ["--frames needs --clip"]),
    ],
)
def test_evaluate_refuses_the_options_of_the_other_mode(animat_cli, tmp_path, args, words):
    """``evaluate --clip`` takes no held-out episode option and ``--frames`` needs ``--clip``: one line, exit 2,
    before anything is read or written."""
    err = _refused(animat_cli, tmp_path / "out", "evaluate", "cape-character", "--model", str(tmp_path), *args)
    assert all(w in err for w in words), err


@pytest.mark.deepmimic
@pytest.mark.parametrize("renderer", ["matplotlib", "auto"])
def test_the_imitating_character_wears_the_learned_garment(animat_cli, garment_run, renderer):
    """``imitate play --garment RUN``: the surrogate's cape steps at 60 frames/s on the simulated character's body
    frames (two a control step), is drawn on it, and stays on it."""
    base, _ = garment_run
    out = base / f"dressed-{renderer}"
    code, _, err = animat_cli(
        "imitate", "play", "pretrained:walk", "--seconds", "0.5", "--fps", "10", "--renderer", renderer,
        "--garment", str(base / "run"), "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert s["garment"].startswith("cape-character") and s["garment_finite"] and s["episode_steps"] == 15
    assert s["garment_frames"] == 30 and s["garment_frame_us_median"] > 0
    # episode_wall_seconds is rounded to 0.1 ms
    assert 15 / s["simulated_frames_per_wall_second"] == pytest.approx(s["episode_wall_seconds"], abs=5.1e-5)
    assert s["garment_max_distance_from_root_m"] < 1.5  # on the character, not left behind or blown away
    traj = np.load(out / "trajectory.npz")
    assert traj["garment_vertices"].shape == (len(traj["qpos_time"]), 30, 3)
    assert traj["garment_triangles"].shape[1] == 3 and (out / "media" / "play.gif").is_file()
    assert json.loads((out / "config.json").read_text())["garment"] == str(base / "run")
    assert '"garment"' in (out / "report.html").read_text()


def test_a_garment_that_is_not_one_is_one_line_exit_2(animat_cli, tmp_path):
    run = tmp_path / "sheet-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"scene": {"name": "sheet"}, "test_episode_ids": [3]}))
    for source, words in ((tmp_path / "nothing", "holds no config.json"), (run, "not of a garment")):
        out = tmp_path / "out"
        code, _, err = animat_cli("imitate", "play", "pretrained:walk", "--garment", str(source), "--out", str(out))
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


@pytest.mark.deepmimic
def test_divergence_on_a_clip_gives_the_floor_beside_evaluate_clip(animat_cli, tmp_path):
    """``surrogate divergence SCENE --clip CLIP``: one episode on the clip's path; without noise the two reference runs
    are the same run (gap 0, the reference is deterministic), with noise they part."""
    cfg = tmp_path / "small.toml"
    cfg.write_text("[scene]\nsize = 5\nrows = 6\nwarmup_frames = 5\n")
    gaps = {}
    for perturb in ("0", "1e-3"):
        out = tmp_path / f"div-{perturb}"
        code, _, err = animat_cli(
            "surrogate", "divergence", "cape-character", "--config", str(cfg), "--clip", JOG, "--frames", "24",
            "--perturb", perturb, "--out", str(out),
        )  # fmt: skip
        assert code == 0, err
        s = json.loads((out / "summary.json").read_text())
        assert s["clip"] == JOG and s["episodes"] == 1 and s["frames"] == 24
        assert json.loads((out / "config.json").read_text())["clip"] == JOG
        gaps[perturb] = s["gap_mean_percent_of_size"]
    assert gaps["0"] == 0.0 and gaps["1e-3"] > 0.0
    code, _, err = animat_cli("surrogate", "divergence", "sheet", "--clip", JOG, "--out", str(tmp_path / "no"))
    assert code == 2 and "--clip" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "no").exists()
