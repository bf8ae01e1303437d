"""``animat <system> <verb>``: the command line. Thin: parse, call, report.

Exit status: 0 ok, 2 bad input (one-line error), 1 internal failure, 130 interrupted.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from animat import interrupt, jax_cache, systems
from animat.character import wear
from animat.errors import AnimatError, CheckpointWarning

app = typer.Typer(
    help="animat: simulate a body, evolve or learn how it moves.", no_args_is_help=True, add_completion=False
)
for _system in systems.SYSTEMS:
    app.add_typer(systems.command_group(_system), name=_system.name)
wear.set_opener(systems.open_garment)  # --garment: a system's garment worn by another's character


def _print_version(value: bool) -> None:
    if value:
        from animat import __version__

        print(f"animat {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    json_output: bool = typer.Option(
        False,
        "--json",
        help="Machine output: each verb's summary as one JSON document on stdout; progress and notes go to stderr.",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print animat's version and exit."
    ),
) -> None:
    """animat: simulate a body, evolve or learn how it moves."""
    from animat.console import use_json

    use_json(json_output)


err = Console(stderr=True)


@app.command("report")
def report_cmd(
    run_dir: Path = typer.Argument(..., help="Run directory (any system's); runs made before reports existed too."),
) -> None:
    """Write report.html into a run directory: headline numbers, configuration, plots and a 3D replay."""
    from animat.viz.report import write_report

    written = write_report(run_dir, builders=systems.scene_builders())
    Console().print(f"report: [bold]{escape(str(written))}[/]", soft_wrap=True)


@app.command("info")
def info_cmd(
    run_dir: Path = typer.Argument(..., help="Run directory (any system's verb; runs made before this command too)."),
) -> None:
    """Say what a run directory is: system, verb, preset, finished or interrupted, progress, headline figures."""
    from animat.console import print_summary
    from animat.info import describe

    print_summary(describe(run_dir, systems.run_kinds()), run_dir)


@app.command("view")
def view_cmd(
    run_dir: Path = typer.Argument(
        ..., help="Run directory to serve (its report.html is written first if it has none)."
    ),
    port: int = typer.Option(8000, "--port", help="Port (0: any free one)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on; anything but this machine's own gets a warning."
    ),
    browser: bool = typer.Option(True, "--browser/--no-browser", help="Open a browser where there is a display."),
) -> None:
    """Serve a run directory on localhost and print its address; only files inside it are served."""
    from animat.viz.report import write_report
    from animat.viz.serve import serve

    if run_dir.is_dir() and not (run_dir / "report.html").is_file():
        write_report(run_dir, builders=systems.scene_builders())
    serve(
        run_dir,
        host=host,
        port=port,
        open_browser=browser,
        say=lambda line: Console().print(escape(line), highlight=False, soft_wrap=True),
    )


@app.command("play")
def play_cmd(
    system: str = typer.Argument(..., help="System to play: fly (more where the registry names a live session)."),
    source: str = typer.Argument(..., help="What to play, e.g. pretrained:paper for the fly."),
    agents: int | None = typer.Option(None, "--agents", "-n", help="Agents of a flock."),
    seed: int = typer.Option(0, "--seed", help="Seed of the start state."),
    port: int = typer.Option(8765, "--port", help="Port (0: any free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Loopback address to listen on (nothing else is allowed)."),
    browser: bool = typer.Option(True, "--browser/--no-browser", help="Open a browser where there is a display."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run directory (must not hold an earlier run)."),
) -> None:
    """Steer a system live from a web page on this machine (keys, mouse, a HUD); writes its run directory at the end."""
    from animat.play.run import play

    play(
        systems.live_session(system),
        source,
        {"agents": agents, "seed": seed},
        host=host,
        port=port,
        out=out,
        open_browser=browser,
        say=lambda line: Console().print(escape(line), highlight=False, soft_wrap=True),
    )


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings meant for the user (a damaged checkpoint passed over) as one line; others as Python shows them."""
    if issubclass(category, CheckpointWarning):
        err.print(f"[bold yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def _usage_message(exc) -> str:
    """click's message for a usage error; for ``--json`` given after the system or verb (an option of the root
    command only), the command line that works instead."""
    if getattr(exc, "option_name", None) == "--json":
        rest = " ".join(a for a in sys.argv[1:] if a != "--json")
        return f"--json goes before the system: animat --json {rest}"
    return exc.format_message()


def main() -> None:
    jax_cache.configure()
    with interrupt.handled():
        _main()


def _main() -> None:
    """The command line under :func:`animat.interrupt.handled`: SIGINT/SIGTERM end it with exit 130."""
    say = lambda line: err.print(escape(line), highlight=False, soft_wrap=True)  # noqa: E731
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = app(standalone_mode=False)
        # Ctrl-C: typer turns KeyboardInterrupt into Exit(130), which standalone_mode=False returns, not raises;
        # a signal whose KeyboardInterrupt was lost (animat.interrupt) still ends the command with 130
        if code == 130 or interrupt.received():
            if code != 130:  # the command finished all the same: nothing to resume
                interrupt.resume_with(None)
            interrupt.leave(say)
    except AnimatError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except MemoryError:
        err.print(
            "[bold red]error:[/] out of memory; is a size or duration far too large?", highlight=False, soft_wrap=True
        )
        sys.exit(1)
    except KeyboardInterrupt:
        interrupt.leave(say)
    except SystemExit:
        if interrupt.received():  # click's silent exit 1 on a broken pipe: one to a worker the signal stopped too
            interrupt.leave(say)
        raise
    except Exception as exc:
        # click's Abort (Ctrl-C at a prompt), or a failure that followed a signal (a worker it stopped too)
        if type(exc).__name__ == "Abort" or interrupt.received():
            interrupt.leave(say)
        # click's usage errors (typer ships its own copy of click, so match by shape, not class)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            err.print(f"[bold red]error:[/] {escape(_usage_message(exc))}", highlight=False, soft_wrap=True)
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
