"""A skill selector trained for a few thousand steps (the batched training path), then steered by a script and by
keys (``animat imitate steer``, :mod:`animat.imitate.steer`), and the bad inputs of both (exit 2, nothing written)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from animat.character.clip import write_clip  # noqa: E402
from animat.character.demo import demo_clip  # noqa: E402
from animat.errors import ConfigError  # noqa: E402

SCRIPT = "walk:1.5,jog:1.5,walk:0.5"
TINY = dict(
    net_arch=[16, 16], n_steps=128, batch_size=256, n_epochs=1, eval_episodes=1, max_seconds=1.0, checkpoint_every=0
)


def _toy_clips(folder):
    """walk.txt (the demo walk, 1 s a cycle) and jog.txt (the same at 1.25 × the speed: 0.8 s a cycle)."""
    walk = demo_clip()
    write_clip(walk, folder / "walk.txt")
    write_clip(replace(walk, times=walk.times * 0.8), folder / "jog.txt")
    return [str(folder / "walk.txt"), str(folder / "jog.txt")]


@pytest.fixture(scope="module")
def selector_run(tmp_path_factory):
    """2048 steps of selector training on walk and jog (4 batched characters, tiny networks); its run directory."""
    from animat.imitate.options import TrainConfig
    from animat.imitate.train import train

    tmp = tmp_path_factory.mktemp("selector")
    cfg = TrainConfig.build(
        None, clips=_toy_clips(tmp), timesteps=2048, envs=4, vec_env="batched", threads=2, seed=1, **TINY
    )
    (tmp / "run").mkdir()
    train(cfg, tmp / "run")
    return tmp / "run"


def test_selector_training_writes_a_skill_policy(selector_run):
    """The policy takes the single-clip observation plus the 2-skill one-hot and names its skills; the run trained
    the steps asked with finite losses and evaluated the result."""
    from animat.imitate.env import ImitateEnv
    from animat.imitate.policy import load_policy

    policy = load_policy(selector_run / "policy")
    assert policy.manifest["skills"] == ["walk", "jog"] and policy.manifest["multi_clip"] == "selector"
    assert policy.obs_dim == ImitateEnv().observation_space.shape[0] + 2
    summary = json.loads((selector_run / "summary.json").read_text())
    assert summary["timesteps"] == 2048 and summary["clip"] == "walk+jog" and summary["final_eval_len_mean"] >= 1
    rows = (selector_run / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 2048 // (4 * 128)


def test_steer_plays_the_script(selector_run, tmp_path, animat_cli):
    """The script's segments, one-hot and scores land in the run directory; the same request gives the same run."""
    from animat.runs import read_npz

    runs = []
    for name in ("a", "b"):
        code, out, err = animat_cli(
            "imitate", "steer", str(selector_run), "--commands", SCRIPT, "--out", str(tmp_path / name)
        )
        assert code == 0, err
        runs.append(read_npz(tmp_path / name / "trajectory.npz"))
    traj = runs[0]
    assert traj["t"].shape == (105,) and traj["position"].shape == (105, 3)
    np.testing.assert_array_equal(traj["command"], [0] * 45 + [1] * 45 + [0] * 15)
    np.testing.assert_allclose(np.diff(traj["t"]), 1 / 30)
    for key in ("position", "r_imitation", "qpos"):
        np.testing.assert_array_equal(traj[key], runs[1][key])
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    segments = summary["segments"]
    assert [s["skill"] for s in segments] == ["walk", "jog", "walk"] and summary["script"] == SCRIPT
    assert segments[0]["clip_speed"] == pytest.approx(1.0, abs=1e-6)  # the demo walk: 1 m a 1 s cycle
    assert segments[1]["clip_speed"] == pytest.approx(1.25, abs=1e-6)
    scored = traj["r_imitation"][45 + 30 : 90]  # the jog after its 1 s transition
    assert segments[1]["r_imitation"] == pytest.approx(scored.mean())
    assert segments[2]["r_imitation"] is None  # 0.5 s: all transition (strict JSON's null)
    assert sum(s["falls"] for s in segments) == summary["falls"] == int(traj["fell"].sum())
    assert (tmp_path / "a" / "plots" / "steer.png").is_file() and (tmp_path / "a" / "report.html").is_file()


def test_keys_switch_skills_and_turn(selector_run):
    """--interactive's loop on scripted key reads: a skill's number or letter starts a segment on it, an arrow
    turns the reference by TURN and starts another, q ends the run."""
    from animat.character.playback import heading_angle
    from animat.imitate.policy import load_run
    from animat.imitate.steer import TURN, SkillPilot
    from animat.imitate.steer_run import live_ticks, skill_keys

    keymap = skill_keys(["walk", "jog"])
    assert keymap[b"2"] == keymap[b"j"] == keymap[b"J"] == "skill:1" and keymap[b"w"] == "skill:0"

    class Keys:
        reads = iter([b"", b"", b"", b"J", b"", b"\x1b[D", b"", b"", b"q"])

        def read(self, timeout):
            return next(self.reads)

    cfg, policy = load_run(selector_run)
    pilot = SkillPilot(cfg, policy, 0)
    records = live_ticks(pilot, Keys(), keymap, realtime=False)
    assert [r["segment"] for r in records] == [0, 0, 0, 1, 1, 2, 2, 2]
    assert [r["command"] for r in records] == [0, 0, 0, 1, 1, 1, 1, 1]
    ref = pilot.env.clip  # the turned jog: placed under the character's heading, turned left by TURN
    first = ref.clip.sample(ref.start)
    heading = heading_angle(records[4]["qpos"][3:7]) - heading_angle(first.root_quat) + TURN
    assert np.isclose(np.cos(ref.yaw - heading), 1.0)


def test_interactive_keys_from_a_terminal(selector_run):
    """play_keys on a pseudo-terminal: J typed before the first tick puts the character on the jog, q typed once
    three status lines are shown ends the run (typed on a clock, a starved machine could quit before the first
    tick); the terminal's settings are restored."""
    import io
    import os
    import pty
    import termios
    import threading
    import time

    from animat.imitate.policy import load_run
    from animat.imitate.steer_run import play_keys

    cfg, policy = load_run(selector_run)
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        os.write(master, b"J")
        shown = io.StringIO()

        def quit_after_three_ticks():
            deadline = time.monotonic() + 120.0
            while shown.getvalue().count("\r") < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            os.write(master, b"q")

        typist = threading.Thread(target=quit_after_three_ticks)
        typist.start()
        flight = play_keys(cfg, policy, fd=slave, out=shown)
        typist.join()
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)
    assert len(flight["t"]) >= 3 and (flight["command"] == 1).all() and (flight["segment"] == 0).all()
    assert "2/J: jog" in shown.getvalue() and "jog" in shown.getvalue().splitlines()[-1]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--commands", "walk:1,skip:2"], "unknown skill 'skip'"),
        (["--commands", "walk:0"], "> 0"),
        (["--commands", "walk:-1"], "> 0"),
        (["--commands", "walk:nan"], "> 0"),
        (["--commands", "walk"], "malformed"),
        (["--commands", "walk:two"], "not a number"),
        ([], "either --commands"),
        (["--commands", "walk:1", "--interactive"], "either --commands"),
        (["--interactive"], "not one"),  # pytest's stdin is not a terminal
    ],
)
def test_steer_bad_input_exits_2_writing_nothing(selector_run, tmp_path, animat_cli, args, words):
    code, out, err = animat_cli("imitate", "steer", str(selector_run), *args, "--out", str(tmp_path / "out"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_steer_refuses_a_single_clip_policy(tmp_path, animat_cli):
    code, _, err = animat_cli(
        "imitate", "steer", "pretrained:walk", "--commands", "walk:1", "--out", str(tmp_path / "o")
    )
    assert code == 2 and "takes no skill command" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_clip_of_another_skeleton_is_refused_before_training(tmp_path, animat_cli):
    """A clip whose frames are not humanoid3d's (40 numbers, not 44) among the clips: one line, exit 2, no run."""
    clips = _toy_clips(tmp_path)
    (tmp_path / "other.txt").write_text(json.dumps({"Loop": "wrap", "Frames": [[0.1] + [0.0] * 39] * 3}))
    toml = tmp_path / "multi.toml"
    toml.write_text(f"clips = {json.dumps([*clips, str(tmp_path / 'other.txt')])}\n")
    code, _, err = animat_cli("imitate", "train", "--config", str(toml), "--out", str(tmp_path / "run"))
    assert code == 2 and "another skeleton" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match="more than once"):
        from animat.imitate.options import TrainConfig

        TrainConfig.build(clips=[clips[0], clips[0]])


def test_random_scripts_last_20_s_in_commands_of_2_to_5_s_that_switch_skills():
    from animat.imitate.steer_scores import random_script

    skills = ["walk", "jog", "run"]
    for seed in range(200):
        parts = [p.split(":") for p in random_script(np.random.default_rng(seed), skills).split(",")]
        seconds = [float(s) for _, s in parts]
        assert abs(sum(seconds) - 20.0) < 1e-9 and all(2.0 <= s <= 5.0 for s in seconds)
        names = [n for n, _ in parts]
        assert set(names) <= set(skills) and all(a != b for a, b in zip(names, names[1:]))
    assert random_script(np.random.default_rng(3), skills) == random_script(np.random.default_rng(3), skills)
    with pytest.raises(ConfigError):
        random_script(np.random.default_rng(0), ["walk"])


def test_score_steering_rates_add_up(selector_run, tmp_path, animat_cli):
    """``imitate score-steering``: every segment scored, the rates are the fractions of its rows."""
    out = tmp_path / "scores"
    code, _, err = animat_cli("imitate", "score-steering", str(selector_run), "--scripts", "2", "--out", str(out))
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    rows = (out / "segments.csv").read_text().splitlines()
    assert s["scripts"] == 2 and s["segments"] == len(rows) - 1 >= 2 * 4  # 20 s of commands of at most 5 s
    head = rows[0].split(",")
    passed = [r.split(",")[head.index("passed")] == "True" for r in rows[1:]]
    assert s["segment_pass_rate"] == pytest.approx(np.mean(passed))
    assert 0.0 <= s["scripts_without_fall_rate"] <= 1.0 and {"walk_r_imitation_mean", "jog_clip_speed"} <= set(s)
    code, _, err = animat_cli("imitate", "score-steering", "pretrained:walk", "--out", str(tmp_path / "no"))
    assert code == 2 and "single-clip" in err and not (tmp_path / "no").exists()


def test_a_selector_plays_live_with_skill_and_turn_keys(selector_run, tmp_path):
    """``animat play imitate RUN`` on a skill selector (issue 51's speed command): a skill's number or first letter
    switches the policy's skill, the arrows turn it; the run directory records the commands."""
    from animat.imitate.live import SkillLive, open

    live = open(str(selector_run))
    assert isinstance(live, SkillLive)
    assert {live.keys[k] for k in ("1", "2", "w", "j")} == {"walk", "jog"} and live.keys["ArrowLeft"] == "left"
    for _ in range(6):
        live.step()
    live.command("jog")
    assert live.env.skill == 1 and live.status()["command"].startswith("jog")
    heading = live.env.clip.yaw
    live.command("left")
    assert live.env.skill == 1 and live.env.clip.yaw != heading
    for _ in range(6):
        live.step()
    with pytest.raises(ConfigError, match="unknown command 'sprint'"):
        live.command("sprint")
    summary = live.write(tmp_path, {})
    assert summary["episode_steps"] == live.steps() == 12 and summary["commands"] == ["jog@0.2", "left@0.2"]
    assert (tmp_path / "report.html").is_file() and np.load(tmp_path / "trajectory.npz")["qpos"].shape[0] == 12
