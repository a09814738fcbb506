"""`metis-compaction-tui`: every subcommand, its errors (one line, exit 2, nothing written), the
documented JSON shapes (docs/cli-json.md, decoded strictly here), and the simulated metis dev."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from engine.layout import STORE_FILE, cache_path, metis_dir, store_path
from engine.ledger import counts as ledger_counts
from engine.store import SessionStore
from metis_compaction_tui.cli import dispatch as cli
from metis_compaction_tui.demo.simulator import Simulator

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "cli-json.md").read_text(encoding="utf-8")


# -- the documented shapes, strictly (an unknown or missing field fails) -------------------------


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    pass


class Pressure(Strict):
    of_threshold_pct: float
    of_hard_cap_pct: float


class Decision(Strict):
    action: str
    reason: str
    fires: bool
    explain: str


class Span(Strict):
    start: int
    compaction_watermark: int
    nominal_watermark: int
    slid_back_by: int
    span_message_count: int
    span_tokens: int


class StrategyPlan(Strict):
    name: str
    action: str | None
    expected_saved_tokens: int | None


class CallUsage(Strict):
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int


class LedgerCounts(Strict):
    restored: int
    dropped: int


class LastCompaction(Strict):
    compaction_id: int
    kind: str
    strategy: str | None
    trigger: str
    created_at_ms: int
    span_message_count: int
    history_tokens_before: int
    history_tokens_after: int
    cost_usd: str
    usage: CallUsage | None
    notes: list[str]  # engine.summary_checks: a summary cut, usage charged at the bound
    saved_tokens: int | None
    saved_usd_per_turn: str | None
    break_even_turns: int | None
    priced_at: str | None
    ledger: LedgerCounts | None


class Setting(Strict):
    value: str
    origin: str  # default | user_file | file | environment | flag | session
    where: str


class SessionFigures(Strict):
    """What `status --json` says of every session, from a store or from a transcript."""

    session_id: str
    title: str
    message_count: int
    total_tokens: int
    stable_prefix_end: int
    floor: int
    pending_history_tokens: int
    threshold_tokens: int
    hard_cap_tokens: int
    preserve_recent_turns: int
    pressure: Pressure
    decision: Decision
    span: Span | None
    boundary_found: bool
    strategy: StrategyPlan
    model: str
    spent_usd: str
    budget_usd: str
    budget_exhausted: bool


class SessionStatus(SessionFigures):
    revision: int
    last_seq: int
    created_at_ms: int
    updated_at_ms: int
    price_origin: str
    config: dict[str, Setting]
    compactions_in_effect: int
    compactions_undone: int
    last_compaction: LastCompaction | None


class WorkspaceTrust(Strict):
    state: str
    workspace: str
    config_file: str
    sha256: str
    gated: list[str]
    withheld: list[str]
    withheld_at: list[str]
    changed: bool


class Status(Strict):
    shape_version: int
    workspace: str
    store: str
    schema_version: int
    config_file: str
    config_file_found: bool
    user_config_file: str
    user_config_file_found: bool
    config: dict[str, Setting]
    workspace_trust: WorkspaceTrust
    sessions: list[SessionStatus]
    bad_rows: list[str]  # rows that could not be read, named; the rest are shown


class CacheListRow(Strict):
    cache_key: str
    summarization_model: str
    summarization_prompt_version: str
    span_message_count: int
    span_token_count_in: int
    span_token_count_out: int
    created_at_ms: int
    last_read_at_ms: int
    use_count: int
    summary_chars: int


class CacheList(Strict):
    shape_version: int
    path: str
    exists: bool
    count: int
    rows: list[CacheListRow]


@pytest.mark.parametrize(
    "shape",
    [
        Status,
        SessionStatus,
        Pressure,
        Decision,
        Span,
        StrategyPlan,
        LastCompaction,
        LedgerCounts,
        CallUsage,
        CacheList,
        CacheListRow,
    ],
)
def test_every_field_of_the_json_shapes_is_documented(shape: type[msgspec.Struct]) -> None:
    for field in shape.__struct_fields__:
        assert f"`{field}`" in DOC, f"{shape.__name__}.{field} is not in docs/cli-json.md"


# -- helpers -------------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("metis-compaction-tui: ")
    return lines[0]


def session_id(workspace: Path) -> str:
    with SessionStore.open(workspace) as store:
        return store.list_sessions()[0].session_id


def state(workspace: Path) -> tuple[object, ...]:
    with SessionStore.open(workspace) as store:
        sid = store.list_sessions()[0].session_id
        return (store.snapshot(sid), store.compactions(sid), store.events(sid))


# -- help and errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["open"],
        ["demo"],
        ["status"],
        ["compact"],
        ["undo"],
        ["cache"],
        ["cache", "list"],
        ["cache", "show"],
        ["cache", "evict"],
        ["cache", "trim"],
        ["cache", "clear"],
        ["simulate"],
    ],
)
def test_every_subcommand_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    assert "usage: metis-compaction-tui" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "{missing}"],
        ["compact", "s", "-w", "{missing}"],
        ["compact", "s", "-w", "{missing}", "--dry-run"],
        ["undo", "s", "-w", "{missing}"],
        ["cache", "list", "-w", "{missing}"],
        ["simulate", "{missing}", "--seconds", "0"],
        ["{missing}"],
    ],
)
def test_a_missing_workspace_is_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run(capsys, *(a.format(missing=missing) for a in argv))
    assert code == 2
    assert "does not exist" in one_error_line(err)
    assert not missing.exists()


@pytest.mark.parametrize(
    "argv", [["status", "{ws}"], ["compact", "s", "-w", "{ws}"], ["undo", "s", "-w", "{ws}"]]
)
def test_a_store_that_is_not_sqlite_is_one_line_exit_2_and_untouched(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"\x00not sqlite at all\n" * 100)
    before = path.read_bytes()
    code, _, err = run(capsys, *(a.format(ws=tmp_path) for a in argv))
    assert code == 2
    assert "is not a SQLite database" in one_error_line(err)
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == [STORE_FILE]


@pytest.mark.parametrize("command", ["compact", "undo"])
def test_an_unknown_session_is_one_line_exit_2_and_writes_nothing(
    command: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = state(workspace)
    code, _, err = run(capsys, command, "no-such-session", "-w", str(workspace))
    assert code == 2
    line = one_error_line(err)
    assert "no session 'no-such-session'" in line and session_id(workspace) in line
    assert state(workspace) == before


@pytest.mark.parametrize("command", ["compact", "undo"])
def test_a_workspace_given_for_the_session_is_named_as_such_and_writes_nothing(
    command: str,
    workspace: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # ".", the default, holds no store
    before = state(workspace)
    code, _, err = run(capsys, command, str(workspace))
    assert code == 2
    line = one_error_line(err)
    assert f"{workspace} is a workspace, not a session id" in line
    assert f"`{command} SESSION {workspace}`" in line
    assert state(workspace) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "{long}"],
        ["status", "-w", "{long}"],
        ["inspect", "{long}"],
        ["compact", "{long}"],
        ["undo", "{long}"],
        ["compact", "s", "{long}"],
        ["cache", "list", "{long}"],
        ["trust", "{long}"],
    ],
)
def test_a_path_too_long_to_look_up_is_one_line_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    long = "a" * 5_000  # over any file name limit (NAME_MAX is 255 on Linux)
    code, _, err = run(capsys, *(a.format(long=long) for a in argv))
    assert code == 2
    line = one_error_line(err)
    assert "File name too long" in line  # said in one line, whichever reader met it first


def test_the_console_script_exits_2_in_a_real_process(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("metis-compaction-tui")
    done = subprocess.run(
        [str(script), "status", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "sessions.sqlite does not exist" in done.stderr
    assert not metis_dir(tmp_path).exists()


def test_a_named_model_without_a_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, _, err = run(capsys, "simulate", str(tmp_path), "--model", "anthropic:claude-haiku-4-5")
    assert code == 2 and "set ANTHROPIC_API_KEY" in one_error_line(err)
    assert not metis_dir(tmp_path).exists()


# -- status ------------------------------------------------------------------------------------


def test_status_json_has_the_documented_shape(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "status", str(workspace), "--json")
    assert code == 0
    status = msgspec.json.decode(out, type=Status)
    assert status.shape_version == 2 and status.schema_version == 2
    (session,) = status.sessions
    assert session.session_id == session_id(workspace)
    assert session.compactions_in_effect >= 1 and session.revision >= 1
    assert session.decision.action in {"skip", "soft", "forced"}
    assert session.threshold_tokens == 6_000 and session.hard_cap_tokens == 14_000
    assert re.fullmatch(r"\d+(\.\d+)?", session.spent_usd)
    assert session.budget_usd == "0.02"
    assert session.pressure.of_threshold_pct == pytest.approx(
        100 * session.pending_history_tokens / 6_000, abs=0.05
    )


def test_status_says_which_strategy_ran_and_what_it_saved(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "status", str(workspace), "--json")
    assert code == 0
    (session,) = msgspec.json.decode(out, type=Status).sessions
    assert session.strategy.name == "summarize"
    last = session.last_compaction
    assert last is not None and last.strategy == "summarize"
    assert last.history_tokens_before > last.history_tokens_after > 0
    assert last.saved_tokens == last.history_tokens_before - last.history_tokens_after
    assert last.saved_usd_per_turn is not None and Decimal(last.saved_usd_per_turn) > 0
    assert last.priced_at == "claude-haiku-4-5" and last.break_even_turns is not None
    # What the summary's work ledger restored and left out, as read from the summary itself.
    with SessionStore.open(workspace) as store:
        messages = store.snapshot(store.list_sessions()[0].session_id).messages
    summary = [m for m in messages if m.metadata.compaction_span][-1]
    assert last.ledger is not None
    assert msgspec.to_builtins(last.ledger) == msgspec.to_builtins(ledger_counts(summary.text()))
    code, text, _ = run(capsys, "status", str(workspace))
    assert "  strategy   summarize: " in text
    assert f"saved {last.saved_tokens:,} tokens" in text


def test_status_text_says_pressure_floor_trigger_and_spend(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "status", str(workspace))
    assert code == 0
    for label in ("pressure ", "floor ", "trigger ", "spend ", "of threshold 6,000"):
        assert label in out
    assert "notional" in out  # the demo's spend is said to be notional


def test_status_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    SessionStore.open(tmp_path, create=True).close()
    code, out, _ = run(capsys, "status", str(tmp_path), "--json")
    assert code == 0 and msgspec.json.decode(out, type=Status).sessions == []


# -- compact and undo --------------------------------------------------------------------------


def test_compact_dry_run_writes_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_path(workspace).unlink()
    for name in ("-wal", "-shm"):
        (metis_dir(workspace) / f"compaction-cache.sqlite{name}").unlink(missing_ok=True)
    sid = session_id(workspace)
    before = state(workspace)
    code, out, err = run(capsys, "compact", sid, "-w", str(workspace), "--dry-run", "--json")
    assert code == 0, err
    preview = msgspec.json.decode(out)
    assert preview["dry_run"] is True and preview["cache_hit"] is False
    assert set(preview["span"]) == set(Span.__struct_fields__)
    assert preview["span"]["span_message_count"] > 0
    assert preview["estimated_cost_usd"] == "0"  # local:extractive
    assert state(workspace) == before
    assert not cache_path(workspace).exists()


def test_compact_then_undo_then_refusals(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = session_id(workspace)
    with SessionStore.open(workspace) as store:
        revision = store.session_info(sid).revision
        in_effect = sum(not c.undone for c in store.compactions(sid))
    code, out, err = run(capsys, "compact", sid, "-w", str(workspace), "--json")
    if code == 1:  # the simulator's last turn left no span: nothing to compact is the answer
        assert "nothing to compact" in err
    else:
        assert code == 0, err
        assert msgspec.json.decode(out)["revision"] == revision + 1
        in_effect += 1
    for _ in range(in_effect):
        code, out, err = run(capsys, "undo", sid, "-w", str(workspace))
        assert code == 0, err
        assert "undid compaction" in out
    code, _, err = run(capsys, "undo", sid, "-w", str(workspace))
    assert code == 1 and "no compaction to undo" in err
    with SessionStore.open(workspace) as store:
        assert store.session_info(sid).floor == 0


# -- cache ------------------------------------------------------------------------------------


def test_cache_list_json_has_the_documented_shape(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "cache", "list", "-w", str(workspace), "--json")
    assert code == 0
    listing = msgspec.json.decode(out, type=CacheList)
    assert listing.exists and listing.count == len(listing.rows) >= 1
    assert all(re.fullmatch(r"[0-9a-f]{64}", r.cache_key) for r in listing.rows)
    reads = [r.last_read_at_ms for r in listing.rows]
    assert reads == sorted(reads, reverse=True)


@pytest.mark.parametrize("form", ["positional", "flag", "both"])
def test_every_subcommand_takes_the_workspace_the_same_way(
    workspace: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cache list --json WS` failed while `status WS` worked: one convention for all."""
    sid = session_id(workspace)
    ws = {"positional": [str(workspace)], "flag": ["-w", str(workspace)]}.get(
        form, [str(workspace), "--workspace", str(workspace)]
    )
    for argv in (
        ["status", "--json", *ws],
        ["cache", "list", "--json", *ws],
        ["compact", sid, "--dry-run", "--json", *ws],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 0, (argv, err)
        assert str(workspace) in out or sid in out  # it read this workspace, not "."
    key = msgspec.json.decode(run(capsys, "cache", "list", "--json", *ws)[1], type=CacheList)
    code, out, _ = run(capsys, "cache", "show", key.rows[0].cache_key[:12], "--json", *ws)
    assert code == 0 and key.rows[0].cache_key in out


WORKSPACE_COMMANDS = (
    ["open"], ["status"], ["compact"], ["undo"], ["simulate"],
    ["cache", "list"], ["cache", "show"], ["cache", "evict"], ["cache", "trim"], ["cache", "clear"],
)  # fmt: skip


@pytest.mark.parametrize("command", [*WORKSPACE_COMMANDS, ["inspect"], [], ["demo"]])
def test_help_names_what_each_option_takes_and_cites_no_spec_section(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([*command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "§" not in text and "WORKSPACE_FLAG" not in text and "the same\n" not in text
    if command in WORKSPACE_COMMANDS:
        assert "-w WORKSPACE" in text
    if command == ["inspect"]:
        assert "-w PATH" in text


@pytest.mark.parametrize("columns", ["50", "80", "100", "160"])
def test_the_quick_help_page_is_argparses_page(
    columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--help` alone is written without argparse (cli.overview): the same page, any width."""
    from metis_compaction_tui.cli import main as entry

    monkeypatch.setenv("COLUMNS", columns)
    assert entry(["--help"]) == 0
    fast = capsys.readouterr().out
    assert fast == cli.build_parser(only="").format_help()
    assert all(name in fast for name in (*cli.SUBCOMMANDS, "statusline"))


def test_inspect_takes_its_path_with_w_too(tmp_path: Path) -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["inspect", "-w", str(tmp_path)])
    cli.resolve_workspace(args)
    assert args.path == tmp_path
    args = parser.parse_args(["inspect"])
    cli.resolve_workspace(args)
    assert args.path is None  # its own default folders, not "."
    args = parser.parse_args(["inspect", str(tmp_path), "--workspace", str(tmp_path / "x")])
    with pytest.raises(cli.CliError, match="two paths given"):
        cli.resolve_workspace(args)


def test_a_bad_knob_value_names_the_knob_once(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "status", str(workspace), "--set", "threshold_tokens=lots")
    line = one_error_line(err)
    assert code == 2 and line.count("compaction_threshold_tokens") == 1
    assert line == (
        "metis-compaction-tui: --set compaction_threshold_tokens: 'lots' is not a whole number"
    )


def test_two_different_workspaces_are_refused(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "cache", "list", str(workspace), "-w", str(tmp_path / "other"))
    assert code == 2
    assert "two workspaces" in one_error_line(err)


def test_cache_list_without_a_cache_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "cache", "list", "-w", str(tmp_path), "--json")
    assert code == 0
    assert msgspec.json.decode(out, type=CacheList) == CacheList(
        2, str(cache_path(tmp_path)), False, 0, []
    )
    assert not metis_dir(tmp_path).exists()


def test_cache_show_evict_trim_clear(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = str(workspace)
    rows = msgspec.json.decode(run(capsys, "cache", "list", "-w", ws, "--json")[1])["rows"]
    key = rows[0]["cache_key"]
    code, out, _ = run(capsys, "cache", "show", key[:12], "-w", ws, "--json")
    shown = msgspec.json.decode(out)
    assert code == 0 and shown["summary_text"]
    assert shown["ledger"] == msgspec.to_builtins(ledger_counts(shown["summary_text"]))
    uses = msgspec.json.decode(run(capsys, "cache", "list", "-w", ws, "--json")[1])["rows"]
    assert uses[0]["use_count"] == rows[0]["use_count"]  # show is a peek, not a hit
    code, _, err = run(capsys, "cache", "show", "zzzz", "-w", ws)
    assert code == 2 and "is not in the cache" in one_error_line(err)
    # trim and clear ask first; without a terminal and without --yes they refuse.
    code, _, err = run(capsys, "cache", "clear", "-w", ws)
    assert code == 2 and "refused without --yes" in one_error_line(err)
    code, out, _ = run(capsys, "cache", "evict", key, "-w", ws, "--json")
    assert code == 0 and msgspec.json.decode(out) == {"evicted": 1, "cache_key": key}
    code, out, _ = run(capsys, "cache", "trim", "0", "-w", ws, "--yes", "--json")
    assert code == 0 and msgspec.json.decode(out)["kept"] == 0
    code, out, _ = run(capsys, "cache", "clear", "-w", ws, "--yes")
    assert code == 0 and "already empty" in out


# -- the simulated metis dev -----------------------------------------------------------------


def test_the_demo_script_shows_soft_forced_cache_hit_and_a_spent_budget(tmp_path: Path) -> None:
    lines: list[str] = []
    report = asyncio.run(Simulator(tmp_path, pace=0, log=lines.append).run())
    assert report.soft >= 2  # the threshold, crossed
    assert report.budget_skips >= 1  # §3.1 step 3: threshold reached, budget spent: skipped
    assert report.budget_exhausted_forced >= 1  # §3.1 step 2: the hard cap forces it anyway
    assert report.forced >= 1
    assert report.cache_hits >= 1  # the rerun's first span is the first run's
    assert any("notional" in line for line in lines)
    with SessionStore.open(tmp_path) as store:
        first, rerun = store.list_sessions()
        assert first.spent_usd >= first.config.compaction_max_cost_per_session_usd
        assert "nothing billed" in first.title and "rerun" in rerun.title


def test_simulate_runs_the_writer_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", str(tmp_path), "--pace", "0", "--turns", "10", "--reruns", "0", "-q"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "simulated 10 turns" in out
    with SessionStore.open(tmp_path) as store:
        (info,) = store.list_sessions()
        assert info.message_count > 0


def test_demo_without_the_app_runs_the_simulator_in_a_temporary_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    argv = ["demo", "--no-app", "--seconds", "5", "--pace", "0", "--turns", "8", "-q"]
    code, out, _ = run(capsys, *argv, "--keep")
    assert code == 0
    (demo,) = tmp_path.glob("metis-demo-*")
    assert f"demo workspace: {demo}" in out and f"kept at {demo}" in out
    with SessionStore.open(demo) as store:
        assert len(store.list_sessions()) == 2  # the run and its rerun
    # Without --keep the temporary workspace goes when the demo ends.
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "demo workspace: " in out
    assert list(tmp_path.glob("metis-demo-*")) == [demo]


def test_open_hands_the_workspace_to_the_app(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import metis_compaction_tui.app as app

    opened: list[Path] = []
    monkeypatch.setattr(app, "run_app", lambda workspace: opened.append(workspace) or 0)
    assert run(capsys, str(tmp_path))[0] == 0
    assert run(capsys, "open", str(tmp_path))[0] == 0
    assert opened == [tmp_path, tmp_path]
    assert not metis_dir(tmp_path).exists()  # opening never creates a store
