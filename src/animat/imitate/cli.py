"""``animat imitate check|make-demo-clip``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from animat.errors import ConfigError

app = typer.Typer(help="A humanoid that imitates motion clips (DeepMimic-style): clips, character, reward.", no_args_is_help=True)


@app.command("check")
def check_cmd(
    clip: Path = typer.Argument(..., help="Motion clip in DeepMimic's format (JSON: Loop, Frames)."),
    reward: str = typer.Option("paper", "--reward", help="Reward preset: paper | deepmimic-code."),
) -> None:
    """Print a clip's facts and its kinematic replay reward on the humanoid, as JSON."""
    from animat.imitate.check import check_clip
    from animat.imitate.clip import load_clip
    from animat.imitate.reward import preset

    cfg = preset(reward)
    print(json.dumps(check_clip(load_clip(clip), cfg), indent=2))


@app.command("make-demo-clip")
def make_demo_clip_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="File to write (DeepMimic format)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write the project's own demo walk cycle (made in code) as a DeepMimic clip."""
    from animat.imitate.clip import write_clip
    from animat.imitate.demo import demo_clip

    if out.is_dir():
        raise ConfigError(f"{str(out)!r} is a folder; give a file name")
    if out.exists() and not force:
        raise ConfigError(f"{str(out)!r} exists; pass --force to overwrite it")
    clip = demo_clip()
    write_clip(clip, out)
    print(f"wrote {out} ({clip.num_frames} frames, {clip.cycle_seconds:g} s cycle, loop {clip.loop})")
