"""``animat imitate train --resume``: policy, optimiser, normaliser and step counter survive a restart, as plain
arrays."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from animat.imitate.policy import load_policy  # noqa: E402
from animat.imitate.resume import POINTER, load_train_state, restore_train_state, save_train_state  # noqa: E402
from animat.imitate.train import LOSS_FIELDS, TrainConfig, read_metrics, train  # noqa: E402

SMALL = dict(
    envs=2,
    vec_env="dummy",
    seed=5,
    net_arch=[8],
    n_steps=32,
    batch_size=32,
    n_epochs=2,
    eval_episodes=1,
    checkpoint_every=0,
    max_seconds=1.0,
)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """A finished 128-step run: two iterations of 2 environments × 32 steps."""
    run = tmp_path_factory.mktemp("resume") / "run"
    run.mkdir()
    train(TrainConfig.build(None, timesteps=128, **SMALL), run)
    return run


def test_resume_continues_from_the_saved_state(first_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    before_csv = (run / "metrics.csv").read_text()
    before = load_policy(run)
    arrays, manifest = load_train_state(run)
    assert manifest["num_timesteps"] == 128 and manifest["n_updates"] == 2 * 2  # 2 iterations × 2 epochs
    assert any(k.startswith("optim.") and k.endswith(".exp_avg_sq") for k in arrays)

    cfg = TrainConfig.build(None, **{**asdict(TrainConfig.build(None, timesteps=128, **SMALL)), "timesteps": 256})
    summary = train(cfg, run, resume=True)
    # the new session started from the saved policy, bit for bit
    start = load_policy(run / "checkpoints" / "policy_128")
    assert start.arrays.keys() == before.arrays.keys()
    assert all(np.array_equal(start.arrays[k], before.arrays[k]) for k in before.arrays)
    # and continued the step count; the learning curve grew and kept its rows as they were
    after = read_metrics(run / "metrics.csv")
    assert [r["timesteps"] for r in after] == [64, 128, 192, 256] and [r["iteration"] for r in after] == [0, 1, 2, 3]
    assert (run / "metrics.csv").read_text().startswith(before_csv)
    # the first new row holds the losses of the update the first session ended with (saved in the state)
    assert after[0]["value_loss"] == "" and set(manifest["pending_losses"]) == set(LOSS_FIELDS)
    assert all(after[2][k] == pytest.approx(manifest["pending_losses"][k]) for k in LOSS_FIELDS)
    assert all(isinstance(after[3][k], float) for k in LOSS_FIELDS)
    assert summary["timesteps"] == 256 and summary["iterations"] == 4 and summary["nonfinite_episodes"] == 0
    assert load_train_state(run)[1]["n_updates"] == 4 * 2 and load_policy(run).manifest["num_timesteps"] == 256
    final = load_policy(run)
    assert not np.array_equal(final.arrays["action_net.weight"], before.arrays["action_net.weight"])  # it learned on
    assert (run / "logs" / "resume_128" / "progress.csv").is_file() and (run / "logs" / "progress.csv").is_file()
    # the initial evaluation is the first session's
    first = json.loads((first_run / "summary.json").read_text())
    assert summary["initial_eval_return_mean"] == first["initial_eval_return_mean"]


def test_a_run_that_breaks_keeps_its_last_good_state(first_run, tmp_path, monkeypatch):
    """A session that dies with non-finite weights (here: set to NaN, then an error) leaves the state
    and policy it resumed from as they were, instead of saving the broken ones as the point to resume from."""
    import importlib

    import torch

    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    before = load_policy(run)
    resumed = []
    monkeypatch.setattr(  # the name training calls
        importlib.import_module("animat.imitate.train"),
        "restore_train_state",
        lambda model, *a: resumed.append(model) or restore_train_state(model, *a),
    )

    def break_it(row):
        with torch.no_grad():
            next(resumed[0].policy.parameters()).fill_(float("nan"))
        raise RuntimeError("diverged")

    cfg = TrainConfig.build(None, **{**asdict(TrainConfig.build(None, timesteps=128, **SMALL)), "timesteps": 256})
    with pytest.raises(RuntimeError, match="diverged"):
        train(cfg, run, resume=True, on_iteration=break_it)
    assert load_train_state(run)[1]["num_timesteps"] == 128
    after = load_policy(run)
    assert all(np.array_equal(after.arrays[k], before.arrays[k]) for k in before.arrays)


def test_resume_keeps_an_existing_checkpoint_of_its_starting_step(first_run, tmp_path):
    """checkpoints/policy_<n> is written at the end of the rollout that reached n, before that
    iteration's update; a state saved after the update has the same step count. Resuming from it must
    not replace the checkpoint with the updated policy (here: a stand-in file at step 128)."""
    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    for suffix in (".npz", ".json"):
        shutil.copy(run / "checkpoints" / f"policy_0{suffix}", run / "checkpoints" / f"policy_128{suffix}")
    cfg = TrainConfig.build(None, **{**asdict(TrainConfig.build(None, timesteps=128, **SMALL)), "timesteps": 192})
    train(cfg, run, resume=True)
    kept, first = load_policy(run / "checkpoints" / "policy_128"), load_policy(run / "checkpoints" / "policy_0")
    assert all(np.array_equal(kept.arrays[k], first.arrays[k]) for k in first.arrays)


def test_restore_gives_the_same_policy_optimiser_and_normaliser(tmp_path):
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from animat.imitate.env import ImitateEnv

    def build(seed):
        venv = VecNormalize(DummyVecEnv([lambda: ImitateEnv(max_seconds=1.0)]), norm_reward=False)
        return PPO(
            "MlpPolicy",
            venv,
            n_steps=32,
            batch_size=32,
            n_epochs=1,
            seed=seed,
            device="cpu",
            policy_kwargs=dict(net_arch=[16]),
        ), venv

    model, venv = build(0)
    model.learn(64)
    save_train_state(tmp_path, model, venv, note=1)
    fresh, fresh_venv = build(1)
    arrays, manifest = load_train_state(tmp_path)
    assert manifest["note"] == 1 and manifest["num_timesteps"] == 64
    restore_train_state(fresh, fresh_venv, arrays, manifest)
    a, b = model.policy.state_dict(), fresh.policy.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    oa, ob = model.policy.optimizer.state_dict(), fresh.policy.optimizer.state_dict()
    assert oa["param_groups"] == ob["param_groups"] and oa["state"].keys() == ob["state"].keys()
    assert all(torch.equal(oa["state"][i][k], ob["state"][i][k]) for i in oa["state"] for k in oa["state"][i])
    assert np.array_equal(venv.obs_rms.mean, fresh_venv.obs_rms.mean) and venv.obs_rms.count == fresh_venv.obs_rms.count
    assert (fresh.num_timesteps, fresh._n_updates) == (model.num_timesteps, model._n_updates)


def test_a_crash_mid_save_leaves_the_previous_state(tmp_path, monkeypatch):
    """Each save is a new file pair + the pointer: one that dies part-way (here after its .npz) leaves the
    previous state loadable, and only the last KEEP states are kept."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from animat import runs
    from animat.imitate.env import ImitateEnv
    from animat.imitate.resume import KEEP

    model = PPO(
        "MlpPolicy",
        DummyVecEnv([lambda: ImitateEnv(max_seconds=1.0)]),
        n_steps=32,
        batch_size=32,
        device="cpu",
        policy_kwargs=dict(net_arch=[8]),
    )
    for n in (32, 64, 96):
        model.num_timesteps = n
        save_train_state(tmp_path, model)
    assert len(list((tmp_path / POINTER.parent).glob("train_state-*.json"))) == KEEP

    def crash(*args, **kwargs):
        raise OSError("disk full")

    model.num_timesteps = 128
    monkeypatch.setattr(runs, "atomic_write_json", crash)
    with pytest.raises(OSError):
        save_train_state(tmp_path, model)
    assert load_train_state(tmp_path)[1]["num_timesteps"] == 96


@pytest.mark.parametrize(
    "args, words",
    [
        (["--timesteps", "100"], "already finished its 128 timesteps"),
        ([], "already finished its 128 timesteps"),
        (["--envs", "3", "--timesteps", "256"], "only --timesteps"),
    ],
)
def test_bad_resume_exits_2_and_changes_nothing(first_run, tmp_path, args, words, animat_cli):
    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    listing = sorted((p.relative_to(run), p.stat().st_mtime_ns) for p in run.rglob("*"))
    code, out, err = animat_cli("imitate", "train", "--resume", str(run), *args)
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1, err
    assert sorted((p.relative_to(run), p.stat().st_mtime_ns) for p in run.rglob("*")) == listing


def test_resume_of_a_trained_run_writes_the_outputs_a_crash_left_out(first_run, tmp_path, animat_cli):
    """Trained to its timesteps (state saved) but dead before its outputs: --resume writes them from the
    state without learning further."""
    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    for name in ("summary.json", "policy.npz", "policy.json", "plots/learning_curve.png"):
        (run / name).unlink()
    before_csv = (run / "metrics.csv").read_text()
    code, _, err = animat_cli("imitate", "train", "--resume", str(run))
    assert code == 0, err
    assert (run / "metrics.csv").read_text() == before_csv and (run / "plots" / "learning_curve.png").is_file()
    done, again = (json.loads((r / "summary.json").read_text()) for r in (first_run, run))
    assert again["timesteps"] == done["timesteps"] == 128 and again["iterations"] == done["iterations"]
    assert again["final_eval_return_mean"] == done["final_eval_return_mean"]  # the same policy, evaluated the same way
    a, b = load_policy(first_run), load_policy(run)
    assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
    # finished now: a further --resume without more timesteps is refused
    code, _, err = animat_cli("imitate", "train", "--resume", str(run))
    assert code == 2 and "already finished its 128 timesteps" in err


def test_resume_without_state_is_refused(first_run, tmp_path, animat_cli):
    run = tmp_path / "run"
    shutil.copytree(first_run, run)
    (run / POINTER).unlink()
    code, _, err = animat_cli("imitate", "train", "--resume", str(run), "--timesteps", "256")
    assert code == 2 and "no training state" in err


def test_batched_run_resumes_with_its_return_normaliser_and_fixed_noise(tmp_path):
    from animat.imitate.train import setup

    options = {**SMALL, "vec_env": "batched", "threads": 2, "normalize_reward": True, "action_std": 0.05}
    train(TrainConfig.build(None, timesteps=128, **options), tmp_path)
    arrays, manifest = load_train_state(tmp_path)
    assert arrays["ret_rms.var"].shape == (1,) and arrays["ret_rms.var"][0] > 0 and manifest["ret_rms_count"] > 1
    cfg = TrainConfig.build(None, timesteps=256, **options)
    session = setup(cfg, tmp_path, (arrays, manifest))
    try:
        assert (
            session.vecnorm.ret_rms.var == arrays["ret_rms.var"][0]
            and session.vecnorm.ret_rms.count == manifest["ret_rms_count"]
        )
        assert not session.model.policy.log_std.requires_grad
    finally:
        session.venv.close()
    train(cfg, tmp_path, resume=True)
    np.testing.assert_array_equal(load_policy(tmp_path).arrays["log_std"], np.full(28, np.log(0.05), np.float32))
    assert load_train_state(tmp_path)[1]["num_timesteps"] == 256
