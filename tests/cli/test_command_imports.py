"""What a data command loads: each subcommand imports what it uses (cli/dispatch.py), so reading
a store pays for neither the writers' machinery (asyncio, the cache, the manager, the spend
journal) nor patterns it never matches (the work ledger's extractor). Checked on sys.modules in a
real process; how long a start takes is tests/perf/startup_bench.py's to measure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.layout import cache_path

# What no reader of the store needs: a writer's, the app's or a summary call's.
WRITERS = (
    "asyncio",
    "aiosqlite",
    "anthropic",
    "logging",
    "threading",
    "shutil",
    "engine.manager",
    "engine.store.spend_journal",
    "engine.summarizers.extractive",
)
# The work ledger's extractor and the tool-output rules it reads outputs with (~25 patterns).
EXTRACTOR = ("engine.ledger.extraction", "engine.ledger.apply", "engine.policy.tool_output")

PROBE = (
    "import sys\n"
    "from metis_compaction_tui.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "loaded = sorted(sys.modules)\n"
    "import json\n"
    "sys.stderr.write(chr(10) + json.dumps([code, loaded]) + chr(10))\n"
)


def run(*argv: str) -> tuple[str, set[str]]:
    """The command's output and the modules loaded once it has run, in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    code, modules = json.loads(done.stderr.splitlines()[-1])
    assert code == 0, done.stderr
    return done.stdout, set(modules)


def test_status_loads_no_writer_cache_or_work_ledger(workspace: Path) -> None:
    out, modules = run("status", str(workspace))
    assert "  last       compaction" in out  # a compaction in effect: its summary has a ledger
    assert sorted(modules & {*WRITERS, *EXTRACTOR, "engine.ledger", "engine.cache"}) == []
    # msgspec as without typing_extensions (lean_msgspec), which would bring `inspect`
    assert "msgspec" in modules
    assert sorted(modules & {"typing_extensions", "inspect"}) == []


def test_status_json_reads_the_ledger_back_without_its_extractor(workspace: Path) -> None:
    out, modules = run("status", "--json", str(workspace))
    assert '"ledger": {' in out
    assert "engine.ledger.render" in modules
    assert sorted(modules & {*WRITERS, *EXTRACTOR, "engine.cache"}) == []


def test_cache_list_loads_no_store_logging_or_work_ledger(workspace: Path) -> None:
    assert cache_path(workspace).exists()
    out, modules = run("cache", "list", str(workspace))
    assert "row(s), most recently read first" in out
    assert "engine.cache.sync_cache" in modules
    unwanted = {*WRITERS, *EXTRACTOR, "engine.ledger", "engine.store", "engine.summarizers"}
    assert sorted(modules & {*unwanted, "typing_extensions", "inspect"}) == []


def test_cache_list_without_a_cache_loads_no_msgspec(tmp_path: Path) -> None:
    out, modules = run("cache", "list", str(tmp_path))
    assert out.endswith("no cache yet\n")
    unwanted = {*WRITERS, "msgspec", "typing", "sqlite3", "engine.cache", "engine.store"}
    assert sorted(modules & unwanted) == []


def test_status_on_a_transcript_loads_no_manager_cache_or_app_source() -> None:
    transcript = (
        Path(__file__).parents[1] / "fixtures/transcripts/claude-code/compact_boundary.jsonl"
    )
    out, modules = run("status", str(transcript))
    assert "ours would make" in out
    assert "metis_compaction_tui.sources.recording" in modules
    app_side = {"metis_compaction_tui.sources.transcript", "metis_compaction_tui.sources.memory"}
    assert sorted(modules & {*WRITERS, *EXTRACTOR, "engine.cache", *app_side}) == []
