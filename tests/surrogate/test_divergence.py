"""Predictability floor (animat.surrogate.divergence) and the external path given to simulate."""

import json

import numpy as np
import pytest

from animat.errors import ConfigError
from animat.surrogate.divergence import (
    divergence,
    doubling_fit,
    episode_gaps,
    gap_percent,
    restart_state,
    segment_starts,
)
from animat.surrogate.scenes import get_scene
from animat.surrogate.subspace import PCA, fit_pca


def test_simulate_with_the_drawn_path_equals_simulate_with_its_seed():
    scene = get_scene("flag", size=5)
    path = scene.controls(20, np.random.default_rng(np.random.SeedSequence([0, 2])))
    a, b = scene.simulate(20, np.random.SeedSequence([0, 2])), scene.simulate(20, path=path)
    assert np.array_equal(a["X"], b["X"]) and np.array_equal(a["Y"], b["Y"])
    with pytest.raises(ConfigError, match="exactly one"):
        scene.simulate(20, 0, path=path)
    with pytest.raises(ConfigError, match="exactly one"):
        scene.simulate(20)
    with pytest.raises(ConfigError, match=r"shape \(50, y\)"):
        scene.simulate(20, path=path[:-1])
    with pytest.raises(ConfigError, match="finite"):
        scene.simulate(20, path=np.where(np.arange(50)[:, None] == 3, np.nan, path))


@pytest.mark.parametrize("name", ["flag", "cape"])
def test_restart_sets_the_recorded_frame_and_nothing_before_it(name):
    """simulate(restart=(r, x, v)): frames before r are the reference's, the recorded frame r holds
    x (in the recorded frame: the cape's torso frame), and the state then evolves from there."""
    scene = get_scene(name, size=5)
    seed = np.random.SeedSequence([0, 3])
    ref = scene.simulate(24, seed)
    path = scene.controls(24, np.random.default_rng(seed))
    shifted = ref["X"][10:12] + np.float32(0.01)  # every vertex moved 1 cm along each axis
    x, v = restart_state(scene, shifted, ref["Y"][10:12])
    np.testing.assert_allclose(
        v, (scene.world(shifted[1], ref["Y"][11]) - scene.world(shifted[0], ref["Y"][10])) * scene.fps
    )
    run = scene.simulate(24, path=path, restart=(11, x, v))
    free = np.setdiff1d(np.arange(scene.n_vertices), scene.pinned) if name == "flag" else np.arange(scene.n_vertices)
    assert np.array_equal(run["X"][:11], ref["X"][:11])
    np.testing.assert_allclose(run["X"][11][free], shifted[1][free], atol=1e-5)
    assert np.abs(run["X"][12:] - ref["X"][12:]).max() > 1e-3 and run["dropped"] == 0


@pytest.mark.parametrize("name", ["flag", "sheet", "cape"])
def test_resume_from_a_snapshot_is_bit_identical_to_a_run_from_the_start(name):
    """simulate(resume=snapshot): the frames before it are the snapshot's and every later frame is
    what a run from the start gives, with a restart at the snapshot's frame and a path that differs
    after it (as divergence uses it), and without."""
    scene = get_scene(name, size=5, elastic2d="both")
    path = scene.controls(30, np.random.default_rng(3))
    ref = scene.simulate(30, path=path, snapshots=[4, 15])
    assert sorted(ref["snapshots"]) == [4, 15]
    state = (15, *restart_state(scene, ref["X"][14:16] + np.float32(0.002), ref["Y"][14:16]))
    changed = path.copy()
    changed[scene.warmup_frames + 16 :] += 1e-3
    full = scene.simulate(30, path=changed, restart=state)
    resumed = scene.simulate(30, path=changed, restart=state, resume=ref["snapshots"][15])
    assert np.array_equal(full["X"], resumed["X"]) and np.array_equal(full["Y"], resumed["Y"])
    assert np.abs(full["X"][16:] - ref["X"][16:]).max() > 1e-4  # the restart and the path change matter
    again = scene.simulate(30, path=path, resume=ref["snapshots"][4])
    assert np.array_equal(again["X"], ref["X"]) and again["dropped"] == 0
    with pytest.raises(ConfigError, match="cannot resume at frame 15"):
        scene.simulate(15, path=path[: scene.warmup_frames + 15], resume=ref["snapshots"][15])


def test_divergence_in_worker_processes_equals_one_process():
    scene = get_scene("flag", size=5)
    pca = fit_pca(scene.simulate(40, np.random.SeedSequence([0, 9]))["X"], 12)
    one, gaps_one = divergence(
        scene, 2, 24, 0.0, horizon=10, stride=10, restart="subspace", project=pca.round_trip, components=12
    )
    two, gaps_two = divergence(
        scene, 2, 24, 0.0, horizon=10, stride=10, restart="subspace", project=pca.round_trip, components=12, workers=2
    )
    assert one == two and np.array_equal(gaps_one, gaps_two) and one["window_gap_percent_of_size"] > 0
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        divergence(scene, 2, 24, 0.0, horizon=10, stride=10, workers=0)


def test_subspace_restart_full_basis_equals_frames_restart_and_truncation_adds_gap():
    scene = get_scene("flag", size=5)
    seed = np.random.SeedSequence([0, 0])
    D = 3 * scene.n_vertices
    full = PCA(np.zeros(D, np.float32), np.eye(D, dtype=np.float32), np.ones(D, np.float32))  # an exact round trip
    frames = episode_gaps(scene, 30, seed, 0.0, horizon=10, stride=10, restart="frames")
    exact = episode_gaps(scene, 30, seed, 0.0, horizon=10, stride=10, restart="subspace", project=full.round_trip)
    np.testing.assert_array_equal(frames["gap"], exact["gap"])
    assert frames["gap"][0] == 0.0 and len(frames["segments"]) == 3
    small = fit_pca(
        scene.simulate(60, np.random.SeedSequence([0, 9]))["X"], 10
    )  # another episode; 3 components: the restart breaks edges (dropped)
    cut = episode_gaps(scene, 30, seed, 0.0, horizon=10, stride=10, restart="subspace", project=small.round_trip)
    assert cut["gap"][1] > 0 and cut["truncated"] == 0 and np.mean(cut["segments"]) > np.mean(frames["segments"]) > 0


def test_zero_perturbation_gives_exactly_zero_gap():
    """The reference is deterministic: the same path twice gives bit-identical runs."""
    summary, gaps = divergence(get_scene("flag", size=7), 1, 24, 0.0, horizon=10, stride=10)
    assert gaps.shape == (1, 24) and not gaps.any()
    assert summary["window_gap_percent_of_size"] == 0.0 and summary["segments"] == 2
    assert summary["frames_per_doubling"] is None and summary["truncated_runs"] == 0


def test_bigger_perturbation_bigger_early_gap_and_runs_agree_before_it():
    scene = get_scene("flag", size=7)
    seed = np.random.SeedSequence([0, 0])
    small, big = (episode_gaps(scene, 30, seed, eps, horizon=10, stride=10) for eps in (1e-4, 1e-2))
    for r in (small, big):
        assert r["gap"][:2].max() == 0.0 and r["gap"][2:].min() > 0  # perturbed from frame 2 on
        assert len(r["segments"]) == 3
    assert big["gap"][2:12].mean() > 10 * small["gap"][2:12].mean()
    assert big["segments"][0] > small["segments"][0]


def test_offset_noise_is_one_held_step():
    """offset: one held draw, the same on every perturbed frame; the gap counts from frame 2."""
    scene = get_scene("flag", size=5)
    seed = np.random.SeedSequence([0, 1])
    rng = np.random.default_rng(seed)
    path = scene.controls(12, rng)
    step = 1e-3 * rng.standard_normal(3)
    first = scene.warmup_frames + 2
    by_hand = scene.simulate(12, path=np.concatenate([path[:first], path[first:] + step]))
    offset = episode_gaps(scene, 12, seed, 1e-3, horizon=5, stride=5, noise="offset")
    np.testing.assert_array_equal(offset["gap"], gap_percent(scene.simulate(12, path=path), by_hand, scene.side_m))
    assert offset["gap"][:2].max() == 0.0 and offset["gap"][2:].min() > 0


def test_doubling_fit_recovers_a_known_growth_rate():
    """gap = 0.01 x 2^(t / 8) % up to saturation at 2 %: 8 frames per doubling."""
    t = np.arange(120)
    gap = np.minimum(0.01 * 2.0 ** (t / 8.0), 2.0)
    gap[:2] = 0.0
    fit = doubling_fit(gap)
    assert fit["frames_per_doubling"] == pytest.approx(8.0, rel=1e-6)
    assert fit["fit_first_frame"] == 2 and gap[fit["fit_last_frame"]] >= 1.0
    assert fit["fit_gap_percent_at_first_frame"] == pytest.approx(gap[2], rel=1e-6)
    assert doubling_fit(np.full(50, 0.3))["frames_per_doubling"] is None  # no growth
    assert segment_starts(300, 120, 120) == [0, 120] and segment_starts(300, 120, 30) == [0, 30, 60, 90, 120, 150, 180]
    assert segment_starts(100, 120, 30) == []


def test_cli_writes_the_run_and_rejects_bad_input(animat_cli, tmp_path):
    out = tmp_path / "div"
    config = tmp_path / "tiny.toml"
    config.write_text("[scene]\nsize = 7\n")
    code, _, err = animat_cli(
        "surrogate",
        "divergence",
        "flag",
        "--episodes",
        "1",
        "--frames",
        "12",
        "--horizon",
        "5",
        "--stride",
        "3",
        "--perturb",
        "1e-3",
        "--out",
        str(out),
        "--config",
        str(config),
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["scene_options"]["size"] == 7 and summary["segments"] == 3 and summary["window_gap_percent_of_size"] > 0
    )
    assert (out / "plots" / "divergence.png").stat().st_size > 0
    assert len((out / "metrics.csv").read_text().splitlines()) == 13  # header + 12 frames
    for args, message in (
        (["--perturb", "-1"], "perturbation must be a finite std >= 0"),
        (["--episodes", "0"], "must be > 0"),
        (["--horizon", "2"], "horizon must be >= 3"),
        (["--stride", "0"], "stride >= 1"),
        (["--seed", "-1"], "seed must be >= 0"),
        (["--noise", "pink"], "noise must be one of"),
        ([], "unknown scene 'kite'"),
        (["--restart", "subspace"], "needs a subspace"),
        (["--restart", "half"], "restart must be one of"),
    ):
        scene = "kite" if not args else "flag"
        code, _, err = animat_cli("surrogate", "divergence", scene, *args, "--out", str(tmp_path / "bad"))
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "bad").exists()


def test_cli_subspace_restart_takes_the_models_scene_and_held_out_episodes(animat_cli, tmp_path):
    from animat import runs

    scene = get_scene("flag", size=5)
    model = tmp_path / "model"
    fit_pca(scene.simulate(40, np.random.SeedSequence([0, 5]))["X"], 6).save(model / "pca.npz")
    runs.atomic_write_json(model / "config.json", {"scene": scene.to_dict(), "test_episode_ids": [4, 7]})
    out = tmp_path / "div"
    code, _, err = animat_cli(
        "surrogate",
        "divergence",
        "flag",
        "--model",
        str(model),
        "--restart",
        "subspace",
        "--components",
        "4",
        "--episodes",
        "5",
        "--frames",
        "12",
        "--horizon",
        "5",
        "--stride",
        "3",
        "--out",
        str(out),
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episode_ids"] == [4, 7] and summary["restart_components"] == 4 and summary["perturb_std"] == 0.0
    assert summary["scene_options"]["size"] == 5 and summary["window_gap_percent_of_size"] > 0
    for args, message in (
        (["--components", "7"], "--components must be in [1, 6]"),
        (["--components", "0"], "--components must be in [1, 6]"),
    ):
        code, _, err = animat_cli(
            "surrogate",
            "divergence",
            "flag",
            "--model",
            str(model),
            "--restart",
            "subspace",
            *args,
            "--out",
            str(tmp_path / "bad"),
        )
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    (tmp_path / "sheet.toml").write_text("[scene]\nsize = 5\n")
    for extra in (
        [],
        ["--config", str(tmp_path / "sheet.toml")],
    ):  # a model of another scene, with or without a scene file
        code, _, err = animat_cli(
            "surrogate",
            "divergence",
            "sheet",
            "--model",
            str(model),
            "--restart",
            "subspace",
            *extra,
            "--out",
            str(tmp_path / "bad"),
        )
        assert code == 2 and "was trained on scene 'flag', not 'sheet'" in err and not (tmp_path / "bad").exists()
    code, _, err = animat_cli(
        "surrogate", "divergence", "flag", "--frames", "20", "--horizon", "100", "--out", str(tmp_path / "bad")
    )
    assert code == 2 and "hold no segment of --horizon 100 frames" in err and not (tmp_path / "bad").exists()
