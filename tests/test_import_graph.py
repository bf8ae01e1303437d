"""The import graph of ``src/animat`` read from the source (issue 46, acceptance 2): dependencies point down.

Edges are every ``import``/``from ... import`` at any depth of a module (function-level ones too) and every
module name given to ``importlib.import_module`` as a string literal (``"pkg.mod"`` or ``"pkg.mod:attr"``
registry strings too). Rules (ARCHITECTURE.md, ../shared/DESIGN.md):

- no import circle among animat's modules (a package's ``__init__`` counts as its own module);
- the shared layer (``viz``, ``evolve``, ``character``, ``pretrained`` and every top-level module) imports no
  system package, except the two entry points that read the registry by design: :mod:`animat.systems` (whose
  strings name the systems) and :mod:`animat.cli` (which builds the command line from it);
- no system imports another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import animat
from animat import systems

ROOT = Path(animat.__file__).parent
SHARED_PACKAGES = ("viz", "evolve", "character", "pretrained")
ENTRY_POINTS = ("animat.systems", "animat.cli")
DYNAMIC = "<an animat module named by an f-string>"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_names(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import of the file at any depth, and of every string literal given
    as first argument to a call of ``import_module`` (``"animat.fly.cli:app"`` counts as ``animat.fly.cli``)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, package)
            found += [(node.lineno, f"{base}.{alias.name}" if base else alias.name) for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value.split(":")[0]))
            elif (
                isinstance(arg, ast.JoinedStr)
                and arg.values
                and str(getattr(arg.values[0], "value", "")).startswith("animat")
            ):
                found.append((node.lineno, DYNAMIC))  # an animat module named at run time: no rule can see it
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("animat."):
            if ":" in node.value and node.value.replace(":", ".").replace("_", "").replace(".", "").isalnum():
                found.append((node.lineno, node.value.split(":")[0]))  # a registry string "module:attribute"
    return found


def dynamic_imports(root: Path = ROOT) -> list[str]:
    """``file:line`` of every ``import_module(f"animat...")``: the graph cannot follow them, so none may exist."""
    return [
        f"{p.relative_to(root.parent)}:{line}"
        for p in sorted(root.rglob("*.py"))
        for line, n in imported_names(p, root)
        if n == DYNAMIC
    ]


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the animat modules it imports (a ``from pkg import name`` of a non-module name counts as ``pkg``)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        for _, name in imported_names(path, root):
            target = name if name in files else name.rpartition(".")[0]
            if target in files and target != mod:
                edges[mod].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def system_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in systems.names() else None


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Imports of a system from the shared layer, and of one system from another."""
    bad = []
    for mod, targets in sorted(edges.items()):
        own = system_of(mod)
        for target in sorted(targets):
            other = system_of(target)
            if other is None or other == own or mod in ENTRY_POINTS:
                continue
            bad.append(f"{mod} imports {target}" + (" (another system)" if own else " (shared layer)"))
    return bad


def test_the_graph_sees_every_form_of_import(tmp_path):
    pkg = tmp_path / "animat"
    (pkg / "viz").mkdir(parents=True)
    (pkg / "fly").mkdir()
    for f in ("__init__.py", "viz/__init__.py", "fly/__init__.py", "fly/model.py", "fly/cli.py"):
        (pkg / f).write_text("")
    (pkg / "viz" / "report.py").write_text(
        "import importlib\n"
        "def f():\n    from ..fly import model\n"
        "def g():\n    importlib.import_module('animat.fly.cli')\n"
        "TABLE = ['animat.fly.cli:app']\n"
        "def k(name):\n    importlib.import_module(f'animat.fly.{name}')\n"
    )
    (pkg / "fly" / "model.py").write_text("from animat.fly import cli\n")
    (pkg / "fly" / "cli.py").write_text("def h():\n    import animat.fly.model\n")
    edges = graph(pkg)
    assert edges["animat.viz.report"] == {"animat.fly.model", "animat.fly.cli"}
    assert cycles(edges) == [["animat.fly.cli", "animat.fly.model"]]
    assert violations(edges) == [
        "animat.viz.report imports animat.fly.cli (shared layer)",
        "animat.viz.report imports animat.fly.model (shared layer)",
    ]
    assert dynamic_imports(pkg) == ["animat/viz/report.py:8"]


def test_no_import_circle():
    assert cycles(graph()) == []


def test_the_shared_layer_imports_no_system_and_no_system_another():
    assert violations(graph()) == []
    assert dynamic_imports() == []


def test_the_shared_packages_are_where_the_rule_expects_them():
    assert (ROOT / "viz").is_dir() and (ROOT / "evolve").is_dir()
    assert set(systems.names()) <= {p.name for p in ROOT.iterdir() if p.is_dir()}


HEAVY = ("jax", "jaxlib", "torch", "stable_baselines3", "ray", "mujoco", "matplotlib")
HEAVY += ("numba", "gymnasium", "optax", "evosax", "imageio", "scipy", "PIL", "websockets")  # each loads ≳0.1 s


def _top_level_imports(path: Path, root: Path) -> list[str]:
    """Dotted names imported by the module's own body (inside a top-level ``if``/``try`` too), not in functions."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for stmt in ast.parse(path.read_text(), str(path)).body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, package)
                found += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return found


def heavy_modules(root: Path = ROOT) -> set[str]:
    """The animat modules whose import loads a HEAVY library: directly, through a package above them, or
    through another animat module they import at module level."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    deps: dict[str, set[str]] = {}
    heavy = set()
    for mod, path in files.items():
        names = _top_level_imports(path, root)
        if any(n.split(".")[0] in HEAVY for n in names):
            heavy.add(mod)
        targets = {n if n in files else n.rpartition(".")[0] for n in names}
        parents = {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)}
        deps[mod] = (targets | parents) & set(files) - {mod}
    grew = True
    while grew:
        before = len(heavy)
        heavy |= {mod for mod, targets in deps.items() if targets & heavy}
        grew = len(heavy) > before
    return heavy


def _function_level_imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of the ``import`` statements inside the module's functions and methods."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for fn in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found += [(node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node, package)
                found += [(node.lineno, f"{base}.{alias.name}" if base else alias.name) for alias in node.names]
    return sorted(set(found))


def light_lazy_imports(root: Path = ROOT) -> list[str]:
    """``file:line module`` of every function-level import of a light animat module outside the command modules
    (``cli*.py``): such an import only hides a dependency (or a circle), it saves no time."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    heavy = heavy_modules(root)
    bad = []
    for path in sorted(files.values()):
        if path.name.startswith("cli"):
            continue
        for line, name in _function_level_imports(path, root):
            target = name if name in files else name.rpartition(".")[0]
            if target in files and target not in heavy:
                bad.append(f"{path.relative_to(root.parent)}:{line} {target}")
    return bad


def test_function_level_imports_are_only_of_heavy_modules(tmp_path):
    pkg = tmp_path / "animat"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "light.py").write_text("import json\n")
    (pkg / "heavy.py").write_text("import numpy\nfrom animat import deep\n")
    (pkg / "deep.py").write_text("try:\n    import mujoco\nexcept ImportError:\n    mujoco = None\n")
    (pkg / "user.py").write_text("def f():\n    from animat import light, heavy\n")
    (pkg / "cli.py").write_text("def g():\n    from animat import light\n")
    assert heavy_modules(pkg) == {"animat.heavy", "animat.deep"}
    assert light_lazy_imports(pkg) == ["animat/user.py:2 animat.light"]
    assert light_lazy_imports() == []


def test_no_function_is_longer_than_sixty_lines():
    """Issue 46, acceptance 4: every function of ``src/animat`` fits on a screen (60 lines with its docstring)."""
    long = [
        f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []
