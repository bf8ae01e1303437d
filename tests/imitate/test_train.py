"""PPO training (Stable-Baselines3): a tiny run writes its run directory, policies reload exactly, play, bad input."""

from __future__ import annotations

import csv
import importlib.util
import json

import numpy as np
import pytest

from animat.errors import CheckpointError

TINY = """\
net_arch = [16, 16]
n_steps = 64
batch_size = 64
n_epochs = 1
eval_episodes = 1
max_seconds = 1.0
checkpoint_every = 128
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A 256-step PPO run (2 processes, tiny nets) through the CLI; returns its run directory."""
    pytest.importorskip("stable_baselines3")
    import sys

    from animat import cli

    tmp = tmp_path_factory.mktemp("train")
    (tmp / "tiny.toml").write_text(TINY)
    out = tmp / "run"
    argv = sys.argv
    sys.argv = [
        "animat",
        "imitate",
        "train",
        "--timesteps",
        "256",
        "--envs",
        "2",
        "--seed",
        "3",
        "--config",
        str(tmp / "tiny.toml"),
        "--out",
        str(out),
    ]
    try:
        cli.main()
    finally:
        sys.argv = argv
    return out


def test_tiny_run_writes_the_run_dir(tiny_run):
    for name in (
        "config.json",
        "metrics.csv",
        "summary.json",
        "plots/learning_curve.png",
        "policy.npz",
        "policy.json",
        "logs/progress.csv",
        "checkpoints/policy_0.npz",
        "checkpoints/policy_256.json",
    ):
        assert (tiny_run / name).is_file(), name
    cfg = json.loads((tiny_run / "config.json").read_text())
    assert cfg["timesteps"] == 256 and cfg["envs"] == 2 and cfg["net_arch"] == [16, 16] and cfg["seed"] == 3
    assert (cfg["system"], cfg["verb"]) == ("imitate", "train")  # who wrote it (animat.runs.config_record)
    rows = list(csv.DictReader((tiny_run / "metrics.csv").open()))
    assert [int(r["timesteps"]) for r in rows] == [128, 256]
    assert all(float(r["ep_len_mean"]) > 0 and 0 < float(r["r_i_per_step_mean"]) <= 1 for r in rows)
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert summary["timesteps"] == 256 and summary["initial_eval_episodes"] == 1
    assert summary["final_eval_len_mean"] > 0 and 0 < summary["final_eval_r_i_per_step_mean"] <= 1
    manifest = json.loads((tiny_run / "policy.json").read_text())["meta"]
    assert manifest["format"] == "animat-imitate-policy/1" and manifest["num_timesteps"] == 256
    if importlib.util.find_spec("tensorboard") is not None:  # installed by the rl extra
        assert list((tiny_run / "logs").rglob("events.out.tfevents.*")), "no TensorBoard event file"


def test_saved_policy_reloads_with_identical_actions(tmp_path):
    """Save an SB3 PPO policy as npz + JSON; the rebuilt SB3 policy gives the same deterministic actions
    bit for bit, and the NumPy forward pass agrees to float32 rounding."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from animat.imitate.env import ImitateEnv
    from animat.imitate.policy import load_policy, save_policy, to_sb3_policy

    venv = VecNormalize(DummyVecEnv([lambda: ImitateEnv(max_seconds=1.0)]), norm_reward=False)
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=0,
        device="cpu",
        policy_kwargs=dict(net_arch=dict(pi=[32, 16], vf=[32, 16])),
    )
    model.learn(128)  # moves the weights and the normaliser away from their initial values
    save_policy(tmp_path / "policy", model, venv, net_arch=[32, 16], activation="tanh")
    saved = load_policy(tmp_path)
    rebuilt = to_sb3_policy(saved)
    env = ImitateEnv()
    obs = np.stack([env.reset(seed=s)[0] for s in range(8)])
    norm = venv.normalize_obs(obs)
    assert np.array_equal(saved.normalise(obs), norm.astype(np.float32))
    want, _ = model.predict(norm, deterministic=True)
    got, _ = rebuilt.predict(norm, deterministic=True)
    assert np.array_equal(got, want)
    assert saved.act(obs) == pytest.approx(want, abs=1e-5)
    # so is a manifest whose array shapes disagree with the weight file (every array is checked)
    manifest = json.loads((tmp_path / "policy.json").read_text())
    manifest["arrays"]["action_net.weight"]["shape"] = [1, 1]
    (tmp_path / "edited.json").write_text(json.dumps(manifest))  # names the same policy.npz
    with pytest.raises(CheckpointError, match="manifest says"):
        load_policy(tmp_path / "edited.json")
    # a changed weight file is refused, not loaded
    data = bytearray((tmp_path / "policy.npz").read_bytes())
    data[-40] ^= 1
    (tmp_path / "policy.npz").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256"):
        load_policy(tmp_path / "policy.npz")


@pytest.mark.parametrize("renderer", ["matplotlib", "mujoco"])
def test_play_writes_gif_and_summary(tiny_run, tmp_path, animat_cli, renderer):
    """Either renderer writes the GIF; MuJoCo's (where an offscreen GL context can be made) shows the
    blue character and the translucent orange ghost side by side, moving from frame to frame."""
    import imageio.v3 as iio

    from animat.viz.mujoco_render import gl_available

    if renderer == "mujoco" and not gl_available():
        pytest.skip("no offscreen OpenGL (EGL or OSMesa) here")
    code, out, err = animat_cli(
        "imitate", "play", str(tiny_run), "--seconds", "0.4", "--renderer", renderer, "--out", str(tmp_path / "play")
    )
    assert code == 0, err
    gif = tmp_path / "play" / "media" / "play.gif"
    assert gif.stat().st_size > 10_000
    summary = json.loads((tmp_path / "play" / "summary.json").read_text())
    assert 0 < summary["episode_steps"] <= 12 and 0 < summary["mean_r_imitation"] <= 1
    assert summary["episode_seconds"] == pytest.approx(summary["episode_steps"] / 30)
    assert summary["renderer"].startswith(renderer) and summary["gif"] == "media/play.gif"
    config = json.loads((tmp_path / "play" / "config.json").read_text())
    assert config["verb"] == "play" and config["source"] == str(tiny_run) and config["animation"] is True
    assert (tmp_path / "play" / "plots" / "imitation_reward.png").stat().st_size > 1000
    if renderer == "mujoco":
        frames = iio.imread(gif, index=None)[..., :3].astype(int)  # (F, H, W, 3)
        assert len(frames) == 1 + 6  # the start, then every second step of 12 at 15 fps
        r, g, b = frames[0][..., 0], frames[0][..., 1], frames[0][..., 2]
        orange, blue = (r > b + 60) & (r > g + 20), (b > r + 40)
        cols = lambda m: np.nonzero(m.any(axis=0))[0].mean()  # noqa: E731 (mean image column of a mask)
        assert (
            orange.sum() > 500 and blue.sum() > 500 and cols(orange) > cols(blue) + 20
        )  # ghost to the character's side
        assert np.abs(frames[-1] - frames[0]).mean() > 1.0


def test_play_with_no_animation_writes_the_episode_but_no_gif(tiny_run, tmp_path, animat_cli):
    """--no-animation: the same episode (seeded, deterministic policy), its reward plot and report, no media."""
    out = tmp_path / "quiet"
    code, _, err = animat_cli("imitate", "play", str(tiny_run), "-s", "0.4", "--no-animation", "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert "gif" not in summary and not (out / "media").exists() and (out / "report.html").is_file()
    assert json.loads((out / "config.json").read_text())["animation"] is False
    assert (out / "plots" / "imitation_reward.png").is_file()
    traj = np.load(out / "trajectory.npz")
    assert "qpos" not in traj and len(traj["r_imitation"]) == summary["episode_steps"]


def test_timesteps_round_up_to_whole_ppo_iterations_and_say_so():
    """SB3's PPO checks the step count between iterations of n_steps × envs steps only: what a run reaches."""
    from animat.imitate.options import TrainConfig

    cfg = TrainConfig.build(None, timesteps=256, envs=1)  # the README's example: one iteration of 1024
    assert cfg.steps_run() == 1024 and "stops at 1024" in cfg.rounding_note()
    cfg = TrainConfig.build(None, timesteps=3000, envs=2, n_steps=512)
    assert cfg.steps_run() == 3072 and cfg.steps_run(done=1024) == 3072 and cfg.steps_run(done=3000) == 3000
    exact = TrainConfig.build(None, timesteps=2048, envs=2, n_steps=512)
    assert exact.steps_run() == exact.steps_run(done=1024) == 2048 and exact.rounding_note() is None
    assert exact.rounding_note(done=1000) is not None  # a resumed run that stopped between iterations


def test_play_falls_back_to_matplotlib_without_gl(tiny_run, tmp_path, monkeypatch, animat_cli):
    from animat.errors import ConfigError
    from animat.imitate.play import play
    from animat.viz import mujoco_render

    monkeypatch.setattr(mujoco_render, "offscreen_context", lambda width, height: None)
    assert play(tiny_run, 0.2, tmp_path / "auto", renderer="auto")["renderer"] == "matplotlib"
    with pytest.raises(ConfigError, match="no offscreen OpenGL"):
        play(tiny_run, 0.2, tmp_path / "gl", renderer="mujoco")
    code, _, err = animat_cli("imitate", "play", str(tiny_run), "--renderer", "mujoco", "--out", str(tmp_path / "o"))
    assert code == 2 and "--renderer matplotlib" in err and not (tmp_path / "o").exists()


def test_play_refuses_an_unknown_renderer(tiny_run, tmp_path, animat_cli):
    code, out, err = animat_cli("imitate", "play", str(tiny_run), "--renderer", "povray", "--out", str(tmp_path / "o"))
    assert code == 2 and "--renderer" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["train", "no/such/clip.txt", "--timesteps", "10"], "not found"),
        (["train", "shared:nope.txt"], "nope.txt"),
        (["train", "--timesteps", "-5"], "--timesteps"),
        (["train", "--envs", "0"], "envs"),
        (["train", "--from", "no/such/run"], "no policy.json"),
        (["train", "--from", "pretrained:sprint"], "pretrained:sprint"),
        (["play", "no/such/run"], "not a directory"),
        (["play", ".", "--seconds", "-1"], "--seconds"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, words, tmp_path, animat_cli):
    code, out, err = animat_cli("imitate", *args, "--out", str(tmp_path / "o"))
    assert code == 2 and out == "", err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()  # nothing created for a refused request


@pytest.mark.parametrize("name", ["gamma", "gae_lambda"])
def test_discount_and_gae_lambda_are_fractions(name):
    from animat.errors import ConfigError
    from animat.imitate.train import TrainConfig

    assert getattr(TrainConfig.build(None, **{name: 1.0}), name) == 1.0  # undiscounted / plain Monte Carlo: allowed
    for bad in (1.95, 0.0):
        with pytest.raises(ConfigError, match=f"{name} must be"):
            TrainConfig.build(None, **{name: bad})


def test_same_seed_same_policy(tmp_path):
    """Two 128-step runs (one process, DummyVecEnv) with the same seed write the same weights."""
    pytest.importorskip("stable_baselines3")
    from animat.imitate.train import train

    cfg = _dummy_cfg(timesteps=128)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    sa, sb = train(cfg, a), train(cfg, b)
    assert (a / "policy.npz").read_bytes() == (b / "policy.npz").read_bytes()
    assert sa["last_iteration_ep_return_mean"] == sb["last_iteration_ep_return_mean"]


def test_batched_run_holds_the_fixed_action_noise(tmp_path):
    """vec_env = batched with action_std: σ is what the config says in every metrics row and in the saved
    policy, while the rest of the policy learns; the imitation curve is drawn. Rollouts run torch on
    rollout_torch_threads, updates on torch_threads."""
    pytest.importorskip("stable_baselines3")
    import torch

    from animat.imitate.options import TrainConfig
    from animat.imitate.policy import load_policy
    from animat.imitate.train import train

    cfg = TrainConfig.build(
        None,
        vec_env="batched",
        envs=4,
        threads=2,
        action_std=0.05,
        net_arch=[16, 16],
        n_steps=32,
        batch_size=64,
        n_epochs=2,
        eval_episodes=1,
        max_seconds=1.0,
        timesteps=256,
        checkpoint_every=128,
        pose_termination=1.0,
        torch_threads=2,
        rollout_torch_threads=1,
    )
    before, during_rollouts = torch.get_num_threads(), []
    try:
        train(cfg, tmp_path, on_iteration=lambda row: during_rollouts.append(torch.get_num_threads()))
        after_update = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert during_rollouts == [1, 1] and after_update == 2
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert len(rows) == 2 and all(float(r["std"]) == pytest.approx(0.05, rel=1e-6) for r in rows)
    first, last = load_policy(tmp_path / "checkpoints" / "policy_0"), load_policy(tmp_path / "policy")
    for pol in (first, last):
        np.testing.assert_array_equal(pol.arrays["log_std"], np.full(28, np.log(0.05), np.float32))
    assert not np.array_equal(first.arrays["action_net.weight"], last.arrays["action_net.weight"])
    assert (tmp_path / "plots" / "imitation_curve.png").is_file()


def test_from_starts_with_the_source_policy_and_refuses_another_shape(tiny_run, tmp_path):
    """--from (init_policy): the new run's first policy is the source's, weights and observation
    normaliser bit for bit (then it learns on); a network of another shape is a one-line error."""
    from animat.imitate.options import TrainConfig
    from animat.imitate.policy import load_policy
    from animat.imitate.train import train

    src = load_policy(tiny_run / "policy")
    options = dict(
        timesteps=128,
        envs=2,
        vec_env="dummy",
        seed=5,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        eval_episodes=0,
        checkpoint_every=64,
        max_seconds=1.0,
        init_policy=str(tiny_run),
    )
    train(TrainConfig.build(None, net_arch=[16, 16], **options), tmp_path / "warm")
    first, last = load_policy(tmp_path / "warm" / "checkpoints" / "policy_0"), load_policy(tmp_path / "warm" / "policy")
    assert set(first.arrays) == set(src.arrays) and "obs_rms.mean" in src.arrays
    for k, v in src.arrays.items():
        np.testing.assert_array_equal(first.arrays[k], v, err_msg=k)
    assert not np.array_equal(last.arrays["action_net.weight"], src.arrays["action_net.weight"])
    assert json.loads((tmp_path / "warm" / "config.json").read_text())["init_policy"] == str(tiny_run)
    (tmp_path / "other").mkdir()
    with pytest.raises(CheckpointError, match="does not fit this run's network"):
        train(TrainConfig.build(None, net_arch=[8], **options), tmp_path / "other")


@pytest.mark.deepmimic
def test_a_skill_selector_starts_from_a_single_clip_policy(tiny_run, tmp_path):
    """--from a single-clip policy into a selector (walk + jog): the one-hot's new inputs start at zero weight and
    zero mean / unit variance, so the first policy acts as the source whatever the command."""
    from animat.imitate.options import TrainConfig
    from animat.imitate.policy import load_policy
    from animat.imitate.skills import one_hot
    from animat.imitate.train import train

    src = load_policy(tiny_run / "policy")
    options = dict(timesteps=128, envs=2, vec_env="dummy", seed=5, n_steps=64, batch_size=64, n_epochs=1)
    options.update(eval_episodes=0, checkpoint_every=64, max_seconds=1.0, init_policy=str(tiny_run))
    clips = ["shared:humanoid3d_walk.txt", "shared:humanoid3d_jog.txt"]
    train(TrainConfig.build(None, net_arch=[16, 16], clips=clips, multi_clip="selector", **options), tmp_path / "s")
    first, d = load_policy(tmp_path / "s" / "checkpoints" / "policy_0"), src.obs_dim
    assert first.obs_dim == d + 2
    for k, v in src.arrays.items():
        got = first.arrays[k]
        if got.shape == v.shape:
            np.testing.assert_array_equal(got, v, err_msg=k)
        elif not k.startswith("obs_rms."):
            assert got.shape == (v.shape[0], d + 2) and k.endswith(".0.weight"), k
            np.testing.assert_array_equal(got[:, :d], v)
            assert not got[:, d:].any()
    np.testing.assert_array_equal(first.arrays["obs_rms.mean"][:d], src.arrays["obs_rms.mean"])
    assert not first.arrays["obs_rms.mean"][d:].any() and (first.arrays["obs_rms.var"][d:] == 1).all()
    obs = np.random.default_rng(0).normal(size=d).astype(np.float32)
    for skill in (0, 1):
        widened = np.concatenate([obs, one_hot(skill, 2)]).astype(np.float32)
        np.testing.assert_allclose(first.act(widened), src.act(obs), rtol=1e-6, atol=1e-6)


def test_max_minutes_stops_after_a_whole_iteration_with_its_metrics_row(tmp_path):
    """A time limit that has passed by the first rollout's end: that iteration (rollout, row, update) completes,
    the next rollout's first step is dropped uncounted, and learning stops at exactly one iteration's steps."""
    pytest.importorskip("stable_baselines3")
    import csv

    from animat.imitate.train import train

    cfg = _dummy_cfg(timesteps=1024, max_minutes=1e-9)
    summary = train(cfg, tmp_path)
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert summary["timesteps"] == 128 and summary["iterations"] == 1
    assert [int(r["timesteps"]) for r in rows] == [128]


def _dummy_cfg(**options):
    """A tiny PPO config in one process (DummyVecEnv, 64-step iterations of 2 envs), with ``options`` over it."""
    from animat.imitate.train import TrainConfig

    tiny = dict(envs=2, vec_env="dummy", seed=5, net_arch=[8], n_steps=64, batch_size=64, n_epochs=1)
    return TrainConfig.build(None, **tiny, eval_episodes=0, checkpoint_every=0, max_seconds=1.0, **options)
