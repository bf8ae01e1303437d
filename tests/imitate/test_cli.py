"""``animat imitate check|make-demo-clip`` end to end, in-process."""

from __future__ import annotations

import json

import pytest

KEYS = {"frames", "loop", "cycle_seconds", "root_advance_m", "kinematic_replay_mean_reward"}


def test_demo_clip_made_and_checked(tmp_path, animat_cli):
    path = tmp_path / "demo.txt"
    code, out, _ = animat_cli("imitate", "make-demo-clip", "--out", str(path))
    assert code == 0 and path.is_file() and "31 frames" in out
    code, out, _ = animat_cli("imitate", "check", str(path))
    assert code == 0
    facts = json.loads(out)
    assert KEYS <= set(facts)
    assert facts["frames"] == 31 and facts["loop"] == "wrap" and facts["cycle_seconds"] == pytest.approx(1.0)
    assert facts["root_advance_m"] == pytest.approx(1.0) and facts["kinematic_replay_mean_reward"] >= 0.9999
    code, _, err = animat_cli("imitate", "make-demo-clip", "--out", str(path))
    assert code == 2 and "--force" in err


@pytest.mark.deepmimic
def test_check_shared_walk(animat_cli):
    code, out, _ = animat_cli(
        "imitate", "check", "shared:humanoid3d_walk.txt", "--reward", "deepmimic-code"
    )  # = find_shared_deepmimic() / NAME
    assert code == 0
    facts = json.loads(out)
    assert facts["frames"] == 39 and facts["cycle_seconds"] == pytest.approx(1.266616)
    assert facts["root_advance_m"] == pytest.approx(1.23859) and facts["kinematic_replay_mean_reward"] >= 0.9999


def test_missing_clip_exits_2_with_one_line(tmp_path, animat_cli):
    code, out, err = animat_cli("imitate", "check", str(tmp_path / "none.txt"))
    assert code == 2 and out == "" and "not found" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"Loop": "wrap", "Frames": [[0.1, 2', "not valid JSON"),
        ('{"Loop": "wrap", "Frames": [[1, 2, 3], [1, 2, 3]]}', "frame 0"),
    ],
)
def test_bad_clip_exits_2_with_one_line(tmp_path, text, words, animat_cli):
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    code, out, err = animat_cli("imitate", "check", str(bad))
    assert code == 2 and out == ""
    assert words in err and len(err.strip().splitlines()) == 1


def _flags(*path: str) -> dict:
    import typer

    from animat import cli

    command = typer.main.get_command(cli.app)
    for name in path:
        command = command.commands[name]
    return {p.name: (*p.opts, *p.secondary_opts) for p in command.params}


def test_imitate_train_takes_the_same_flags_as_before_the_options_were_declared_once():
    """``animat imitate train``'s options and their flags: what the command line took when each was spelt out as a
    typer parameter (issue 46 builds the declared ones from TrainConfig), and --hold-seconds since."""
    assert _flags("imitate", "train") == {
        "clip": ("clip",),
        "clips": ("--clips",),
        "multi_clip": ("--multi-clip",),
        "timesteps": ("--timesteps", "-n"),
        "envs": ("--envs", "-k"),
        "vec_env": ("--vec-env",),
        "net_arch": ("--net-arch",),
        "max_minutes": ("--max-minutes",),
        "hold_seconds": ("--hold-seconds",),  # added with the option (issue 47, one-shot clips)
        "seed": ("--seed",),
        "goal": ("--goal", "--no-goal"),
        "backend": ("--backend",),
        "address": ("--address",),
        "out": ("--out", "-o"),
        "config": ("--config", "-c"),
        "resume": ("--resume",),
        "init_policy": ("--from",),
    }


def test_a_bad_net_arch_is_one_line_with_its_example(tmp_path, animat_cli):
    code, out, err = animat_cli("imitate", "train", "--net-arch", "64;x", "--out", str(tmp_path / "run"))
    assert code == 2 and out == "" and not (tmp_path / "run").exists()
    assert "--net-arch must be integers like '1024,512', got '64;x'" in err and len(err.strip().splitlines()) == 1
