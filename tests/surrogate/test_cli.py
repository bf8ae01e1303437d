import json


def test_cli_bad_input_is_one_line_exit_2(animat_cli, tmp_path):
    code, _, err = animat_cli("surrogate", "generate", "cloak", "--out", str(tmp_path / "a"))
    assert code == 2 and "unknown scene 'cloak'" in err and len(err.strip().splitlines()) == 1
    code, _, err = animat_cli("surrogate", "generate", "sheet", "--frames", "0", "--out", str(tmp_path / "b"))
    assert code == 2 and "--frames must be an integer >= 1, got 0" in err and len(err.strip().splitlines()) == 1
    code, _, err = animat_cli("surrogate", "generate", "sheet", "--seed", "-1", "--out", str(tmp_path / "b"))
    assert (
        code == 2
        and "--seed must be an integer >= 0, got -1" in err
        and len(err.strip().splitlines()) == 1
        and not (tmp_path / "b").exists()
    )
    code, _, err = animat_cli(
        "surrogate", "train", "sheet", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "c")
    )
    assert code == 2 and "dataset.json" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "c").exists()
    code, _, err = animat_cli(
        "surrogate", "evaluate", "sheet", "--model", str(tmp_path / "none"), "--out", str(tmp_path / "d")
    )
    assert code == 2 and "config.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()  # checked before the run directory is made (it was left behind, empty)
    for flag, value, message in (
        ("--rest-seconds", "-1", "rest_seconds must be >= 0"),
        ("--stability-frames", "2", "stability_frames must be 0 (skip) or >= 4"),
        ("--horizon", "2", "horizon must be >= 3 frames"),
    ):
        code, _, err = animat_cli(
            "surrogate",
            "evaluate",
            "sheet",
            "--model",
            str(tmp_path / "none"),
            flag,
            value,
            "--out",
            str(tmp_path / "e"),
        )
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "e").exists()


def test_cli_generate_writes_dataset_and_resumes(animat_cli, tmp_path):
    out = tmp_path / "data"
    args = ("surrogate", "generate", "sheet", "--episodes", "2", "--frames", "6", "--size", "4", "--out", str(out))
    code, stdout, _ = animat_cli(*args)
    assert code == 0 and "dropped_frames" in stdout
    assert json.loads((out / "summary.json").read_text())["simulated_episodes"] == 2
    code, _, _ = animat_cli(*args)
    assert code == 0 and json.loads((out / "summary.json").read_text())["skipped_episodes"] == 2
    # a third episode: metrics.csv keeps the rows of the earlier session
    code, _, err = animat_cli(*[a if a != "2" else "3" for a in args])
    assert code == 0, err
    assert [r.split(",")[0] for r in (out / "metrics.csv").read_text().splitlines()] == ["index", "0", "1", "2"]


def test_cli_generate_never_writes_into_a_folder_that_is_not_a_dataset(animat_cli, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name, text in (("summary.json", '{"a": 1}'), ("metrics.csv", "epoch\n0\n")):
        (run / name).write_text(text)
    code, _, err = animat_cli(
        "surrogate", "generate", "sheet", "--episodes", "1", "--frames", "6", "--size", "4", "--out", str(run)
    )
    assert code == 2 and "no dataset.json" in err and len(err.strip().splitlines()) == 1
    assert (
        sorted(p.name for p in run.iterdir()) == ["metrics.csv", "summary.json"]
        and (run / "summary.json").read_text() == '{"a": 1}'
    )


def test_shipped_configs_parse():
    from pathlib import Path

    from animat.config import load_toml
    from animat.surrogate.scenes import get_scene
    from animat.surrogate.train import TrainConfig

    root = Path(__file__).resolve().parents[2] / "configs"
    for name in ("surrogate_sheet.toml", "surrogate_sheet_small.toml", "surrogate_flag.toml", "surrogate_cape.toml"):
        loaded = load_toml(root / name)
        assert set(loaded["generate"]) <= {"episodes", "frames", "seed", "workers", "backend"}
        get_scene(name.split("_")[1].split(".")[0], **loaded["scene"])
        TrainConfig.build(root / name, data="x")


def test_cli_generate_train_resume_evaluate_cape(animat_cli, tmp_path):
    data, model = tmp_path / "data", tmp_path / "model"
    code, _, err = animat_cli(
        "surrogate", "generate", "cape", "--episodes", "3", "--frames", "40", "--size", "5", "--out", str(data)
    )
    assert code == 0, err
    train = (
        "surrogate",
        "train",
        "cape",
        "--data",
        str(data),
        "--components",
        "4",
        "--batches-per-epoch",
        "2",
        "--window",
        "8",
        "--test-episodes",
        "1",
    )
    code, _, err = animat_cli(*train, "--epochs", "2", "--out", str(model))
    assert code == 0, err
    code, _, err = animat_cli("surrogate", "train", "cape", "--resume", str(model), "--lr", "0.1")
    assert code == 2 and "only --epochs may change" in err
    code, _, err = animat_cli("surrogate", "train", "cape", "--resume", str(model), "--epochs", "3")
    assert code == 0, err
    assert len((model / "metrics.csv").read_text().splitlines()) == 4  # header + 3 epochs
    code, _, err = animat_cli(
        "surrogate",
        "evaluate",
        "cape",
        "--model",
        str(model),
        "--horizon",
        "20",
        "--stability-frames",
        "200",
        "--rest-seconds",
        "2",
        "--no-video",
        "--out",
        str(tmp_path / "eval"),
    )
    assert code == 0, err
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["scene"] == "cape" and summary["stability_finite"] and 0 < summary["model_megabytes"] < 16
    assert summary["rest_seconds"] == 2.0 and summary["rest_states"] == 1 and summary["rest_speed_max_mm_s"] >= 0
    code, _, err = animat_cli(*train, "--epochs", "1", "--split-seed", "3", "--out", str(tmp_path / "split"))
    assert code == 0, err
    from animat.surrogate.options import split_episodes

    shuffled = json.loads((tmp_path / "split" / "config.json").read_text())
    assert shuffled["split_seed"] == 3 and json.loads((model / "config.json").read_text())["split_seed"] == 0
    assert shuffled["test_episode_ids"] == split_episodes(3, 1, 0, 3)[2] != split_episodes(3, 1, 0, 0)[2]


def test_cli_scene_options_and_config_tables_are_checked(animat_cli, tmp_path):
    """[scene] values out of range, a 'name' in [scene], tables a verb does not know, a corrupt
    dataset file: one line, exit 2, no dataset or run folder."""
    cases = (
        ('[scene]\nname = "flag"\n', "set by the command's SCENE argument"),
        ('scene = "x"\n', "must be a table [scene]"),
        ("[scene]\nhold_seconds = [1.0, 0.0]\n", "hold_seconds must be a range"),
        ("[scene]\nyoung_pa = -1.0\n", "young_pa must be > 0"),
        ("[scene]\nside_m = nan\n", "side_m must be a finite number"),
        ("[scenes]\nsize = 4\n", "unknown table(s) ['scenes']"),
        ("[scene]\nwarmup_frames = -3\n", "need warmup_frames >= 0"),
        ("[scene]\npoisson = 0.7\n", "poisson < 0.5"),
    )
    for text, message in cases:
        (tmp_path / "c.toml").write_text(text)
        code, _, err = animat_cli(
            "surrogate", "generate", "sheet", "--config", str(tmp_path / "c.toml"), "--out", str(tmp_path / "d")
        )
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "d").exists(), (
            text,
            err,
        )
    for flag, value, message in (
        ("--batches-per-epoch", "-1", "batches_per_epoch and test_episodes must be >= 0"),
        ("--lr", "inf", "lr must be a finite number"),
    ):
        code, _, err = animat_cli(
            "surrogate", "train", "sheet", "--data", str(tmp_path), flag, value, "--out", str(tmp_path / "t")
        )
        assert code == 2 and message in err and not (tmp_path / "t").exists(), err
    code, _, err = animat_cli(
        "surrogate",
        "evaluate",
        "sheet",
        "--model",
        str(tmp_path),
        "--rest-seconds",
        "inf",
        "--out",
        str(tmp_path / "e"),
    )
    assert code == 2 and "rest_seconds must be >= 0 (and finite)" in err


def _flags(*path: str) -> dict:
    import typer

    from animat import cli

    command = typer.main.get_command(cli.app)
    for name in path:
        command = command.commands[name]
    return {p.name: (*p.opts, *p.secondary_opts) for p in command.params}


def test_declared_verbs_take_the_same_flags_as_before_the_options_were_declared_once():
    """``animat surrogate generate|train|divergence``: the flags each took when its declared options were spelt out
    as typer parameters (issue 46 builds them from GenerateOptions and TrainConfig)."""
    scene, out = {"scene": ("scene",)}, {"out": ("--out", "-o")}
    assert _flags("surrogate", "generate") == {
        **scene,
        "episodes": ("--episodes", "-e"),
        "frames": ("--frames", "-f"),
        "seed": ("--seed",),
        "workers": ("--workers", "-w"),
        "backend": ("--backend",),
        "size": ("--size",),
        **out,
        "config": ("--config", "-c"),
    }
    train = _flags("surrogate", "train")
    assert train == {
        **scene,
        "data": ("--data", "-d"),
        "components": ("--components", "-k"),
        **{n: ("--" + n.replace("_", "-"),) for n in ("epochs", "batches_per_epoch", "lr", "window", "batch")},
        **{n: ("--" + n.replace("_", "-"),) for n in ("test_episodes", "seed", "split_seed")},
        **out,
        "config": ("--config", "-c"),
        "resume": ("--resume",),
    }
    assert _flags("surrogate", "divergence")["components"] == ("--components", "-k")


def test_train_data_is_read_as_a_path(animat_cli, tmp_path, monkeypatch):
    """``--data ./nowhere/`` names the folder as a path does (``nowhere``), as when the option was typed ``Path``."""
    monkeypatch.chdir(tmp_path)
    code, _, err = animat_cli("surrogate", "train", "sheet", "--data", "./nowhere/", "--out", str(tmp_path / "run"))
    assert code == 2 and not (tmp_path / "run").exists()
    assert err.strip() == "error: 'nowhere' holds no dataset.json; is it a dataset made by 'animat surrogate generate'?"
