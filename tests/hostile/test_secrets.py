"""Secrets: an API key, a bearer token and an e-mail address in an error the server returns, in a
message, and in the environment never reach the events table, the cache file's bytes, the CLI's
output (`status --json`, `compact --dry-run`), log output, or the summarizer's repr."""

from __future__ import annotations

import json
import logging
import os
from decimal import Decimal
from pathlib import Path

import pytest

from engine import CompactionConfig
from engine.layout import metis_dir, store_path
from engine.store import SessionStore
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from metis_compaction_tui.demo.workload import scripted_session
from tests.cli_process import run_cli
from tests.messages_api_server import MessagesAPIServer, ok, status

KEY = "sk-ant-api03-HOSTILEKEY0123456789abcdef"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.HOSTILETOKEN.sig"
EMAIL = "victim.hostile@example.org"
SECRETS = (KEY, TOKEN, EMAIL, "HOSTILEKEY", "HOSTILETOKEN", "victim.hostile")
MODEL = "claude-haiku-4-5"
SESSION = "s"
ECHO = json.dumps(
    {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": f"invalid x-api-key: {KEY}; Authorization: Bearer {TOKEN}; owner {EMAIL}",
        },
    }
).encode()


def leaks(data: bytes | str) -> list[str]:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return [secret for secret in SECRETS if secret in text]


async def test_secrets_in_errors_and_messages_reach_no_event_cache_log_or_repr(
    tmp_path: Path, server: MessagesAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    store = SessionStore.open(tmp_path, create=True)
    store.create_session(
        SESSION,
        config=CompactionConfig(
            compaction_model=f"anthropic:{MODEL}",
            compaction_threshold_tokens=2_000,
            compaction_hard_cap_tokens=10_000_000,
            compaction_preserve_recent_turns=2,
            compaction_max_cost_per_session_usd=Decimal("1"),
        ),
    )
    summarizer = AnthropicSummarizer(MODEL, api_key=KEY, base_url=server.base_url, max_retries=0)
    assert not leaks(repr(summarizer)) and not leaks(str(vars(summarizer).keys()))
    manager = store.manager(SESSION, summarizer=summarizer)  # with the real cache file
    for number, turn in enumerate(scripted_session(31, 30)):
        for index, message in enumerate(turn):
            if number == 3 and index == 0:  # a user pastes their key, token and address
                from engine import Message, Role, TextContentBlock

                message = Message(
                    message.id,
                    Role.USER,
                    (TextContentBlock(f"my key is {KEY}, bearer {TOKEN}, mail {EMAIL}"),),
                )
            manager.append(message)
    for code in (401, 403, 500):  # the server echoes the secrets in its error
        server.script(status(code, body=ECHO))
        outcome = await manager.before_turn(f"t{code}")
        assert outcome.failure_mode == "adapter_error"
        assert not leaks(outcome.error_message or ""), outcome.error_message
    # A summary that repeats the pasted secrets (a model may): kept out of the cache too.
    server.script(ok(f"the user's key is {KEY}, bearer {TOKEN}, mail {EMAIL}"))
    done = await manager.before_turn("t-ok")
    assert done.status == "compacted"
    assert manager.cache is not None
    manager.cache.close()
    await manager.aclose()

    events = [e.event for e in store.events(SESSION)]
    assert events and not leaks(json.dumps([str(e) for e in events]))
    store.close()
    import sqlite3

    conn = sqlite3.connect(store_path(tmp_path))
    bodies = [row[0] for row in conn.execute("SELECT body FROM events")]
    conn.close()
    assert not leaks("\n".join(bodies)), "a secret reached the events table"
    metis = metis_dir(tmp_path)
    cache_bytes = b"".join(
        p.read_bytes() for p in metis.iterdir() if p.name.startswith("compaction-cache")
    )
    assert not leaks(cache_bytes), "a secret reached the cache file"
    assert not leaks(caplog.text), "a secret reached the log"
    # The key went to the server (that is its job) and nowhere else.
    assert any(KEY in json.dumps(r.headers) for r in server.requests)


def test_the_key_in_the_environment_never_reaches_cli_output(tmp_path: Path) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=CompactionConfig(compaction_model="local:extractive"))
        manager = store.manager(SESSION, cache=None)
        for turn in scripted_session(32, 20):
            for message in turn:
                manager.append(message)
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": TOKEN}
    outputs = []
    for args in (
        ["status", str(tmp_path), "--json"],
        ["status", str(tmp_path)],
        ["compact", SESSION, "-w", str(tmp_path), "--dry-run"],
        ["compact", SESSION, "-w", str(tmp_path), "--dry-run", "--json"],
        ["cache", "list", "-w", str(tmp_path), "--json"],
    ):
        done = run_cli(*args, env=env)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert not leaks("\n".join(outputs))
