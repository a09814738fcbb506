"""A summarizer endpoint's answer is untrusted input: the real CLI (`compact`, `status`) as its own
process, the real `anthropic` SDK inside it, talking to a local Messages API server on 127.0.0.1
that misbehaves (tests/messages_api_server.py).

- A 5 MB summary is cut to the call's max_tokens (the engine's count): the history stays under
  its hard cap, and the output says "summary_over_budget: summary cut to N tokens".
- Usage that cannot be true (10^15 output tokens, negative counts, a text far longer than its
  reported output) is not billed as reported: the call is charged at the request's bound and the
  output and the stored record say "usage_implausible"; `status` reads the store afterwards.
- A server that trickles a byte every 0.5 s cannot stretch summarizer.timeout_s=2: the command
  ends with one line naming the timeout, retries included.
- A bad base URL is one line naming the setting, never a traceback, never its credentials.

The endpoint and the timeout go to the CLI as `--set` flags and the key in the environment, as a
user would pass them for one run (never through the workspace's own config file).
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path

import pytest

from engine import CompactionConfig
from engine.store import SessionStore
from engine.summarizers.pricing import cost_of, price_for
from metis_compaction_tui.demo.workload import scripted_session
from tests.cli_process import run_cli
from tests.messages_api_server import (
    Behaviour,
    MessagesAPIServer,
    empty_text,
    ok,
    trickle,
)

MODEL = "claude-haiku-4-5"
SESSION = "s"
KEY = "sk-ant-endpoint-0123456789abcdef"
HARD_CAP = 8_000
MAX_SUMMARY = 500
GUARD_S = 90  # the subprocess guard: far past the deadline, far short of a trickled body
CUT = re.compile(r"summary cut to ([\d,]+) tokens")


def workspace(path: Path) -> Path:
    """A store with one session of about 11,800 tokens on the Anthropic model: its next
    compaction is forced (over the 8,000 hard cap) and one call summarizes most of it."""
    path.mkdir(parents=True, exist_ok=True)
    with SessionStore.open(path, create=True) as store:
        store.create_session(
            SESSION,
            config=CompactionConfig(
                compaction_model=f"anthropic:{MODEL}",
                compaction_threshold_tokens=2_000,
                compaction_hard_cap_tokens=HARD_CAP,
                compaction_max_summary_tokens=MAX_SUMMARY,
                compaction_preserve_recent_turns=2,
            ),
        )
        manager = store.manager(SESSION, cache=None)
        for turn in scripted_session(21, 12):
            for message in turn:
                manager.append(message)
    return path


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "METIS_"))}
    return {**clean, "ANTHROPIC_API_KEY": KEY}


def compact(ws: Path, server: MessagesAPIServer, *extra: str, timeout: float = GUARD_S):
    return run_cli(
        "compact", SESSION, "-w", str(ws),
        "--set", f"summarizer.base_url={server.base_url}", *extra,
        env=env(), timeout=timeout,
    )  # fmt: skip


def spent(ws: Path) -> Decimal:
    with SessionStore.open(ws) as store:
        return store.session_info(SESSION).spent_usd


def no_traceback(text: str) -> None:
    assert "Traceback" not in text and 'File "' not in text, text


def test_a_5_mb_summary_is_cut_to_the_calls_budget_and_the_history_stays_under_its_cap(
    tmp_path: Path, server: MessagesAPIServer
) -> None:
    ws = workspace(tmp_path / "ws")
    server.script(ok("the summary goes on. " * 250_000, 100, MAX_SUMMARY))  # 5.25 MB
    done = compact(ws, server)
    assert done.returncode == 0, done.stderr
    no_traceback(done.stderr)
    found = CUT.search(done.stdout)
    assert found and "summary_over_budget" in done.stdout, done.stdout
    budget = int(found.group(1).replace(",", ""))
    assert 0 < budget <= MAX_SUMMARY
    with SessionStore.open(ws) as store:
        info = store.session_info(SESSION)
        snapshot = store.snapshot(SESSION)
        summaries = [
            (m, t)
            for m, t in zip(snapshot.messages, snapshot.tokens, strict=True)
            if m.metadata.compaction_span is not None
        ]
        record = store.compactions(SESSION)[-1].record
    assert info.total_tokens <= HARD_CAP, info.total_tokens
    [(summary, tokens)] = summaries
    assert tokens <= budget + 40  # the summary's header line is all it adds
    assert f"\n[summary cut to {budget:,} tokens]\n" in summary.text()
    assert any(note.startswith("summary_over_budget") for note in record.notes)
    # 5 MB spelled with 500 reported output tokens cannot be: charged at the request's bound.
    assert "usage_implausible" in done.stdout
    assert Decimal(0) < info.spent_usd < Decimal("0.05")


LIES: dict[str, tuple[Behaviour, str]] = {
    "output_10e15": (ok("a short summary", 100, 10**15), "over the request's max_tokens"),
    "input_10e15": (ok("a short summary", 10**15, 20), "the request's size could hold"),
    "negative_output": (ok("a short summary", 100, -20), "is not a count"),
    "negative_cache_read": (ok("a short summary", 100, 20, cache_read=-5), "is not a count"),
    "smaller_than_text": (ok("word " * 3_000, 100, 1), "for a summary of"),
}


@pytest.mark.parametrize("lie", LIES)
def test_usage_that_cannot_be_true_is_charged_at_the_requests_bound_and_said(
    tmp_path: Path, server: MessagesAPIServer, lie: str
) -> None:
    ws = workspace(tmp_path / "ws")
    behaviour, why = LIES[lie]
    server.script(behaviour)
    done = compact(ws, server)
    assert done.returncode == 0, done.stderr
    no_traceback(done.stderr)
    note = next(line for line in done.stdout.splitlines() if "usage_implausible" in line)
    assert why in note and "charged at the request's bound $" in note
    bound = Decimal(note.rsplit("$", 1)[1])
    # The bound: the request's input as the engine counts it and max_tokens of output, at the
    # model's price; never the billion dollars the usage claimed, never nothing.
    price = price_for(MODEL)
    assert cost_of(price, 0, 1) < bound < cost_of(price, 50_000, MAX_SUMMARY)
    assert spent(ws) == bound
    with SessionStore.open(ws) as store:
        record = store.compactions(SESSION)[-1].record
    assert record.usage is None and record.cost_usd == bound
    assert any(n.startswith("usage_implausible") for n in record.notes)
    # The store stays readable: status shows the session, its spend and the note.
    status = run_cli("status", str(ws), env=env(), timeout=GUARD_S)
    assert status.returncode == 0, status.stderr
    assert f"${bound}" in status.stdout and "usage_implausible" in status.stdout


def test_a_billed_empty_answer_with_absurd_usage_fails_charged_at_the_bound(
    tmp_path: Path, server: MessagesAPIServer
) -> None:
    ws = workspace(tmp_path / "ws")
    server.script(empty_text("", 100, 10**15))
    done = compact(ws, server)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert "validation_failed" in line and "usage_implausible" in line, line
    assert Decimal(0) < spent(ws) < Decimal("0.05")


def test_a_trickling_server_cannot_stretch_the_whole_call_deadline(
    tmp_path: Path, server: MessagesAPIServer
) -> None:
    ws = workspace(tmp_path / "ws")
    # Every attempt (the SDK retries) trickles: unbounded, three bodies of ~350 bytes at 0.5 s
    # a byte would take minutes; the guard below is 90 s, the deadline 2 s.
    server.default = trickle(0.5)
    done = compact(ws, server, "--set", "summarizer.timeout_s=2")
    assert done.returncode == 1, done.stdout
    [line] = done.stderr.strip().splitlines()
    assert "compaction call failed (network)" in line and "within 2.0s" in line, line
    assert "summarizer.timeout_s" in line
    assert spent(ws) == 0
    with SessionStore.open(ws) as store:
        assert store.session_info(SESSION).revision == 0  # nothing written


BAD_URLS = {
    "stray_bracket": ("http://[::1", "not a valid URL"),
    "no_scheme": ("127.0.0.1:8080/v1", "not an http:// or https:// URL"),
    "unsupported_scheme": ("ftp://127.0.0.1/v1", "scheme 'ftp' is not supported"),
    "credentials": ("https://admin:hunter2-password@127.0.0.1", "user name or password"),
    "bad_port": ("http://127.0.0.1:99999", "not a valid URL"),
    "no_host": ("http:///v1", "no host"),
}


@pytest.mark.parametrize("case", BAD_URLS)
@pytest.mark.parametrize("where", ["flag", "sdk_environment"])
def test_a_bad_base_url_is_one_line_naming_the_setting(
    tmp_path: Path, case: str, where: str
) -> None:
    ws = workspace(tmp_path / "ws")
    url, why = BAD_URLS[case]
    if where == "flag":
        args = ["--set", f"summarizer.base_url={url}"]
        run_env, setting = env(), "summarizer.base_url"
    else:  # the SDK's own variable, read when no base URL is set
        args, run_env, setting = [], {**env(), "ANTHROPIC_BASE_URL": url}, "ANTHROPIC_BASE_URL"
    done = run_cli("compact", SESSION, "-w", str(ws), *args, env=run_env, timeout=GUARD_S)
    assert done.returncode == 2, (done.stdout, done.stderr)
    no_traceback(done.stderr)
    [line] = done.stderr.strip().splitlines()
    assert setting in line and why in line, line
    assert "hunter2" not in done.stdout + done.stderr and "admin" not in line


async def test_a_trickled_call_is_a_clean_failed_call_event_in_the_engine(
    tmp_path: Path, server: MessagesAPIServer
) -> None:
    from engine import CompactionFailed
    from engine.summarizers.anthropic_summarizer import AnthropicSummarizer

    ws = workspace(tmp_path / "ws")
    server.default = trickle(0.3)
    with SessionStore.open(ws) as store:
        summarizer = AnthropicSummarizer(
            MODEL, api_key=KEY, base_url=server.base_url, timeout_s=1.0, max_retries=2
        )
        manager = store.manager(SESSION, summarizer=summarizer, cache=None)
        outcome = await manager.before_turn("t-trickle")
        await manager.aclose()
        # At the hard cap the failed call falls back to truncation (§3.4), and says why.
        assert (outcome.failure_mode, outcome.error_class) == ("adapter_error", "network")
        assert "within 1.0s" in (outcome.error_message or "")
        failed = [e.event for e in store.events(SESSION) if isinstance(e.event, CompactionFailed)]
        assert failed and failed[-1].error_class == "network"
        assert manager.spent_usd == 0
