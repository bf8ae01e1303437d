"""Import rules: no system package imports another; light modules do not load JAX."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import animat
from animat import systems

SYSTEMS = tuple(systems.names())
ROOT = Path(animat.__file__).parent


def _imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the file, at any depth (function-level ones too); ``from
    animat import fly`` counts as ``animat.fly``, relative imports are resolved against the file's
    package (``root``: the folder of the package ``animat``)."""
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_the_import_scan_sees_every_form():
    """The scan itself: absolute, from-package, relative and function-level imports."""
    import tempfile

    source = (
        "import animat.fly.model\nfrom animat import skier\ndef f():\n    from ..swarm import run\n    from . import "
        "tasks\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "animat" / "imitate" / "x.py"
        path.parent.mkdir(parents=True)
        path.write_text(source)
        found = [m for _, m in _imported_modules(path, Path(tmp) / "animat")]
    assert found == ["animat.fly.model", "animat.skier", "animat.swarm.run", "animat.imitate.tasks"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_no_system_package_imports_another(system):
    others = [s for s in SYSTEMS if s != system]
    bad = []
    for path in sorted((ROOT / system).rglob("*.py")):
        for line, module in _imported_modules(path):
            if any(module == f"animat.{o}" or module.startswith(f"animat.{o}.") for o in others):
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    assert bad == []


@pytest.mark.parametrize(
    "module",
    [
        "animat.skier.train",
        "animat.imitate.env",
        "animat.imitate.policy",
        "animat.checkpoint",
        "animat.parallel",
        "animat.quaternions",
    ],
)
def test_light_modules_load_neither_jax_nor_torch_nor_ray(module):
    code = f"import sys, {module}; print(sorted(m for m in ('jax', 'jaxlib', 'torch', 'ray') if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]", f"importing {module} loads {res.stdout.strip()}"


def test_every_import_of_an_animat_name_resolves():
    """Every ``from animat... import name`` in the package, function-level ones too (a lazy import of a
    removed module only fails when its branch runs), names a module or an attribute that exists."""
    import importlib

    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        for line, name in _imported_modules(path):
            if not name.startswith("animat."):
                continue
            module, _, attr = name.rpartition(".")
            try:
                importlib.import_module(name)
                continue
            except ModuleNotFoundError as exc:
                if exc.name != name:  # the module exists but imports something that does not
                    missing.append(f"{path.relative_to(ROOT)}:{line} {name} ({exc})")
                    continue
            try:
                if not hasattr(importlib.import_module(module), attr):
                    missing.append(f"{path.relative_to(ROOT)}:{line} {name}")
            except ModuleNotFoundError as exc:
                missing.append(f"{path.relative_to(ROOT)}:{line} {name} ({exc})")
    assert not missing, "\n".join(missing)
