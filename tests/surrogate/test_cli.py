import json


def test_cli_bad_input_is_one_line_exit_2(animat_cli, tmp_path):
    code, _, err = animat_cli("surrogate", "generate", "cape", "--out", str(tmp_path / "a"))
    assert code == 2 and "unknown scene 'cape'" in err and len(err.strip().splitlines()) == 1
    code, _, err = animat_cli("surrogate", "generate", "sheet", "--frames", "0", "--out", str(tmp_path / "b"))
    assert code == 2 and "--frames must be > 0" in err and len(err.strip().splitlines()) == 1
    code, _, err = animat_cli("surrogate", "train", "sheet", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "c"))
    assert code == 2 and "dataset.json" in err
    code, _, err = animat_cli("surrogate", "evaluate", "sheet", "--model", str(tmp_path / "none"), "--out", str(tmp_path / "d"))
    assert code == 2 and "config.json" in err


def test_cli_generate_writes_dataset_and_resumes(animat_cli, tmp_path):
    out = tmp_path / "data"
    args = ("surrogate", "generate", "sheet", "--episodes", "2", "--frames", "6", "--size", "4", "--out", str(out))
    code, stdout, _ = animat_cli(*args)
    assert code == 0 and "dropped_frames" in stdout
    assert json.loads((out / "summary.json").read_text())["simulated_episodes"] == 2
    code, _, _ = animat_cli(*args)
    assert code == 0 and json.loads((out / "summary.json").read_text())["skipped_episodes"] == 2


def test_shipped_configs_parse():
    from pathlib import Path

    from animat.config import load_toml
    from animat.surrogate.scenes import get_scene
    from animat.surrogate.train import TrainConfig

    root = Path(__file__).resolve().parents[2] / "configs"
    for name in ("surrogate_sheet.toml", "surrogate_sheet_small.toml"):
        loaded = load_toml(root / name)
        assert set(loaded["generate"]) <= {"episodes", "frames", "seed", "workers", "backend"}
        get_scene("sheet", **loaded["scene"])
        TrainConfig.build(root / name, data="x")
