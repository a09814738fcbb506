"""engine/ is a UI-free library: importing all of it never loads textual, rich or the app."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import engine

ENGINE_DIR = Path(engine.__file__).parent
UI_PACKAGES = ("textual", "rich", "metis_compaction_tui")


def engine_modules() -> list[str]:
    names = ["engine"]
    for info in pkgutil.walk_packages([str(ENGINE_DIR)], prefix="engine."):
        names.append(info.name)
    return sorted(names)


def is_ui(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in UI_PACKAGES)


def test_the_module_list_covers_every_engine_source_file() -> None:
    files = {
        ".".join(path.relative_to(ENGINE_DIR.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        )
        for path in ENGINE_DIR.rglob("*.py")
    }
    assert files == set(engine_modules())
    assert "engine.summarizers.anthropic_summarizer" in files
    assert "engine.manager" in files


def test_importing_every_engine_module_in_a_fresh_interpreter_loads_no_ui_package() -> None:
    script = (
        "import importlib, json, sys\n"
        f"for name in {engine_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ENGINE_DIR.parent,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "engine.manager" in loaded  # the imports really ran
    assert [m for m in loaded if is_ui(m)] == []


def test_the_checker_would_notice_a_ui_import() -> None:
    # The same subprocess check, with textual imported on purpose, does see it.
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys, textual; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert any(is_ui(m) for m in json.loads(done.stdout))


def imported_names(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
    return names


def test_no_engine_source_file_imports_a_ui_package() -> None:
    offenders = []
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [f"{path.name}: {name}" for name in imported_names(tree) if is_ui(name)]
    assert offenders == []


def test_the_static_check_catches_every_import_form() -> None:
    source = (
        "import textual\n"
        "import rich.console as rc\n"
        "from textual.app import App\n"
        "from metis_compaction_tui.cli import main\n"
        "import importlib\n"
        "importlib.import_module('rich.text')\n"
        "__import__('textual.widgets')\n"
        "import msgspec\n"
        "from engine.messages import Message\n"
    )
    found = sorted(name for name in imported_names(ast.parse(source)) if is_ui(name))
    assert found == [
        "metis_compaction_tui.cli",
        "rich.console",
        "rich.text",
        "textual",
        "textual.app",
        "textual.widgets",
    ]
