"""``animat surrogate generate`` for the garments on the character: bad input (an unknown garment, a missing
clip, a clip of another skeleton) is one line, exit 2, nothing written; a small dataset is made and resumed."""

import json

import numpy as np
import pytest

from animat.surrogate.data import episode_path, read_episode


def _one_line_error(animat_cli, out, *args):
    code, _, err = animat_cli("surrogate", "generate", *args, "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out.exists(), (code, err)
    return err


def _config(tmp_path, clips: list[str], **scene) -> str:
    lines = ["[scene]", "clips = " + json.dumps(clips)] + [f"{k} = {v}" for k, v in scene.items()]
    path = tmp_path / "garment.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_an_unknown_garment_is_one_line_exit_2(animat_cli, tmp_path):
    err = _one_line_error(animat_cli, tmp_path / "a", "poncho-character")
    assert "unknown scene 'poncho-character'" in err and "skirt-character" in err


def test_a_missing_clip_is_one_line_exit_2(animat_cli, tmp_path):
    missing = str(tmp_path / "humanoid3d_nope.txt")
    err = _one_line_error(animat_cli, tmp_path / "a", "cape-character", "--config", _config(tmp_path, [missing]))
    assert "humanoid3d_nope.txt" in err and "not found" in err
    config = _config(tmp_path, ["shared:humanoid3d_nope.txt"])
    err = _one_line_error(animat_cli, tmp_path / "b", "skirt-character", "--config", config)
    assert "humanoid3d_nope.txt" in err
    err = _one_line_error(animat_cli, tmp_path / "c", "skirt-character", "--config", _config(tmp_path, []))
    assert "give at least one clip" in err


def test_a_clip_of_another_skeleton_is_one_line_exit_2(animat_cli, tmp_path):
    """A clip whose frames hold 36 numbers (a skeleton with two ball joints fewer) instead of humanoid3d's 44."""
    frame = [0.0333, 0.0, 0.85, 0.0, 1.0, 0.0, 0.0, 0.0] + [1.0, 0.0, 0.0, 0.0] * 6 + [0.0] * 4
    clip = tmp_path / "other_skeleton.txt"
    clip.write_text(json.dumps({"Loop": "wrap", "Frames": [frame, frame]}))
    config = _config(tmp_path, [str(clip)])
    err = _one_line_error(animat_cli, tmp_path / "a", "cape-character", "--config", config)
    assert "another skeleton" in err and "other_skeleton.txt" in err


@pytest.mark.deepmimic
def test_generate_garment_dataset_and_resume_after_a_lost_episode(animat_cli, tmp_path):
    out = tmp_path / "data"
    config = _config(
        tmp_path, ["shared:humanoid3d_walk.txt", "shared:humanoid3d_kick.txt"], size=5, rows=6, warmup_frames=5
    )
    args = ("surrogate", "generate", "cape-character", "--episodes", "2", "--frames", "12", "--config", config)
    code, _, err = animat_cli(*args, "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["vertices"] == 30 and summary["frames"] == 24 and summary["dropped_frames"] == 0
    first = read_episode(episode_path(out, 1))
    assert first["X"].shape == (12, 30, 3) and first["Y"].shape == (12, 105)
    episode_path(out, 1).unlink()  # as if killed before it was written
    code, _, err = animat_cli(*args, "--out", str(out))
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0 and summary["skipped_episodes"] == 1 and summary["simulated_episodes"] == 1, err
    again = read_episode(episode_path(out, 1))
    assert np.array_equal(again["X"], first["X"]) and np.array_equal(again["Y"], first["Y"])  # seeded per episode
