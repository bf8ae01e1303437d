"""``report.html``: one page per run directory with its headline numbers, configuration, plots and a 3D replay.

The page opens from disk with no network: the scene's arrays are inlined (float32, base64), and so
is three.js, read from the npm package ``three`` that ``make setup`` installs into
``animat/viz/web/node_modules`` (``ANIMAT_THREE_DIR`` may name another copy of that package). Without
it the page is written all the same, saying how to get the replay. Plots are loaded from the run
directory beside the page (``plots/*.png``).

The replay comes from the run's own files (``trajectory.npz``, ``config.json``, ...) through the scene
builders a caller hands over (:class:`SceneBuilder`: each system's own, in ``<system>/report.py``; the
``animat report`` command takes them all from the registry, :mod:`animat.systems`), or from a
:class:`~animat.viz.scene.Scene` a verb hands over directly. This module knows no system.
"""

from __future__ import annotations

import base64
import html
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from animat import runs, strict_json
from animat.errors import RunDirError
from animat.viz.scene import Scene

WEB = Path(__file__).with_name("web")


@dataclass(frozen=True)
class SceneBuilder:
    """How one kind of run directory becomes its replay.

    ``name``: shown in the page's title (a system's or a preset's name); ``recognises(run_dir) -> bool``:
    is this one of my run directories?; ``build(run_dir, **context) -> Scene | None``: the replay from the
    directory's files, ``context`` holding what the verb that wrote it has in memory (model parameters, ...).
    A builder imports its system's heavy modules only inside ``build``."""

    name: str
    recognises: Callable[[Path], bool]
    build: Callable[..., Scene | None]


def three_dir() -> Path | None:
    """The npm package ``three`` (its folder) or None where it is not installed."""
    root = Path(os.environ.get("ANIMAT_THREE_DIR") or WEB / "node_modules" / "three")
    return root if (root / "build" / "three.module.min.js").is_file() else None


def module_files(three: Path) -> dict[str, Path]:
    """The JavaScript modules a page's 3D view imports, by the name it imports them as: three.js, its orbit
    controls (from the npm package folder ``three``) and ``animat/scene3d.js`` (the scene's decoder and builders)."""
    return {
        "three": three / "build" / "three.module.min.js",
        "three/addons/controls/OrbitControls.js": three / "examples" / "jsm" / "controls" / "OrbitControls.js",
        "animat/scene3d.js": WEB / "scene3d.js",
    }


def _data_url(path: Path) -> str:
    return "data:text/javascript;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _script_json(obj: Any) -> str:
    """Strict JSON (NaN and infinities as null) safe inside <script>: no '</' can close the element early."""
    return strict_json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def _read_json(path: Path) -> Any:
    try:
        return runs.read_json(path) if path.is_file() else None
    except (OSError, ValueError):
        return None


def _format(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _table(summary: dict) -> str:
    rows = [
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_format(v))}</td></tr>"
        for k, v in summary.items()
        if isinstance(v, (int, float, str, bool)) or v is None
    ]
    return f"<table class='numbers'>{''.join(rows)}</table>" if rows else "<p>no summary.json</p>"


def build_scene(run_dir: Path, builders: Sequence[SceneBuilder] = (), **context: Any) -> tuple[Scene | None, str]:
    """The replay of ``run_dir`` from the first of ``builders`` that recognises it: ``(scene or None, its name or "")``.
    ``context`` passes what a verb has in memory (e.g. ``params``) to the builder."""
    for builder in builders:
        if builder.recognises(run_dir):
            return builder.build(run_dir, **context), builder.name
    return None, ""


def render_page(
    run_dir: Path, scene: Scene | None, system: str = "", why_none: str = "this run directory holds nothing to replay"
) -> str:
    """The HTML of the report of ``run_dir`` with ``scene`` as its replay (``why_none`` says why there is none)."""
    summary = _read_json(run_dir / "summary.json") or {}
    config = _read_json(run_dir / "config.json")
    plots = (
        sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "plots").glob("*.png"))
        if (run_dir / "plots").is_dir()
        else []
    )
    media = (
        sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "media").glob("*"))
        if (run_dir / "media").is_dir()
        else []
    )
    three = three_dir()
    template = (WEB / "page.html").read_text(encoding="utf-8")
    replay, notes = "", [f"no 3D replay: {why_none}"]
    if scene is not None:
        desc, buffers = scene.to_json()
        replay = (
            f"<script type='application/json' id='scene-json'>{_script_json(desc)}</script>\n"
            f"<script type='application/json' id='scene-buffers'>{_script_json(buffers)}</script>\n"
        )
        notes = desc["notes"]
        if three is None:
            notes = [
                "no 3D replay: three.js is not installed (run `make setup`, which runs `npm install` in "
                "src/animat/viz/web)"
            ] + notes
        else:
            imports = {"imports": {name: _data_url(path) for name, path in module_files(three).items()}}
            replay += (
                f"<script type='importmap'>{_script_json(imports)}</script>\n"
                f"<script type='module'>{(WEB / 'replay.js').read_text(encoding='utf-8')}</script>"
            )
    figures = "".join(
        f"<figure><img src='{html.escape(p)}' alt='{html.escape(p)}'><figcaption>{html.escape(p)}</figcaption></figure>"
        for p in plots
    )
    links = " ".join(f"<a href='{html.escape(m)}'>{html.escape(m)}</a>" for m in media)
    nested = {k: v for k, v in summary.items() if isinstance(v, (dict, list))}
    fills = {
        "TITLE": html.escape(run_dir.resolve().name),
        "SYSTEM": html.escape(system or "run"),
        "NUMBERS": _table(summary),
        "NESTED": f"<pre>{html.escape(strict_json.dumps(nested, indent=2, default=str))}</pre>" if nested else "",
        "CONFIG": "no config.json" if config is None else html.escape(strict_json.dumps(config, indent=2, default=str)),
        "PLOTS": figures or "<p>no plots</p>",
        "MEDIA": links or "none",
        "NOTES": "".join(f"<li>{html.escape(n)}</li>" for n in notes),
        "VIEWER_CLASS": "" if scene is not None and three is not None else "hidden",
        "REPLAY": replay,
    }
    for k, v in fills.items():
        template = template.replace(f"@@{k}@@", v)
    return template


def _check_trajectory(run_dir: Path) -> None:
    """A ``trajectory.npz`` that cannot be read (truncated, not an npz, a damaged member) is an error, in one line,
    before anything is written: a page that said "nothing to replay" would hide it."""
    path = run_dir / "trajectory.npz"
    if path.exists():
        runs.read_npz(path, what="trajectory", error=RunDirError)


def write_report(
    run_dir: str | os.PathLike, scene: Scene | None = None, builders: Sequence[SceneBuilder] = (), **context: Any
) -> Path:
    """Write ``run_dir/report.html`` (atomically) and return its path. Without ``scene`` the replay is built
    from the run directory's files by the first of ``builders`` that recognises them; ``context`` goes to that
    builder (see :func:`build_scene`). RunDirError (one line, nothing written) for a folder that is not a
    directory, is empty with no ``scene`` given, or holds a ``trajectory.npz`` that cannot be read."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{str(run_dir)!r} is not a directory; give a run directory")
    if scene is None and not any(run_dir.iterdir()):
        raise RunDirError(f"{str(run_dir)!r} is empty; give a run directory")
    system, why_none = "", "this run directory holds nothing to replay"
    if scene is None:
        _check_trajectory(run_dir)
        try:
            scene, system = build_scene(run_dir, builders, **context)
        except (
            Exception
        ) as exc:  # the run's numbers and plots matter more than its replay: the page is written all the same
            why_none = f"it could not be built from this run's files ({type(exc).__name__}: {exc})"
            warnings.warn(f"report.html of {run_dir} has no 3D replay: {why_none}", RuntimeWarning, stacklevel=2)
    return runs.atomic_write_text(run_dir / "report.html", render_page(run_dir, scene, system, why_none))
