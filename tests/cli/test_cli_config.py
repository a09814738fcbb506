"""Through the CLI: a custom summarizer named by an import path in .metis/config.yaml,
an Anthropic-compatible endpoint with an unlisted model at stated prices (the real SDK against a
local server), the price's origin, and config errors naming file, line and key."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from engine import trust_workspace
from engine.config import CompactionConfig
from engine.layout import config_path, metis_dir
from engine.store import SessionStore
from engine.summarizers.pricing import CallUsage, price_from_rates, usage_cost
from metis_compaction_tui.cli import dispatch as cli
from tests.history_builders import tool_session
from tests.messages_api_server import MessagesAPIServer, ok
from tests.plugins import acme

API_KEY = "sk-ant-test-cli-config-SECRET-42"
KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 1_500,
    "compaction_preserve_recent_turns": 2,
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def workspace_with(tmp_path: Path, model: str, config_yaml: str, *, trusted: bool = False) -> Path:
    """A store with one session of `model` that has a span to compact, and a config.yaml;
    `trusted`: the user has trusted that file (its import path or endpoint then applies)."""
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session("s1", config=CompactionConfig(compaction_model=model, **KNOBS))
        for message in tool_session(6, size=300):
            store.append_message("s1", message, 100)
    config_path(tmp_path).write_text(config_yaml)
    if trusted:
        trust_workspace(tmp_path)
    return tmp_path


def test_compact_runs_a_custom_summarizer_named_by_an_import_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace_with(
        tmp_path,
        "acme:small",
        'compaction_model: "acme:small"\nsummarizer:\n  import: "tests.plugins.acme:make"\n'
        '  options:\n    fee_usd: "0.004"\n',
        trusted=True,
    )
    before = len(acme.CALLS)
    code, out, err = run(capsys, "compact", "s1", "-w", str(ws), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert acme.CALLS[before:] == ["acme:small"]
    assert result["model"] == "acme:small"
    assert result["cost_usd"] == "0.004"
    assert result["price_origin"] == "the summarizer's own"
    with SessionStore.open(ws, create=False) as store:
        first = store.snapshot("s1").messages[0].text()
        assert first.startswith("<COMPACTION_SUMMARY model=acme:small ") and "ACME SUMMARY" in first
        assert store.session_info("s1").spent_usd == Decimal("0.004")


def test_a_failing_import_path_is_one_clear_line_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = workspace_with(
        tmp_path,
        "acme:small",
        'summarizer:\n  model: "acme:small"\n  import: "acme_gone.x:make"\n',
        trusted=True,
    )
    code, _, err = run(capsys, "compact", "s1", "-w", str(ws))
    assert code == 2
    assert err.count("\n") == 1
    assert "summarizer.import: cannot import 'acme_gone.x'" in err
    with SessionStore.open(ws, create=False) as store:
        assert store.session_info("s1").revision == 0


def test_an_unlisted_model_at_stated_prices_is_billed_what_the_server_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real SDK against a local Messages API: spend = the server's usage at the stated
    rates (cache kinds at 1.25x / 0.1x input, as stated nothing else)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    model = "anthropic:llama-3.1-8b-local"
    with MessagesAPIServer(default=ok("SUMMARY", 3_000, 150, cache_read=400, cache_write=200)) as (
        server
    ):
        ws = workspace_with(
            tmp_path,
            model,
            f'compaction_model: "{model}"\nsummarizer:\n  base_url: "{server.base_url}"\n'
            "  price:\n    input_per_mtok: 0.5\n    output_per_mtok: 2\n",
            trusted=True,
        )
        code, out, err = run(capsys, "status", str(ws), "--json")
        assert code == 0, err
        (session,) = json.loads(out)["sessions"]
        assert session["price_origin"] == "price you set"
        assert session["config"]["summarizer.price.input_per_mtok"]["origin"] == "file"
        code, out, err = run(capsys, "compact", "s1", "-w", str(ws), "--json")
        assert code == 0, err
        (request,) = [r for r in server.requests if r.path.endswith("/messages")]
    assert request.body["model"] == "llama-3.1-8b-local"
    stated = price_from_rates("llama-3.1-8b-local", Decimal("0.5"), Decimal(2))
    expected = usage_cost(
        stated,
        CallUsage(
            input_tokens=3_000, output_tokens=150, cache_read_tokens=400, cache_write_tokens=200
        ),
    )
    result = json.loads(out)
    assert Decimal(result["cost_usd"]) == expected
    assert result["price_origin"] == "price you set"
    with SessionStore.open(ws, create=False) as store:
        assert store.session_info("s1").spent_usd == expected
    code, out, _ = run(capsys, "status", str(ws), "--json")
    (session,) = json.loads(out)["sessions"]
    last = session["last_compaction"]
    # What it saved is priced at the stated rates too (reads 0.1x of 0.5), not the reference's.
    assert last["priced_at"] == "llama-3.1-8b-local"
    assert Decimal(last["saved_usd_per_turn"]) == last["saved_tokens"] * Decimal("0.05") / 10**6
    code, text, _ = run(capsys, "status", str(ws))
    assert "(anthropic:llama-3.1-8b-local, price you set)" in text
    assert "summarizer.price.input_per_mtok = 0.5" in text
    for output in (out, text, err):
        assert API_KEY not in output


def test_an_unlisted_model_without_a_stated_price_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MessagesAPIServer() as server:
        ws = workspace_with(
            tmp_path,
            "anthropic:llama-3.1-8b-local",
            f'summarizer:\n  base_url: "{server.base_url}"\n',
            trusted=True,
        )
        code, _, err = run(capsys, "compact", "s1", "-w", str(ws))
        assert code == 2 and "state its price in summarizer.price" in err
        assert server.requests == []


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("compaction_threshold_tokens: 4000\nthreshold: 5\n", 2, "threshold: unknown key"),
        ("\ncompaction_hard_cap_tokens: big\n", 2, "compaction_hard_cap_tokens: 'big' is not a"),
        ("summarizer:\n  price: {input_per_mtok: 1\n", 3, "(YAML syntax)"),
    ],
)
def test_config_errors_name_file_line_and_key_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, words: str
) -> None:
    ws = workspace_with(tmp_path, "local:extractive", text)
    code, _, err = run(capsys, "status", str(ws))
    assert code == 2 and err.count("\n") == 1
    assert f"{config_path(ws)}:{line}: {words}" in err


def test_simulate_runs_the_workspaces_own_summarizer_and_knobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The simulated metis dev reads config.yaml as metis dev would: the model and its adapter
    from the file, a knob from the file over the demo's own."""
    metis_dir(tmp_path).mkdir()
    config_path(tmp_path).write_text(
        'compaction_model: "acme:small"\ncompaction_preserve_recent_turns: 4\n'
        'summarizer:\n  import: "tests.plugins.acme:make"\n'
    )
    trust_workspace(tmp_path)  # the user's own workspace: its import path is theirs
    before = len(acme.CALLS)
    argv = ["simulate", str(tmp_path), "--pace", "0", "--turns", "12", "--reruns", "0", "-q"]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert len(acme.CALLS) > before and set(acme.CALLS[before:]) == {"acme:small"}
    with SessionStore.open(tmp_path, create=False) as store:
        (info,) = store.list_sessions()
        assert info.config.compaction_model == "acme:small"
        assert info.config.compaction_preserve_recent_turns == 4
        assert "ACME SUMMARY" in store.snapshot(info.session_id).messages[0].text()


def test_simulate_takes_set_over_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--set on simulate (and demo, which passes it to its simulate process) as on status and
    compact: over the file, a bad one refused by name before anything runs."""
    metis_dir(tmp_path).mkdir()
    config_path(tmp_path).write_text("compaction_preserve_recent_turns: 4\n")
    base = ["simulate", str(tmp_path), "--pace", "0", "--turns", "6", "--reruns", "0", "-q"]
    code, _, err = run(capsys, *base, "--set", "compaction_preserve_recent_turns=2")
    assert code == 0, err
    with SessionStore.open(tmp_path, create=False) as store:
        (info,) = store.list_sessions()
        assert info.config.compaction_preserve_recent_turns == 2
    code, _, err = run(capsys, *base, "--set", "compaction_preserve_recent_turns=zero")
    assert code == 2 and "--set compaction_preserve_recent_turns" in err


def test_escape_sequences_in_a_config_key_are_shown_neutralised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config file is read back untrusted: its words reach the terminal only made visible."""
    ws = workspace_with(tmp_path, "local:extractive", '"\\e[31mred\\e]0;pwned\\a": 1\n')
    code, _, err = run(capsys, "status", str(ws))
    assert code == 2 and "unknown key" in err
    assert "\x1b" not in err and "\x07" not in err
