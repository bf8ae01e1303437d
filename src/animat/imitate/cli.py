"""``animat imitate check|make-demo-clip``."""

from __future__ import annotations

from pathlib import Path

import typer

from animat.config import declared_options, no_animation_option, require
from animat.console import RUN_DIR_KEY, console, print_json, print_summary, progress
from animat.errors import ConfigError
from animat.imitate.options import TrainConfig

app = typer.Typer(
    help="A humanoid that imitates motion clips (DeepMimic-style): clips, character, reward.", no_args_is_help=True
)


@app.command("check")
def check_cmd(
    clip: str = typer.Argument(
        ...,
        help="Motion clip in DeepMimic's format (JSON: Loop, Frames), or shared:NAME for shared/data/deepmimic/NAME.",
    ),
    reward: str = typer.Option("paper", "--reward", help="Reward preset: paper | deepmimic-code."),
) -> None:
    """Print a clip's facts and its kinematic replay reward on the humanoid, as JSON."""
    from animat.character.clip import load_clip, resolve_clip
    from animat.imitate.check import check_clip
    from animat.imitate.reward import preset

    cfg = preset(reward)
    print_json(check_clip(load_clip(resolve_clip(clip)), cfg))


@app.command("make-demo-clip")
def make_demo_clip_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="File to write (DeepMimic format)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write the project's own demo walk cycle (made in code) as a DeepMimic clip."""
    from animat.character.clip import write_clip
    from animat.character.demo import demo_clip

    if out.is_dir():
        raise ConfigError(f"{str(out)!r} is a folder; give a file name")
    if out.exists() and not force:
        raise ConfigError(f"{str(out)!r} exists; pass --force to overwrite it")
    clip = demo_clip()
    write_clip(clip, out)
    console.print(
        f"wrote {out} ({clip.num_frames} frames, {clip.cycle_seconds:g} s cycle, loop {clip.loop})",
        soft_wrap=True,
        markup=False,
    )


def _need_rl() -> None:
    import importlib.util

    missing = [m for m in ("torch", "stable_baselines3") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"training needs {' and '.join(missing)}: install the rl extra (pip install 'animat[rl]')")


TRAIN_KEYS = (
    "timesteps",
    "initial_eval_return_mean",
    "final_eval_return_mean",
    "initial_eval_len_mean",
    "final_eval_len_mean",
    "final_eval_r_i_per_step_mean",
    "first_iteration_ep_return_mean",
    "last_iteration_ep_return_mean",
    "first_iteration_ep_len_mean",
    "last_iteration_ep_len_mean",
)
RESUME_MAY_CHANGE = {  # the options a resumed run may change (option -> its flag)
    "timesteps": "--timesteps",
    "max_minutes": "--max-minutes",
    "backend": "--backend",
    "address": "--address",
}


@app.command("train")
@declared_options(
    TrainConfig,
    "multi_clip",
    "timesteps",
    "envs",
    "vec_env",
    "net_arch",
    "max_minutes",
    "hold_seconds",
    "seed",
    "goal",
    "backend",
    "address",
    flags={"timesteps": ("--timesteps", "-n"), "envs": ("--envs", "-k")},
    helps={
        "net_arch": "Hidden layers of actor and critic, e.g. '1024,512'",
        "goal": "Add the task goal r_G (target heading and speed; goal_* options)",
    },
)
def train_cmd(
    clip: str | None = typer.Argument(
        None,
        help="Motion clip (DeepMimic format), or shared:NAME for shared/data/deepmimic/NAME. "
        "\\[default: the demo clip]",
    ),
    clips: str | None = typer.Option(
        None,
        "--clips",
        help="Several clips for one policy, comma-separated (files or shared:NAME), instead of CLIP; each a skill "
        "named after its file.",
    ),
    options: dict = None,
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="TOML file of training options (see animat.imitate.options.TrainConfig)."
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        help="Continue the run in this directory (policy, optimiser, step count); --timesteps is the new total.",
    ),
    init_policy: str | None = typer.Option(
        None,
        "--from",
        help="Start from this policy (a run directory, or pretrained:NAME, e.g. pretrained:walk): "
        "its weights and observation normaliser, a fresh optimiser; the step count starts at 0.",
    ),
) -> None:
    """Train a PPO policy to imitate a clip; writes a run directory (metrics, curve, safe policy files)."""
    from animat import runs

    clips_given = None if clips is None else [c.strip() for c in clips.split(",") if c.strip()]
    options = {"clip": clip, "clips": clips_given, **options, "init_policy": init_policy}
    if resume is None:  # a bad config, clip or --from fails here, in one line, before the run directory exists
        _check_new_run(config, options)
    _need_rl()
    cfg, run_dir = runs.start_or_resume(
        "imitate", TrainConfig, resume=resume, config=config, out=out, options=options, may_change=RESUME_MAY_CHANGE
    )
    state = None
    if resume is not None:  # so does a run without a (valid) training state, or one at its --timesteps already
        from animat.imitate.resume import resumable_state

        state = resumable_state(run_dir, cfg.timesteps)
        cfg.load_clip()
    _announce(cfg, run_dir, int(state[1]["num_timesteps"]) if state else 0)
    summary = _train_with_progress(cfg, run_dir, resume is not None, state)
    print_summary(summary, run_dir, TRAIN_KEYS, where="plots/learning_curve.png, policy.npz/.json, metrics.csv")


def _check_new_run(config: Path | None, options: dict) -> None:
    """A new run's options, every clip and its ``--from`` policy checked: one line (ConfigError, ClipError) for
    the first bad one."""
    checked = TrainConfig.build(config, **options)
    checked.load_clip()  # every clip, with clips
    if checked.init_policy:
        from animat.imitate.warm_start import init_source

        init_source(checked.init_policy)


def _announce(cfg: TrainConfig, run_dir: Path, done: int) -> None:
    """The run's one line (PPO, steps, environments, network, clip, run directory), then notes: ``--timesteps``
    rounded up to whole iterations after the ``done`` steps, SB3 logs without tensorboard."""
    from animat.imitate.train import tensorboard_available

    where = f"ray at {cfg.address or 'a local instance'}" if cfg.backend == "ray" else cfg.vec_env
    console.print(
        f"imitate train: PPO, {cfg.timesteps} steps, {cfg.envs} envs ({where}), net {cfg.net_arch}, "
        f"clip {cfg.clip_label}, run dir {run_dir}"
    )
    if note := cfg.rounding_note(done):
        console.print(note, markup=False)
    if not tensorboard_available():
        console.print("tensorboard not installed: SB3 logs go to logs/progress.csv only")


def _train_with_progress(cfg: TrainConfig, run_dir: Path, resume: bool, state) -> dict:
    """:func:`animat.imitate.train.train` under a progress bar (steps; mean return, length, r_I a step, steps/s of
    each iteration), then the time it took; an interruption leaves the resume command's hint. The summary."""
    import time

    from animat import interrupt
    from animat.imitate.train import train

    start = time.perf_counter()
    with progress(
        "steps",
        "return {task.fields[ret]}  len {task.fields[len]}  r_I/step {task.fields[rps]}  {task.fields[fps]} steps/s",
    ) as bar:
        done = int(state[1]["num_timesteps"]) if state else 0
        task = bar.add_task("train", total=cfg.steps_run(done), ret="-", len="-", rps="-", fps="-")

        def on_iteration(row: dict) -> None:
            f = lambda v, d=3: "-" if v != v else f"{v:.{d}f}"  # noqa: E731 (NaN before the first episode ends)
            bar.update(
                task,
                completed=row["timesteps"],
                ret=f(row["ep_return_mean"], 2),
                len=f(row["ep_len_mean"], 1),
                rps=f(row["r_i_per_step_mean"]),
                fps=f"{row['fps']:.0f}",
            )

        try:
            summary = train(cfg, run_dir, resume=resume, state=state, on_iteration=on_iteration)
        except BaseException:  # interrupted, or failed after a signal (a worker it stopped): the resume hint
            interrupt.resume_with(f"animat imitate train --resume {run_dir} --timesteps {cfg.timesteps}")
            raise
    console.print(f"trained in {time.perf_counter() - start:.1f} s")
    return summary


@app.command("evaluate")
def evaluate_cmd(
    run_dir: str = typer.Argument(
        ...,
        help="Run directory written by `animat imitate train`, or pretrained:NAME for a policy shipped with animat.",
    ),
    episodes: int = typer.Option(
        20, "--episodes", "-e", help="Episodes, each from the clip's state at a random phase."
    ),
    seconds: float = typer.Option(
        10.0,
        "--seconds",
        "-s",
        help="Episode length (s); an episode ends early on a fall (or the run's pose termination).",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Seed of the start phases (episode i: seed × episodes + i, so other seeds give other starts).",
    ),
    clip: str | None = typer.Option(
        None, "--clip", help="Clip to imitate instead of the run's (a file, or shared:NAME)."
    ),
    hold: float | None = typer.Option(
        None,
        "--hold-seconds",
        help="One-shot clips: s of the last pose held after the clip's end (0: the clip alone). Default: the run's.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
) -> None:
    """Evaluate the deterministic policy from reference-state starts: one JSON line (mean_imitation_reward per step with
    the paper's weights, full_episode_fraction, mean_episode_seconds, episodes, results: the run directory);
    summary.json and episodes.csv in its run directory."""
    from animat import runs
    from animat.imitate.evaluate import evaluate, load_policy_run

    require("--episodes", episodes, ge=1)
    require("--seconds", seconds, gt=0)
    if hold is not None:
        require("--hold-seconds", hold, ge=0)
    load_policy_run(run_dir, clip)[0].load_clip()  # a bad run or clip fails here, before the output directory exists
    target = runs.new_run_dir("imitate", "evaluate", out)
    record = {"system": "imitate", "verb": "evaluate", "source": run_dir, "clip": clip}
    options = {"episodes": episodes, "seconds": seconds, "seed": seed, "hold_seconds": hold}
    runs.atomic_write_json(target / "config.json", {**record, **options})
    summary = evaluate(run_dir, target, clip=clip, **options)
    print_json({**summary, RUN_DIR_KEY: str(target)}, indent=None)


@app.command("play")
def play_cmd(
    source: str = typer.Argument(
        ...,
        metavar="RUN_DIR",
        help="Run directory written by `animat imitate train` (reads policy.npz/.json, no pickles), "
        "or pretrained:NAME for a policy shipped with animat.",
    ),
    seconds: float = typer.Option(
        10.0, "--seconds", "-s", help="Episode length (s); it ends early if the character falls."
    ),
    fps: float = typer.Option(15.0, "--fps", help="Frames per second of the GIF (at most 30)."),
    renderer: str = typer.Option(
        "auto", "--renderer", help="auto (MuJoCo offscreen where OpenGL works, else matplotlib) | mujoco | matplotlib."
    ),
    no_animation: bool = no_animation_option(),
    garment: str | None = typer.Option(
        None,
        "--garment",
        help="Wear a learned garment live: a run directory of `animat surrogate train cape-character` (or "
        "skirt-character), or pretrained:NAME.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
) -> None:
    """Run a trained policy from time 0 of its clip: GIF beside the reference (ghost), config.json, trajectory.npz,
    the reward plot, summary.json, report.html; with --garment the character wears it, frame by frame."""
    from animat import pretrained, runs
    from animat.character.wear import open_garment
    from animat.imitate.play import RENDERERS, load_run, play

    run_dir = pretrained.resolve(source)
    require("--seconds", seconds, gt=0)
    require("--fps", fps, gt=0, le=30)
    require("--renderer", renderer, choices=RENDERERS)
    load_run(run_dir)  # fail on a bad run directory before creating the output one
    if renderer == "mujoco":
        from animat.viz.mujoco_render import gl_available

        if not gl_available():
            raise ConfigError(
                "--renderer mujoco: no offscreen OpenGL context (tried MUJOCO_GL, egl, osmesa); use --renderer "
                "matplotlib"
            )
    worn = None if garment is None else open_garment(garment)  # refused before the output directory is made
    target = runs.new_run_dir("imitate", "play", out)
    record = {"system": "imitate", "verb": "play", "source": str(source), "seconds": seconds, "fps": fps}
    record.update({"renderer": renderer, "animation": not no_animation, **({"garment": garment} if garment else {})})
    runs.atomic_write_json(target / "config.json", record)
    summary = play(run_dir, seconds, target, fps=fps, renderer=renderer, render=not no_animation, garment=worn)
    print_summary(summary, target)


@app.command("steer")
def steer_cmd(
    source: str = typer.Argument(
        ...,
        metavar="SOURCE",
        help="Run directory of a skill-selector policy (`animat imitate train` with clips and multi_clip = "
        "'selector'), or pretrained:NAME.",
    ),
    commands: str | None = typer.Option(
        None,
        "--commands",
        help="Script of skill:seconds, e.g. 'walk:4,jog:3,run:3,walk:2' (the policy's skill names).",
    ),
    interactive: bool = typer.Option(
        False,
        "--interactive",
        help="Steer from the keyboard in this terminal: the first letter or the number of a skill (W/J/R, 1/2/3), "
        "left/right arrows to turn, q to quit.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
) -> None:
    """Switch a skill-selector policy between its skills at run time: writes trajectory.npz (t, position, command),
    summary.json (per segment: r_I against the commanded clip after a 1 s transition, forward speed beside the
    clip's, falls), plots/steer.png and report.html."""
    from animat import runs
    from animat.console import phase
    from animat.imitate.steer_run import play_keys, play_script, script_text, steer_request, write_steer_run

    cfg, policy, run_dir, script = steer_request(source, commands, interactive)
    target = runs.new_run_dir("imitate", "steer", out)
    record = {"system": "imitate", "verb": "steer", "source": source, "commands": commands}
    runs.atomic_write_json(target / "config.json", {**record, "interactive": interactive})
    if interactive:
        flight = play_keys(cfg, policy)
    else:
        with phase(f"steering through {sum(c.seconds for c in script):g} s of commands"):
            flight = play_script(cfg, policy, script)
    summary = write_steer_run(target, flight, cfg, run_dir, commands or script_text(flight, cfg.skills))
    print_summary(
        summary,
        target,
        ("script", "seconds", "mean_segment_r_imitation", "falls"),
        where="plots/steer.png, trajectory.npz, summary.json (segments), report.html",
    )


@app.command("score-steering")
def score_steering_cmd(
    source: str = typer.Argument(
        ..., metavar="SOURCE", help="Run directory of a skill-selector policy, or pretrained:NAME."
    ),
    scripts: int = typer.Option(30, "--scripts", "-n", help="Random 20 s command scripts (commands of 2-5 s)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the first script (script i: seed + i)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output directory (must not hold an earlier run)."),
) -> None:
    """A skill selector's rates on random command scripts: scripts without a fall, segments whose r_I (after a 1 s
    transition) is at least 0.6 and whose speed is within 25 % of the clip's; summary.json and segments.csv."""
    from animat import runs
    from animat.imitate.steer_run import selector_policy
    from animat.imitate.steer_scores import pass_rates

    require("--scripts", scripts, ge=1)
    require("--seed", seed, ge=0)
    cfg, policy, _ = selector_policy(source)  # checked before the output directory is made
    target = runs.new_run_dir("imitate", "score-steering", out)
    record = {"system": "imitate", "verb": "score-steering", "source": source, "scripts": scripts, "seed": seed}
    runs.atomic_write_json(target / "config.json", record)
    with progress("scripts") as bar:
        task = bar.add_task("score", total=scripts)
        summary, segments = pass_rates(
            cfg, policy, scripts, seed, on_script=lambda i: bar.update(task, completed=i + 1)
        )
    runs.atomic_write_csv(target / "segments.csv", segments, list(segments[0]))
    runs.atomic_write_json(target / "summary.json", {"source": source, **summary})
    print_summary(summary, target)
