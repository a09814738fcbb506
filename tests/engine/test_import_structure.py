"""The engine's import structure: no cycle between its modules (imports under TYPE_CHECKING
count: a reader follows them too), only the manager imports the manager, policy/ imports no
summarizer and nothing that reads the clock, and the app and CLI reach the engine only through
`engine`'s public names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
APP = ROOT / "metis_compaction_tui"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str], *, module_level_only: bool = False) -> set[str]:
    """Every module `path` imports, anywhere in the file (function bodies and TYPE_CHECKING
    blocks too), resolved to the modules in `known`: `from engine.policy import span` names
    engine.policy.span, `from engine.cache import CacheRow` names engine.cache."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: set[str] = set()
    skip = function_bodies(tree) if module_level_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            # `from engine.store import sql` imports the submodule; the package's own
            # __init__ is not what the importer reads.
            found.update(submodules or {base})
    return {name for name in found if name in known}


def function_bodies(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside a function body (run only when it is called)."""
    inside: set[int] = set()
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(node) for node in ast.walk(func))
    return inside


def engine_graph() -> dict[str, set[str]]:
    paths = sorted(ENGINE.rglob("*.py"))
    known = {module_name(path) for path in paths}
    return {
        module_name(path): imported_modules(path, known) - {module_name(path)} for path in paths
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_reports_a_cycle_and_passes_a_tree() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_engine_modules_import_each_other_without_a_cycle() -> None:
    cycle = find_cycle(engine_graph())
    assert cycle is None, "import cycle in engine/: " + " -> ".join(cycle or [])


def package_of(module: str) -> str:
    """engine.policy.span -> engine.policy; a top-level module is its own part."""
    return ".".join(module.split(".")[:2])


def test_engine_packages_are_layered_without_a_cycle() -> None:
    """policy/ below summarizers/ and compaction/, cache/ and store/ apart: no package reaches
    back into one that uses it, even through a third."""
    packages: dict[str, set[str]] = {}
    for module, imported in engine_graph().items():
        for target in imported:
            if package_of(target) != package_of(module):
                packages.setdefault(package_of(module), set()).add(package_of(target))
    cycle = find_cycle(packages)
    assert cycle is None, "packages of engine/ in a loop: " + " -> ".join(cycle or [])


# SessionStore.manager() is the entry point metis dev and the app open a stored session by: it
# builds a SessionManager, importing it when called (never at module level, nor for typing).
MANAGER_FACTORIES = {"engine.store.session_store"}


def test_only_the_manager_imports_the_manager() -> None:
    known = set(engine_graph())
    importers = []
    for path in sorted(ENGINE.rglob("*.py")):
        name = module_name(path)
        if name in ("engine", "engine.manager"):
            continue
        lazy = name in MANAGER_FACTORIES
        if "engine.manager" in imported_modules(path, known, module_level_only=lazy):
            importers.append(name)
    assert importers == [], f"engine modules importing engine.manager: {importers}"


def test_policy_is_pure_no_clock_no_pid_no_summarizer() -> None:
    """engine/policy decides; what it needs from outside (the time, ids, a summary) is passed in."""
    for path in sorted((ENGINE / "policy").glob("*.py")):
        name = module_name(path)
        imported = imported_modules(path, {*engine_graph(), "time", "os", "random", "uuid"})
        summarizers = sorted(m for m in imported if m.startswith("engine.summarizers"))
        assert summarizers == [], f"{name} imports a summarizer: {summarizers}"
        impure = sorted(imported & {"time", "os", "random", "uuid", "engine.ids"})
        assert impure == [], f"{name} reads the clock, the pid or makes ids: {impure}"
        assert "engine.outcomes" not in imported, f"{name} imports engine.outcomes (a cycle)"


def engine_imports_of_the_app() -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(file, line, module, names) of every import of the engine in metis_compaction_tui/."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "engine":
                names = tuple(alias.name for alias in node.names)
                found.append((str(path.relative_to(ROOT)), node.lineno, node.module or "", names))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "engine":
                        found.append((str(path.relative_to(ROOT)), node.lineno, alias.name, ()))
    return found


def test_the_app_and_cli_reach_the_engine_only_through_its_public_names() -> None:
    import engine

    deeper = [f"{file}:{line} {module}" for file, line, module, _ in engine_imports_of_the_app()]
    deeper = [where for where in deeper if not where.endswith(" engine")]
    assert deeper == [], "import from `engine` itself, not its submodules: " + ", ".join(deeper)
    unknown = [
        f"{file}:{line} {name}"
        for file, line, _, names in engine_imports_of_the_app()
        for name in names
        if name not in engine.__all__
    ]
    assert unknown == [], "not a public name of engine: " + ", ".join(unknown)


def test_each_public_name_is_listed_once_and_loads_from_its_module() -> None:
    import engine

    source = (ENGINE / "__init__.py").read_text(encoding="utf-8")
    for name in engine.__all__:
        assert source.count(f'"{name}"') == 1, f"{name} is listed more than once"
        assert getattr(engine, name) is not None


def test_importing_engine_loads_no_database_event_loop_or_summarizer() -> None:
    probe = (
        "import sys, engine; from engine import plan_turn, CompactionConfig; "
        "print(','.join(m for m in ('aiosqlite', 'asyncio', 'sqlite3', 'anthropic', "
        "'engine.summarizers.extractive', 'engine.cache', 'engine.manager') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
