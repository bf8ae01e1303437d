"""``animat surrogate generate|train|evaluate|play|divergence SCENE``: subspace neural physics for cloth."""

from __future__ import annotations

from pathlib import Path

import typer

from animat import runs
from animat.config import declared_options, no_animation_option, require
from animat.console import console, print_summary, progress
from animat.errors import ConfigError
from animat.pretrained import resolve
from animat.surrogate.options import CLIP_FRAMES, GenerateOptions, TrainConfig

CLIP_HELP = "Garment scenes: the character plays this DeepMimic clip (shared:NAME or a file) from its start"
app = typer.Typer(help="Subspace neural physics: a learned cloth surrogate (Holden et al. 2019).", no_args_is_help=True)


def _check_scene(scene: str) -> None:
    from animat.surrogate.scenes import SCENES

    require("scene", scene, choices=SCENES)


@app.command("generate")
@declared_options(
    GenerateOptions,
    "episodes",
    "frames",
    "seed",
    "workers",
    "backend",
    flags={"episodes": ("--episodes", "-e"), "frames": ("--frames", "-f"), "workers": ("--workers", "-w")},
)
def generate_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    options: dict = None,
    size: int | None = typer.Option(
        None,
        "--size",
        help="Cloth vertices per side (the garments: across or around). \\[default: the scene's: 51 sheet and flag, "
        "21 cape, 13 cape-character, 32 skirt-character]",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Dataset folder; an existing one is resumed."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file (\\[generate] and \\[scene] tables)."),
) -> None:
    """Simulate reference episodes into a dataset folder (one npz per episode; resumable)."""
    from animat.surrogate.generate import generate_options, run_generate
    from animat.surrogate.scenes import get_scene

    _check_scene(scene)
    values, scene_options = generate_options(config, size, **options)
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
@declared_options(
    TrainConfig,
    "data",
    "components",
    "epochs",
    "batches_per_epoch",
    "lr",
    "window",
    "batch",
    "test_episodes",
    "seed",
    "split_seed",
    flags={"data": ("--data", "-d"), "components": ("--components", "-k")},
)
def train_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    options: dict = None,
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="TOML file (\\[train] table)."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue this training run from checkpoints/last/ (only --epochs may change)."
    ),
) -> None:
    """Fit PCA + alpha/beta and train the residual network through rollouts."""
    from animat.surrogate.train import train

    _check_scene(scene)
    if "data" in options:  # the folder as a path writes it ('data/' and './data' are 'data')
        options["data"] = str(Path(options["data"]))
    if resume is None:  # a missing or foreign dataset fails here, in one line, before the run directory exists
        cfg = _new_training(scene, config, options)
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


def _new_training(scene: str, config: Path | None, options: dict) -> TrainConfig:
    """A new training run's options, its dataset given (``--data`` or the config's) and of ``scene``."""
    from animat.surrogate.data import check_dataset

    cfg = TrainConfig.build(config, **options)
    if not cfg.data:
        raise ConfigError("give the dataset folder with --data (or 'data' in the [train] table)")
    check_dataset(cfg.data, scene)
    return cfg


@app.command("evaluate")
def evaluate_cmd(
    ctx: typer.Context,
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    model: Path = typer.Option(..., "--model", "-m", help="Run directory of 'surrogate train', or pretrained:NAME."),
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
        help="Still air: seconds alone after the objects stop, from 30 held-out states (0: skip).",
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
    clip: str | None = typer.Option(None, "--clip", help=f"{CLIP_HELP}: the surrogate against the reference on it."),
    clip_frames: int = typer.Option(
        CLIP_FRAMES, "--frames", "-f", help="With --clip: frames to play (600: 10 s at 60 fps)."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Held-out rollout error (% of cloth size) of surrogate, alpha/beta-only and PCA floor; speed."""
    from animat.surrogate.evaluate import check_inputs, check_options, evaluate

    model = resolve(model)  # a run directory, or pretrained:NAME
    _check_scene(scene)
    _check_evaluate_mode(ctx, clip is not None)
    if clip is not None:
        _evaluate_clip(scene, model, clip, clip_frames, video and not no_animation, out)
        return
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


#: evaluate's options of the held-out episodes, and the one of --clip: each mode refuses the other's
HELD_OUT_OPTIONS = (
    "data",
    "horizon",
    "stride",
    "stability_frames",
    "settle_frames",
    "rest_seconds",
    "reference_frames",
)


def _check_evaluate_mode(ctx: typer.Context, with_clip: bool) -> None:
    """A ConfigError (one line) for an option of the other mode given on the command line: the held-out episodes'
    options with ``--clip``, ``--frames`` without it."""
    given = {k for k in ctx.params if getattr(ctx.get_parameter_source(k), "name", "") == "COMMANDLINE"}
    other = sorted(given & set(HELD_OUT_OPTIONS)) if with_clip else sorted(given & {"clip_frames"})
    if other:
        flags = ", ".join("--frames" if k == "clip_frames" else "--" + k.replace("_", "-") for k in other)
        mode = "--clip plays a clip; it takes no held-out episode option" if with_clip else "--frames needs --clip"
        raise ConfigError(f"{mode} (given: {flags})")


def _evaluate_clip(scene: str, model: Path, clip: str, frames: int, video: bool, out: Path | None) -> None:
    """``evaluate --clip``: the inputs checked before the run directory is made, then
    :func:`animat.surrogate.character_clip.evaluate_clip`."""
    from animat.surrogate.character_clip import check_clip_inputs, evaluate_clip

    check_clip_inputs(model, scene, clip, frames)
    run_dir = runs.new_run_dir("surrogate", "evaluate", out)
    console.print(f"surrogate evaluate {scene} --clip {clip}: {frames} frames, reference, then surrogate; {run_dir}")
    print_summary(evaluate_clip(model, run_dir, scene, clip, frames=frames, video=video), run_dir)


@app.command("play")
def play_cmd(
    scene: str = typer.Argument(..., help="Scene: sheet | flag | cape | cape-character | skirt-character."),
    model: Path = typer.Option(..., "--model", "-m", help="Run directory of 'surrogate train', or pretrained:NAME."),
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
    clip: str | None = typer.Option(None, "--clip", help=f"{CLIP_HELP}, instead of a --path."),
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

    model = resolve(model)  # a run directory, or pretrained:NAME
    _check_scene(scene)
    _check_play_clip(scene, clip, path, interactive)
    if interactive:
        play.need_display()
    require("--fps", fps, gt=0, le=60)
    loaded = play.load_model(model, scene, backend)
    if interactive:
        play.interactive(loaded)
        return
    Y, character = _play_drive(loaded.runtime.scene, frames, path, seed, clip)
    video = video and not no_animation
    run_dir = runs.new_run_dir("surrogate", "play", out)
    request = {"model": str(model), "path": path if clip is None else "clip", "seed": seed}
    request.update({"clip": clip} if clip is not None else {})
    runs.atomic_write_json(
        run_dir / "config.json",
        {"scene": scene, **request, "frames": len(Y), "backend": backend, "fps": fps, "video": video},
    )
    summary = _play_with_progress(loaded, Y, run_dir, fps, video, request, character)
    print_summary(summary, run_dir)


def _check_play_clip(scene: str, clip: str | None, path: str, interactive: bool) -> None:
    """ConfigError for a --clip of ``play`` on a scene other than the garments, or with --path or --interactive, and
    for --interactive on a garment scene (its keys move the sheet's sphere, the flag's wind, the cape's torso)."""
    from animat.surrogate.garment import GARMENT_SCENES

    if interactive and scene in GARMENT_SCENES:
        raise ConfigError(f"--interactive has no controls for the {scene!r} scene's character; use --clip or --path")
    if clip is not None:
        from animat.surrogate.character_clip import check_garment_scene

        check_garment_scene(scene)
        if path != "random" or interactive:
            raise ConfigError("--clip is the character's path: give it without --path and --interactive")


def _play_drive(scene, frames: int | None, path: str, seed: int, clip: str | None):
    """``(Y (frames, y_dim), character path rows (frames, 77) or None)`` of a play: a garment scene's character on
    ``clip`` or its random chain of clips (``path`` random), else :func:`animat.surrogate.play.external_path`;
    ConfigError (ClipError) for a clip that does not load."""
    from animat.surrogate import play
    from animat.surrogate.character_clip import character_drive
    from animat.surrogate.garment import GARMENT_SCENES

    if scene.name not in GARMENT_SCENES or path != "random":
        return play.external_path(scene, frames, path, seed), None
    require("--frames", frames, gt=0)
    require("--seed", seed, ge=0)
    motion = None
    if clip is not None:
        from animat.character.clip import load_clip, resolve_clip

        motion = load_clip(resolve_clip(clip))
    return character_drive(scene, CLIP_FRAMES if frames is None else int(frames), clip=motion, seed=seed)


def _play_with_progress(loaded, Y, run_dir: Path, fps: float, video: bool, request: dict, character=None) -> dict:
    """:func:`animat.surrogate.play.play` of the external path ``Y`` (frames, y_dim) under progress bars of its
    frames and (``video``) of the video's frames, every (scene fps / ``fps``)-th drawn; ``request``: the model, path
    and seed it records. The summary."""
    from animat.surrogate import play

    every = max(1, int(round(loaded.runtime.scene.fps / fps)))
    with progress() as bar:
        frames_task = bar.add_task("frames", total=len(Y))
        draw_task = bar.add_task("video", total=len(range(0, len(Y), every)) if video else 0, visible=video)
        return play.play(
            loaded,
            Y,
            run_dir,
            every=every,
            video_fps=loaded.runtime.scene.fps / every,
            video=video,
            on_frame=lambda t: bar.update(frames_task, completed=t + 1),
            on_draw=lambda i: bar.update(draw_task, completed=i + 1),
            info={**request, "seed": request["seed"] if request["path"] == "random" else None},
            character=character,
        )


@app.command("divergence")
@declared_options(TrainConfig, "components", flags={"components": ("--components", "-k")})
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
    options: dict = None,
    workers: int = typer.Option(1, "--workers", "-w", help="Episodes simulated in this many processes."),
    clip: str | None = typer.Option(
        None,
        "--clip",
        help="A garment scene's character plays this DeepMimic clip (as in evaluate --clip): one episode of --frames "
        "(600 unless given), the perturbed run from frame 2 to its end; the summary's gap_mean_percent_of_size is the "
        "floor beside evaluate --clip's mean error.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Predictability floor: the gap between two reference runs whose external paths differ by noise of std --perturb,
    or whose state restarts from what a surrogate starts from (--restart)."""
    request = dict(clip=clip, episodes=episodes, frames=frames, perturb=perturb, seed=seed, horizon=horizon)
    request.update(stride=stride, noise=noise, restart=restart)
    sc, request, pca, ids = _divergence_inputs(scene, config, model, options.get("components"), request, workers)
    run_dir = runs.new_run_dir("surrogate", "divergence", out)
    summary = _divergence_run(run_dir, sc, request, pca, ids, workers, config=config, model=model)
    print_summary(summary, run_dir)


def _divergence_inputs(scene: str, config: Path | None, model: Path | None, components, request: dict, workers: int):
    """``(scene, request, pca, episode ids)`` of a divergence run, every input checked before its run directory
    exists: ``request`` (the command line's episodes, frames, perturb, seed and protocol) with the config's or the
    default frames, seed and perturbation, and at most the model's held-out episodes; the model's PCA (None without
    ``model``), truncated to ``components`` where given."""
    from animat.character.clip import load_clip, resolve_clip
    from animat.surrogate.character_clip import check_garment_scene, clip_path
    from animat.surrogate.divergence import check_inputs
    from animat.surrogate.generate import config_table

    _check_scene(scene)
    generate, r = config_table(config, "generate"), dict(request)
    if r["clip"] is not None:  # one episode on the clip, the curve from frame 2 alone (no segments)
        check_garment_scene(scene)
        r["episodes"], r["frames"] = 1, r["frames"] if r["frames"] is not None else CLIP_FRAMES
        r["horizon"] = r["frames"]
    r["frames"] = int(r["frames"] if r["frames"] is not None else generate.get("frames", 300))
    r["seed"] = int(r["seed"] if r["seed"] is not None else generate.get("seed", 0))
    r["perturb"] = float(r["perturb"] if r["perturb"] is not None else (1e-3 if r["restart"] == "none" else 0.0))
    pca = _restart_subspace(model, components)
    project = pca.round_trip if pca is not None else None
    keys = ("episodes", "frames", "perturb", "seed", "horizon", "stride", "noise", "restart")
    check_inputs(*(r[key] for key in keys), project, workers)
    sc, ids, r["episodes"] = _divergence_scene(scene, config, model, r["episodes"])
    r["paths"] = None if r["clip"] is None else [clip_path(sc, load_clip(resolve_clip(r["clip"])), r["frames"])]
    if pca is not None and pca.mean.shape[0] != 3 * sc.n_vertices:
        raise ConfigError(f"model {str(model)!r} has {pca.mean.shape[0] // 3} vertices, the scene {sc.n_vertices}")
    return sc, r, pca, ids


def _restart_subspace(model: Path | None, components: int | None):
    """The PCA of ``model`` (its ``pca.npz``; None without a model), truncated to ``components`` where given."""
    from animat.surrogate.subspace import PCA

    pca = PCA.load(model / "pca.npz") if model is not None else None
    if pca is not None and components is not None:
        require("--components", components, ge=1, le=pca.n_components)
        pca = pca.truncate(components)
    return pca


def _divergence_scene(scene: str, config: Path | None, model: Path | None, episodes: int):
    """``(scene, episode ids, episodes)`` of a divergence run: the scene of ``config``'s ``[scene]`` table, all
    episodes from the first; with ``model``, its held-out episodes (at most ``episodes``), in the scene it was
    trained on unless ``config`` says otherwise (a model of another scene is refused)."""
    from animat.surrogate.generate import config_table
    from animat.surrogate.options import load_run_config
    from animat.surrogate.scenes import get_scene, scene_from_dict

    ids, sc = None, get_scene(scene, **config_table(config, "scene"))
    if model is not None:
        trained = load_run_config(model, scene)
        ids = trained["test_episode_ids"]
        episodes = min(episodes, len(ids))
        if config is None:
            sc = scene_from_dict(trained["scene"])
    return sc, ids, episodes


def _divergence_run(run_dir: Path, sc, request: dict, pca, ids, workers: int, *, config, model) -> dict:
    """A divergence run in ``run_dir``: its ``config.json``, :func:`animat.surrogate.divergence.divergence` of
    ``request`` under a progress bar of its reference runs, then its metrics, summary and plot. The summary."""
    from animat.surrogate.divergence import divergence, runs_per_episode, write_run

    k = pca.n_components if pca is not None else None
    record = {"config": str(config) if config else None, "model": str(model) if model else None, "components": k}
    kept = {k: v for k, v in request.items() if k != "paths"}
    runs.atomic_write_json(run_dir / "config.json", {"scene": sc.to_dict(), **kept, **record})
    episodes, frames, perturb = request["episodes"], request["frames"], request["perturb"]
    with progress("reference runs") as bar:
        task = bar.add_task(
            "divergence", total=episodes * runs_per_episode(frames, request["horizon"], request["stride"])
        )
        summary, gaps = divergence(
            sc,
            episodes,
            frames,
            perturb,
            seed=request["seed"],
            horizon=request["horizon"],
            stride=request["stride"],
            noise=request["noise"],
            restart=request["restart"],
            project=pca.round_trip if pca is not None else None,
            components=k,
            episode_ids=ids,
            on_run=lambda: bar.advance(task),
            workers=workers,
            paths=request["paths"],
        )
    if request["clip"] is not None:
        summary["clip"] = request["clip"]
    write_run(run_dir, summary, gaps, sc.fps)
    return summary
