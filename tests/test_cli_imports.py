"""Help and argument parsing load no heavy library: a command imports JAX, MuJoCo, torch or Ray only in
the verb that needs it (checked in a fresh interpreter, whose ``sys.modules`` is then listed)."""

import subprocess
import sys
from pathlib import Path

import pytest

import animat

HEAVY = ("jax", "torch", "mujoco", "ray", "stable_baselines3", "matplotlib")
RUN = """import sys
sys.argv = ["animat", *sys.argv[1:]]
from animat.cli import main
try:
    main()
except SystemExit:
    pass
print("MODULES", " ".join(sorted(sys.modules)))
"""


def _loaded(*args: str) -> tuple[str, set[str]]:
    """(stdout before the module list, top-level packages loaded) of ``animat ARGS`` in a new interpreter."""
    src = str(Path(animat.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
    )
    out, _, modules = done.stdout.rpartition("MODULES ")
    assert done.returncode == 0 and modules, done.stderr
    return out, {name.split(".")[0] for name in modules.split()}


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("swarm", "--help"),
        ("swarm", "run", "--help"),
        ("fly", "train", "--help"),
        ("imitate", "train", "--help"),
        ("surrogate", "train", "--help"),
        ("skier", "train", "--help"),
    ],
)
def test_help_loads_no_heavy_library(args):
    out, loaded = _loaded(*args)
    assert "Usage" in out
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_probe_lists_what_was_loaded():
    """The listing is the interpreter's real one: the CLI's own packages are in it."""
    _, loaded = _loaded("--help")
    assert {"animat", "typer", "rich", "numpy"} <= loaded
