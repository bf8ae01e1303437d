"""``animat surrogate generate|train|evaluate|play|divergence SCENE``: subspace neural physics for cloth."""

from __future__ import annotations

from pathlib import Path

import typer

from animat import runs
from animat.config import cli_option, no_animation_option, require
from animat.console import console, print_summary, progress
from animat.errors import ConfigError
from animat.surrogate.options import GenerateOptions, TrainConfig

app = typer.Typer(help="Subspace neural physics: a learned cloth surrogate (Holden et al. 2019).", no_args_is_help=True)


def _check_scene(scene: str) -> None:
    from animat.surrogate.scenes import SCENES

    require("scene", scene, choices=SCENES)


@app.command("generate")
def generate_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    episodes: int | None = cli_option(GenerateOptions, "episodes", "--episodes", "-e"),
    frames: int | None = cli_option(GenerateOptions, "frames", "--frames", "-f"),
    size: int | None = typer.Option(
        None,
        "--size",
        help="Cloth vertices per side (the garments: across or around). \\[default: the scene's: 51 sheet and flag, "
        "21 cape, 13 cape-character, 32 skirt-character]",
    ),
    seed: int | None = cli_option(GenerateOptions, "seed", "--seed"),
    workers: int | None = cli_option(GenerateOptions, "workers", "--workers", "-w"),
    backend: str | None = cli_option(GenerateOptions, "backend", "--backend"),
    out: Path | None = typer.Option(None, "--out", "-o", help="Dataset folder; an existing one is resumed."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file (\\[generate] and \\[scene] tables)."),
) -> None:
    """Simulate reference episodes into a dataset folder (one npz per episode; resumable)."""
    from animat.surrogate.generate import generate_options, run_generate
    from animat.surrogate.scenes import get_scene

    _check_scene(scene)
    values, scene_options = generate_options(
        config, size, episodes=episodes, frames=frames, seed=seed, workers=workers, backend=backend
    )
    get_scene(scene, **scene_options)  # bad scene options fail before any output
    if out is None:
        out = runs.new_run_dir("surrogate", "generate")
    console.print(f"surrogate generate {scene}: {values['episodes']} episodes × {values['frames']} frames into {out}")
    with progress("episodes", "dropped {task.fields[dropped]}") as bar:
        task = bar.add_task("generate", total=int(values["episodes"]), dropped=0)
        summary = run_generate(
            scene,
            values,
            scene_options,
            out,
            on_episode=lambda row, dropped: bar.update(task, advance=1, dropped=dropped),
            on_skipped=lambda count: bar.update(task, completed=count),
        )
        bar.update(task, completed=int(values["episodes"]))
    print_summary(summary, out)


@app.command("train")
def train_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    data: Path | None = cli_option(TrainConfig, "data", "--data", "-d"),
    components: int | None = cli_option(TrainConfig, "components", "--components", "-k"),
    epochs: int | None = cli_option(TrainConfig, "epochs", "--epochs"),
    batches_per_epoch: int | None = cli_option(TrainConfig, "batches_per_epoch", "--batches-per-epoch"),
    lr: float | None = cli_option(TrainConfig, "lr", "--lr"),
    window: int | None = cli_option(TrainConfig, "window", "--window"),
    batch: int | None = cli_option(TrainConfig, "batch", "--batch"),
    test_episodes: int | None = cli_option(TrainConfig, "test_episodes", "--test-episodes"),
    seed: int | None = cli_option(TrainConfig, "seed", "--seed"),
    split_seed: int | None = cli_option(TrainConfig, "split_seed", "--split-seed"),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file (\\[train] table)."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue this training run from checkpoints/last/ (only --epochs may change)."
    ),
) -> None:
    """Fit PCA + alpha/beta and train the residual network through rollouts."""
    from animat.surrogate.train import train

    _check_scene(scene)
    options = dict(
        data=str(data) if data is not None else None,
        components=components,
        epochs=epochs,
        batches_per_epoch=batches_per_epoch,
        lr=lr,
        window=window,
        batch=batch,
        test_episodes=test_episodes,
        seed=seed,
        split_seed=split_seed,
    )
    if resume is None:  # a missing or foreign dataset fails here, in one line, before the run directory exists
        from animat.surrogate.data import check_dataset

        cfg = TrainConfig.build(config, **options)
        if not cfg.data:
            raise ConfigError("give the dataset folder with --data (or 'data' in the [train] table)")
        check_dataset(cfg.data, scene)
        run_dir = runs.new_run_dir("surrogate", "train", out)
    else:
        cfg, run_dir = runs.start_or_resume(
            "surrogate",
            TrainConfig,
            resume=resume,
            config=config,
            out=out,
            options=options,
            may_change={"epochs": "--epochs"},
        )
    console.print(
        f"surrogate train {scene}: k={cfg.components}, {cfg.epochs} epochs, data {cfg.data}, run dir {run_dir}"
    )
    with progress("epoch", "train {task.fields[train]}  held-out {task.fields[test]}") as bar:
        task = bar.add_task("train", total=cfg.epochs, train="-", test="-")

        def on_epoch(row: dict) -> None:
            bar.update(
                task, completed=row["epoch"] + 1, train=f"{row['train_loss_m']:.3g}", test=f"{row['test_loss_m']:.3g}"
            )

        summary = train(cfg, run_dir, scene=scene, on_epoch=on_epoch, resume=resume is not None)
    print_summary(summary, run_dir)


@app.command("evaluate")
def evaluate_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    model: Path = typer.Option(..., "--model", "-m", help="Run directory of 'surrogate train'."),
    data: Path | None = typer.Option(None, "--data", "-d", help="Dataset folder. \\[default: the one trained on]"),
    horizon: int = typer.Option(120, "--horizon", help="Rollout length (frames)."),
    stride: int = typer.Option(30, "--stride", help="Frames between the starts of the held-out rollouts."),
    stability_frames: int = typer.Option(
        10_000, "--stability-frames", help="Free surrogate rollout to check for blow-ups (0: skip)."
    ),
    settle_frames: int = typer.Option(
        600, "--settle-frames", help="Frames after the free rollout with the external objects stopped."
    ),
    rest_seconds: float = typer.Option(
        20.0,
        "--rest-seconds",
        help="Still-air check: seconds the surrogate runs alone after the external objects stop, from 30 held-out "
        "states (0: skip).",
    ),
    video: bool = typer.Option(
        True, "--video/--no-video", help="Write media/rollout.gif (reference | surrogate | error colour map)."
    ),
    no_animation: bool = no_animation_option(),
    reference_frames: int = typer.Option(
        60,
        "--reference-frames",
        help="Time the reference simulation over this many frames for the speed-up (0: use the time recorded in the "
        "dataset).",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Held-out rollout error (% of cloth size) of surrogate, alpha/beta-only and PCA floor; speed."""
    from animat.surrogate.evaluate import check_inputs, check_options, evaluate

    _check_scene(scene)
    check_options(horizon, stride, stability_frames, settle_frames, reference_frames, rest_seconds)
    check_inputs(model, str(data) if data is not None else None, scene)  # before the run directory exists
    run_dir = runs.new_run_dir("surrogate", "evaluate", out)
    summary = evaluate(
        model,
        run_dir,
        data=str(data) if data is not None else None,
        horizon=horizon,
        stride=stride,
        scene=scene,
        stability_frames=stability_frames,
        settle_frames=settle_frames,
        video=video and not no_animation,
        reference_frames=reference_frames,
        rest_seconds=rest_seconds,
    )
    print_summary(summary, run_dir)


@app.command("play")
def play_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    model: Path = typer.Option(..., "--model", "-m", help="Run directory of 'surrogate train'."),
    frames: int | None = typer.Option(
        None,
        "--frames",
        "-f",
        help="Frames to run at the scene's 60 fps. \\[default: 600; a --path file: all its rows]",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the random path."),
    path: str = typer.Option(
        "random",
        "--path",
        help="random (the scene's own path generator) | a .npy file of external states (frames, y_dim).",
    ),
    backend: str = typer.Option(
        "numba",
        "--backend",
        help="Runtime: numba (one compiled call per frame, the fastest) | numpy | jax | reference (plain NumPy).",
    ),
    fps: float = typer.Option(30.0, "--fps", help="Video frame rate; every (scene fps / fps)-th frame is drawn."),
    video: bool = typer.Option(
        True, "--video/--no-video", help="Write media/play.mp4 (imageio-ffmpeg) or media/play.gif."
    ),
    no_animation: bool = no_animation_option(),
    interactive: bool = typer.Option(
        False,
        "--interactive",
        help="A window where you move the external object (needs a display; --frames, --path, --out and the video do "
        "not apply).",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Run a trained surrogate live, frame by frame, on a new path of the external object; video + per-frame timing."""
    from animat.surrogate import play

    _check_scene(scene)
    if interactive:
        play.need_display()
    require("--fps", fps, gt=0, le=60)
    loaded = play.load_model(model, scene, backend)
    if interactive:
        play.interactive(loaded)
        return
    Y = play.external_path(loaded.runtime.scene, frames, path, seed)
    video = video and not no_animation
    run_dir = runs.new_run_dir("surrogate", "play", out)
    runs.atomic_write_json(
        run_dir / "config.json",
        {
            "scene": scene,
            "model": str(model),
            "frames": len(Y),
            "seed": seed,
            "path": path,
            "backend": backend,
            "fps": fps,
            "video": video,
        },
    )
    every = max(1, int(round(loaded.runtime.scene.fps / fps)))
    with progress() as bar:
        frames_task = bar.add_task("frames", total=len(Y))
        draw_task = bar.add_task("video", total=len(range(0, len(Y), every)) if video else 0, visible=video)
        summary = play.play(
            loaded,
            Y,
            run_dir,
            every=every,
            video_fps=loaded.runtime.scene.fps / every,
            video=video,
            on_frame=lambda t: bar.update(frames_task, completed=t + 1),
            on_draw=lambda i: bar.update(draw_task, completed=i + 1),
            info={"model": str(model), "path": path, "seed": seed if path == "random" else None},
        )
    print_summary(summary, run_dir)


@app.command("divergence")
def divergence_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="TOML file (\\[scene] table; frames and seed from \\[generate])."
    ),
    episodes: int = typer.Option(
        6,
        "--episodes",
        "-e",
        help="Episodes (those of a dataset generated with the same seed: the first ones, or --model's held-out ones).",
    ),
    frames: int | None = typer.Option(
        None, "--frames", "-f", help="Frames per episode. \\[default: the config's, else 300]"
    ),
    perturb: float | None = typer.Option(
        None,
        "--perturb",
        help="Std of the Gaussian noise added to the external path, Y's units (m; the flag's wind m/s). "
        "\\[default: 1e-3; 0 with --restart]",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Seed of the episodes' paths. \\[default: the config's, else 0]"
    ),
    horizon: int = typer.Option(120, "--horizon", help="Segment length of evaluate's protocol (frames)."),
    stride: int = typer.Option(30, "--stride", help="Frames between segment starts (as in evaluate)."),
    noise: str = typer.Option(
        "white",
        "--noise",
        help="white (a fresh draw every frame) | offset (one draw, held from the perturbed frame on).",
    ),
    restart: str = typer.Option(
        "none",
        "--restart",
        help="none | frames (restart from the recorded frames s, s+1) | subspace (from their PCA projection: --model).",
    ),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Trained run whose pca.npz --restart subspace projects on."
    ),
    components: int | None = cli_option(TrainConfig, "components", "--components", "-k"),
    workers: int = typer.Option(1, "--workers", "-w", help="Episodes simulated in this many processes."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Predictability floor: the gap between two reference runs whose external paths differ by noise of std --perturb,
    or whose state restarts from what a surrogate starts from (--restart)."""
    from animat.surrogate.divergence import check_inputs, divergence, runs_per_episode, write_run
    from animat.surrogate.generate import config_table
    from animat.surrogate.options import load_run_config
    from animat.surrogate.scenes import get_scene, scene_from_dict
    from animat.surrogate.subspace import PCA

    _check_scene(scene)
    generate = config_table(config, "generate")
    frames = int(frames if frames is not None else generate.get("frames", 300))
    seed = int(seed if seed is not None else generate.get("seed", 0))
    perturb = float(perturb if perturb is not None else (1e-3 if restart == "none" else 0.0))
    pca = PCA.load(model / "pca.npz") if model is not None else None
    if pca is not None and components is not None:
        require("--components", components, ge=1, le=pca.n_components)
        pca = pca.truncate(components)
    project = pca.round_trip if pca is not None else None
    k = pca.n_components if pca is not None else None
    check_inputs(episodes, frames, perturb, seed, horizon, stride, noise, restart, project, workers)
    ids, sc = None, get_scene(scene, **config_table(config, "scene"))
    if (
        model is not None
    ):  # the model's held-out episodes, in the scene it was trained on unless --config says otherwise
        trained = load_run_config(model, scene)  # a model of another scene is refused
        ids = trained["test_episode_ids"]
        episodes = min(episodes, len(ids))
        if config is None:
            sc = scene_from_dict(trained["scene"])
    if pca is not None and pca.mean.shape[0] != 3 * sc.n_vertices:
        raise ConfigError(f"model {str(model)!r} has {pca.mean.shape[0] // 3} vertices, the scene {sc.n_vertices}")
    run_dir = runs.new_run_dir("surrogate", "divergence", out)
    runs.atomic_write_json(
        run_dir / "config.json",
        {
            "scene": sc.to_dict(),
            "config": str(config) if config else None,
            "episodes": episodes,
            "frames": frames,
            "perturb": perturb,
            "noise": noise,
            "seed": seed,
            "horizon": horizon,
            "stride": stride,
            "restart": restart,
            "model": str(model) if model else None,
            "components": k,
        },
    )
    with progress("reference runs") as bar:
        task = bar.add_task("divergence", total=episodes * runs_per_episode(frames, horizon, stride))
        summary, gaps = divergence(
            sc,
            episodes,
            frames,
            perturb,
            seed=seed,
            horizon=horizon,
            stride=stride,
            noise=noise,
            restart=restart,
            project=project,
            components=k,
            episode_ids=ids,
            on_run=lambda: bar.advance(task),
            workers=workers,
        )
    write_run(run_dir, summary, gaps, sc.fps)
    print_summary(summary, run_dir)
