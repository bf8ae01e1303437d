"""The registry (animat.systems, issue 46): the command line and ``animat report`` read it, and a new system is
one folder plus one registry line (acceptance 5: a toy system written here is drawn by ``animat report``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from animat import runs, systems
from animat.errors import AnimatError

TOY_REPORT = '''"""A toy system's report: a point that walks along x."""
from pathlib import Path

from animat.viz.report import SceneBuilder
from animat.viz.run_files import read_trajectory, trajectory_keys
from animat.viz.scene import Scene


def recognises(run_dir: Path) -> bool:
    return "toy_x" in trajectory_keys(run_dir)


def build(run_dir: Path, **_) -> Scene:
    traj = read_trajectory(run_dir, keys=("t", "toy_x"))
    pos = [[x, 0.0, 0.5] for x in traj["toy_x"]]
    scene = Scene(traj["t"], follow=pos, focus=2.0)
    scene.add_path("toy path", pos)
    return scene


BUILDERS = (SceneBuilder("toy", recognises, build),)
'''
TOY_CLI = (
    'import typer\n\napp = typer.Typer(help="a toy system")\n\n\n@app.command()\ndef run() -> None:\n    """Do '
    'nothing."""\n'
)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The package ``toy_system`` (cli.py, report.py) on sys.path and registered, for this test only."""
    package = tmp_path / "toy_system"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "report.py").write_text(TOY_REPORT)
    (package / "cli.py").write_text(TOY_CLI)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(systems, "SYSTEMS", list(systems.SYSTEMS))
    systems.register(systems.System("toy", "toy_system.cli:app", "toy_system.report"))
    yield
    for name in [m for m in sys.modules if m.startswith("toy_system")]:
        del sys.modules[name]


def test_the_command_line_has_a_group_for_every_registered_system(animat_cli):
    code, out, _ = animat_cli("--help")
    assert code == 0 and all(name in out for name in systems.names())
    assert systems.names() == ["fly", "skier", "swarm", "surrogate", "imitate"]


def test_a_registered_toy_system_is_drawn_by_animat_report(toy, tmp_path, animat_cli):
    run = tmp_path / "toy-run"
    run.mkdir()
    runs.atomic_save_npz(run / "trajectory.npz", t=np.arange(5) * 0.1, toy_x=np.linspace(0, 1, 5))
    runs.atomic_write_json(run / "summary.json", {"distance_m": 1.0})
    code, _, err = animat_cli("report", str(run))
    assert code == 0, err
    page = (run / "report.html").read_text()
    assert "animat toy" in page and "toy path" in page and "scene-json" in page
    assert systems.command_group(systems.get("toy")).info.help == "a toy system"


def test_unknown_and_repeated_systems_are_one_line_errors(toy):
    with pytest.raises(AnimatError, match="unknown system 'nope'; known: fly, skier") as err:
        systems.get("nope")
    assert "\n" not in str(err.value)
    with pytest.raises(AnimatError, match="registered already"):
        systems.register(systems.System("toy", "x:app", "x"))


def test_a_run_no_builder_recognises_gets_a_page_without_replay(tmp_path, animat_cli):
    runs.atomic_write_json(tmp_path / "summary.json", {"n": 1})
    code, _, err = animat_cli("report", str(tmp_path))
    assert code == 0, err
    assert "holds nothing to replay" in (tmp_path / "report.html").read_text()
