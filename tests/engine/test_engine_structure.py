"""The engine's shape. Which module may import which is the contracts' job (``.importlinter``: the engine's
layers, the engine without the app, the schedule model without torch), run here by ``lint-imports``; the tests
below check what those contracts cannot: no import cycle through a package's own ``__init__``, what ``python
-m engine simulate`` really loads, and habits of the code (one enumeration of kinds, one execution loop)."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"


def test_the_import_contracts_hold():
    """``lint-imports`` reads ``.importlinter`` at the repository root; it fails naming the import that breaks a
    contract and the chain that leads to it."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if linter is None:
        pytest.skip("import-linter is not installed (requirements-dev.txt)")
    done = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Engine modules this file imports, anywhere in it (lazy imports inside functions count too)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c.startswith("engine"))
    return found


def test_no_import_cycle_inside_the_engine():
    """Every module and package ``__init__`` a node, every import an edge (relative, lazy and TYPE_CHECKING ones
    too). The layers contract orders only the engine's top level, and import-linter's ``acyclic_siblings``
    squashes a package into one node, so neither sees a cycle through a package's own ``__init__`` (``from .
    import run`` in a module its ``__init__`` imports)."""
    modules = {module_name(path): path for path in ENGINE.rglob("*.py")}
    graph = {name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " → ".join(trail[trail.index(target) :] + [name, target]))
            if target not in state:
                visit(target, trail + [name])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert len(graph) > 20  # the walk saw the engine


@pytest.mark.slow
def test_simulate_never_imports_torch():
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "engine",
            "simulate",
            "--schedule",
            "zb-h1",
            "--ranks",
            "4",
            "--microbatches",
            "8",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")
    ]
    assert "engine.simulator" in imported and "engine.runtime.config" in imported  # the log is real
    assert not [name for name in imported if name == "torch" or name.startswith("torch.")]


def engine_lines_matching(pattern: str) -> list[str]:
    """Every line of the engine's source that ``pattern`` finds, as "file:line: text"."""
    found = re.compile(pattern)
    return [
        f"{path.name}:{number}: {line.strip()}"
        for path in ENGINE.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if found.search(line)
    ]


def test_kind_codes_are_never_bare_numbers():
    """One enumeration (ir.Kind) everywhere: no ``kind == 2`` or ``kind != 3`` in the engine."""
    assert engine_lines_matching(r"\bkinds?\b\s*(==|!=|<|>)\s*\d|\bkind\s+in\s+\(\d") == []


def test_one_execution_loop_serves_both_backends():
    """Only ``engine.runtime.execute`` runs actions on a worker; the backends choose a transport and a clock."""
    callers = sorted(
        path.name
        for path in ENGINE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "perform"
    )
    assert callers == ["execute.py"]


def test_actions_are_never_rebuilt_from_the_arrays_by_hand():
    """The compiled schedule's accessors (``action(i)``, ``label(i)``…) are the one way from its arrays back to
    actions and their text: no ``Kind(int(...))`` and no second kind alphabet anywhere in the engine."""
    assert engine_lines_matching(r"Kind\(int\(|['\"]FBIW['\"]") == []
