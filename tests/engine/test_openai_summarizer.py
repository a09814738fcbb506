"""The `openai:<model>` summarizer against a real OpenAI-compatible server on 127.0.0.1, through the
real `openai` SDK (the optional extra): the request, the usage at the stated price, the key rule,
every failure's class, and the one-line error when the extra is not installed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.manager import SessionManager
from engine.prompt import SYSTEM_PROMPT
from engine.summarizers import (
    StatedPrice,
    SummarizerSettings,
    make_summarizer,
    price_origin,
)
from engine.summarizers.base import ErrorClass, SummarizerError
from engine.summarizers.openai_summarizer import OpenAISummarizer
from engine.summarizers.pricing import CallUsage, price_from_rates, usage_cost
from tests.cli_process import ROOT
from tests.engine.test_anthropic_summarizer import REQUEST
from tests.engine.test_local_endpoint import CREDENTIAL_VARIABLES
from tests.history_builders import tool_session
from tests.messages_api_server import refused_base_url
from tests.openai_api_server import OpenAIAPIServer, ok, raw, status

KEY = "sk-test-openai-compatible-SECRET-0042"
MODEL = "openai:llama3.2:3b"
PRICE = StatedPrice(
    input_per_mtok=Decimal("2"), output_per_mtok=Decimal("8"), cache_read_per_mtok=Decimal("0.5")
)
ZERO = StatedPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


def summarizer_for(base_url: str, **options: object) -> OpenAISummarizer:
    made = make_summarizer(
        MODEL, SummarizerSettings(model=MODEL, base_url=base_url, price=PRICE, timeout_s=5.0)
    )
    assert isinstance(made, OpenAISummarizer)
    for name, value in options.items():
        setattr(made, name, value)
    return made


async def failure_of(summarizer: OpenAISummarizer) -> SummarizerError:
    with pytest.raises(SummarizerError) as raised:
        await summarizer.summarize(REQUEST)
    await summarizer.aclose()
    return raised.value


async def test_the_call_sends_the_prompt_and_prices_the_usage_at_the_stated_rates(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    answer = ok("COMPATIBLE SUMMARY", prompt_tokens=1_200, completion_tokens=150, cached_tokens=400)
    with OpenAIAPIServer(default=answer) as server:
        summarizer = summarizer_for(server.base_url)
        result = await summarizer.summarize(REQUEST)
        await summarizer.aclose()
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert isinstance(request.body, dict)
    assert request.body["model"] == "llama3.2:3b"
    assert request.body["max_tokens"] == REQUEST.max_tokens
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user" and "Rename foo() to bar()" in user["content"]
    # prompt_tokens counts the cached part: 800 fresh at $2, 400 read at $0.5, 150 out at $8.
    usage = CallUsage(input_tokens=800, cache_read_tokens=400, output_tokens=150)
    assert result.usage == usage
    expected = usage_cost(
        price_from_rates("llama3.2:3b", Decimal(2), Decimal(8), cache_read_per_mtok=Decimal("0.5")),
        usage,
    )
    assert result.cost_usd == expected == Decimal("0.0030")
    assert (result.text, result.model, result.tokens_in, result.tokens_out) == (
        "COMPATIBLE SUMMARY",
        MODEL,
        1_200,
        150,
    )


async def test_a_local_server_gets_no_key_and_never_the_placeholder(no_credentials: None) -> None:
    with OpenAIAPIServer(default=ok("LOCAL")) as server:
        summarizer = summarizer_for(server.base_url)
        result = await summarizer.summarize(REQUEST)
        await summarizer.aclose()
    assert result.text == "LOCAL"
    (request,) = server.requests
    assert "authorization" not in request.headers
    assert all("no-key" not in value for value in request.headers.values())


async def test_a_remote_endpoint_without_a_key_is_auth_naming_the_variable(
    no_credentials: None,
) -> None:
    summarizer = summarizer_for("http://192.0.2.1:9/v1")  # TEST-NET-1: never contacted
    error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.AUTH
    assert "OPENAI_API_KEY" in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    ("code", "error_class"),
    [
        (400, ErrorClass.CAPABILITY),
        (401, ErrorClass.AUTH),
        (404, ErrorClass.CAPABILITY),
        (429, ErrorClass.RATE_LIMIT),
        (500, ErrorClass.OVERLOADED),
        (503, ErrorClass.OVERLOADED),
    ],
)
async def test_each_status_has_its_class(
    no_credentials: None, code: int, error_class: ErrorClass
) -> None:
    with OpenAIAPIServer(default=status(code, headers={"retry-after": "0.01"})) as server:
        summarizer = summarizer_for(server.base_url)
        summarizer._client = summarizer._client.with_options(max_retries=0)  # type: ignore[union-attr]
        error = await failure_of(summarizer)
    assert error.error_class is error_class
    assert f"HTTP {code}" in str(error) and str(error).startswith(MODEL)


async def test_a_key_the_server_echoes_is_redacted(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    echo = f'{{"error": {{"message": "bad key {KEY}", "type": "invalid_request_error"}}}}'
    with OpenAIAPIServer(default=status(401, echo.encode())) as server:
        error = await failure_of(summarizer_for(server.base_url))
    assert error.error_class is ErrorClass.AUTH
    assert KEY not in str(error) and "[redacted]" in str(error)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"not json at all", "not a"),
        (b'{"id": "x", "object": "chat.completion", "choices": []}', "usage"),
        (
            b'{"id": "x", "object": "chat.completion", "choices": [], '
            b'"usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}',
            "no choices",
        ),
        (
            b'{"id": "x", "object": "chat.completion", "choices": [], "usage": '
            b'{"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": '
            b'{"cached_tokens": 9}}}',
            "usage",
        ),
    ],
)
async def test_an_unusable_body_is_a_bad_response(
    no_credentials: None, body: bytes, words: str
) -> None:
    with OpenAIAPIServer(default=raw(body)) as server:
        error = await failure_of(summarizer_for(server.base_url))
    assert error.error_class is ErrorClass.BAD_RESPONSE
    assert words in str(error)


async def test_a_refused_connection_is_network(no_credentials: None) -> None:
    summarizer = summarizer_for(refused_base_url() + "/v1")
    summarizer._client = summarizer._client.with_options(max_retries=0)  # type: ignore[union-attr]
    error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.NETWORK


async def test_a_session_compacts_through_a_local_server_at_a_stated_zero_price(
    no_credentials: None,
) -> None:
    with OpenAIAPIServer(default=ok("LOCAL SESSION SUMMARY", 4_000, 300)) as server:
        settings = SummarizerSettings(
            model=MODEL, base_url=server.base_url, price=ZERO, timeout_s=5.0
        )
        manager = SessionManager(
            history=tool_session(6, size=300),
            compaction_model=MODEL,
            summarizer_settings=settings,
            compaction_threshold_tokens=300,
            compaction_hard_cap_tokens=5_000,
            compaction_preserve_recent_turns=2,
        )
        assert price_origin(MODEL, settings) == "price you set ($0)"
        outcome = await manager.before_turn("t1")
        await manager.aclose()
    assert outcome.status == "compacted" and manager.spent_usd == 0
    assert outcome.record is not None and outcome.record.model == MODEL
    assert len(server.requests) == 1


def test_an_unpriced_model_is_refused_when_the_manager_is_built() -> None:
    with pytest.raises(ConfigError, match=r"summarizer\.price"):
        SessionManager(compaction_model=MODEL)


def test_without_the_extra_the_command_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    """`openai` made unimportable in a real CLI process, as in an install without the extra."""
    program = (
        "import sys; sys.modules['openai'] = None; "
        "from metis_compaction_tui.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            program,
            "simulate",
            str(tmp_path),
            "--model",
            MODEL,
            "--turns",
            "2",
            "--set",
            "summarizer.base_url=http://127.0.0.1:9/v1",
            "--set",
            "summarizer.price.input_per_mtok=0",
            "--set",
            "summarizer.price.output_per_mtok=0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'metis-compaction-tui[openai]'" in done.stderr
    assert list(tmp_path.iterdir()) == []  # refused before the store was made


async def test_a_trickling_server_cannot_stretch_the_whole_call_deadline() -> None:
    """The SDK's timeout is per read and each retry gets a new one: a server sending a byte at a
    time never trips it. summarizer.timeout_s bounds the whole call, retries included."""
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(200):  # 60 s at most, long past the deadline
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:  # the client hung up: the deadline did its work
                return

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        summarizer = OpenAISummarizer(
            "llama3.2:3b",
            price=PRICE.model_price("llama3.2:3b"),
            api_key=KEY,
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            timeout_s=1.0,
            max_retries=2,
        )
        with pytest.raises(SummarizerError) as failed:
            await summarizer.summarize(REQUEST)
        await summarizer.aclose()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert failed.value.error_class is ErrorClass.NETWORK
    assert "the whole call, retries included" in str(failed.value)
