"""A real HTTP server speaking enough of the Anthropic Messages API for the summarizer tests.

It runs stdlib `http.server` in a background thread on 127.0.0.1, so the real `anthropic` SDK is
exercised end to end: its headers, retries, timeouts and body parsing. Each request takes the next
scripted behaviour (`ok`, `status`, `delay`, `truncated`, `empty_text`, `raw`, `realistic`,
`trickle`: a byte at a time, `echo`: an error repeating the request's headers); once
the script runs out every request gets the server's `default` behaviour.

`realistic` answers as a paid model would be billed: the text comes from the server's `responder`
(any function of the request body), and the usage is counted from the request itself, through a
`PromptCache` that keeps what earlier requests wrote at their cache breakpoints, so a request that
repeats a cached prefix reports it as `cache_read_input_tokens` and the rest as written or input.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

import msgspec

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"

# The error `type` the real API puts in its error body, by status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class Ok(msgspec.Struct, frozen=True, tag="ok"):
    text: str = "summary"
    input_tokens: int = 100  # also the count_tokens answer when this behaviour serves one
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class Realistic(msgspec.Struct, frozen=True, tag="realistic"):
    """Text from the server's `responder`, usage counted from the request (see PromptCache)."""


class Status(msgspec.Struct, frozen=True, tag="status"):
    code: int
    body: bytes | None = None  # None: the API's usual error JSON for this status
    headers: dict[str, str] = {}


class Delay(msgspec.Struct, frozen=True, tag="delay"):
    seconds: float
    then: Ok | Status = Ok()


class Truncated(msgspec.Struct, frozen=True, tag="truncated"):
    """A 200 whose Content-Length promises a whole message but only half of it is sent."""

    text: str = "summary"


class EmptyText(msgspec.Struct, frozen=True, tag="empty_text"):
    text: str = ""  # "" or whitespace: billed usage, nothing to keep
    input_tokens: int = 100
    output_tokens: int = 1


class Raw(msgspec.Struct, frozen=True, tag="raw"):
    """Any body at all, for malformed JSON and wrong-shaped messages."""

    body: bytes
    code: int = 200
    content_type: str = "application/json"


class Trickle(msgspec.Struct, frozen=True, tag="trickle"):
    """A 200 whose body comes one byte every `interval_s`: each read gets a byte in time, so a
    per-read timeout never fires, and the whole body takes len(body) * interval_s."""

    interval_s: float = 0.5
    text: str = "summary"


class Echo(msgspec.Struct, frozen=True, tag="echo"):
    """An error whose message repeats every request header it got, as a careless proxy's does."""

    code: int = 401


Behaviour = Ok | Status | Delay | Truncated | EmptyText | Raw | Realistic | Trickle | Echo


def ok(
    text: str = "summary",
    input_tokens: int = 100,
    output_tokens: int = 20,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
) -> Ok:
    return Ok(text, input_tokens, output_tokens, cache_read, cache_write)


def realistic() -> Realistic:
    return Realistic()


# -- prompt caching, as billing sees it -----------------------------------------------------------

# The provider looks for an earlier cache entry at each breakpoint and up to 20 blocks before it.
CACHE_LOOKBACK_BLOCKS = 20


def count_tokens(text: str) -> int:
    """The engine's documented estimator (len/3), so the server and the workload agree."""
    return math.ceil(len(text) / 3)


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return json.dumps(block)
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_use":
        return f"{block.get('name', '')}\n{json.dumps(block.get('input', {}), sort_keys=True)}"
    if block.get("type") == "tool_result":
        content = block.get("content", "")
        return content if isinstance(content, str) else json.dumps(content)
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


def request_blocks(body: dict[str, object]) -> list[tuple[str, int, bool]]:
    """The request as the cache sees it: (canonical bytes, tokens, is a breakpoint) per block, in
    cache order: tools, then system, then each message's content blocks."""
    out: list[tuple[str, int, bool]] = []

    def add(kind: str, block: object) -> None:
        breakpoint = isinstance(block, dict) and "cache_control" in block
        bare = (
            {k: v for k, v in block.items() if k != "cache_control"}
            if isinstance(block, dict)
            else block
        )
        out.append(
            (kind + json.dumps(bare, sort_keys=True), count_tokens(_block_text(block)), breakpoint)
        )

    for tool in body.get("tools") or []:  # type: ignore[union-attr]
        add("tool:", tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or []:  # type: ignore[union-attr]
        add("system:", block)
    for message in body.get("messages") or []:  # type: ignore[union-attr]
        content = message.get("content") if isinstance(message, dict) else None
        role = message.get("role") if isinstance(message, dict) else "?"
        for block in [content] if isinstance(content, str) else content or []:
            add(f"{role}:", block)
    return out


class PromptCache:
    """What earlier requests wrote at their breakpoints (prefix hashes), and the usage a new
    request bills against it: cache read up to the longest cached prefix found at a breakpoint
    (or within CACHE_LOOKBACK_BLOCKS before one), cache write from there to the last breakpoint,
    full input after it. Entries never expire (every turn is within the cache's lifetime)."""

    def __init__(self) -> None:
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def bill(self, body: dict[str, object], *, write: bool = True) -> tuple[int, int, int]:
        """(input_tokens, cache_read_input_tokens, cache_creation_input_tokens) for `body`."""
        blocks = request_blocks(body)
        hashes: list[str] = []
        running = hashlib.sha256()
        for data, _, _ in blocks:
            running.update(data.encode())
            hashes.append(running.copy().hexdigest())
        tokens = [t for _, t, _ in blocks]
        breakpoints = [i for i, (_, _, bp) in enumerate(blocks) if bp]
        with self._lock:
            read_end = 0  # blocks[:read_end] are read from the cache
            for bp in breakpoints:
                for end in range(bp, max(-1, bp - CACHE_LOOKBACK_BLOCKS - 1), -1):
                    if hashes[end] in self._written:
                        read_end = max(read_end, end + 1)
                        break
            last = breakpoints[-1] + 1 if breakpoints else 0
            if write:
                for bp in breakpoints:
                    self._written.add(hashes[bp])
        read = sum(tokens[:read_end])
        written = sum(tokens[read_end:last]) if last > read_end else 0
        fresh = sum(tokens[max(last, read_end) :])
        return fresh, read, written


def status(code: int, body: bytes | None = None, headers: dict[str, str] | None = None) -> Status:
    return Status(code, body, headers or {})


def delay(seconds: float, then: Ok | Status | None = None) -> Delay:
    return Delay(seconds, then or Ok())


def trickle(interval_s: float = 0.5, text: str = "summary") -> Trickle:
    return Trickle(interval_s, text)


def echo(code: int = 401) -> Echo:
    return Echo(code)


def truncated(text: str = "summary") -> Truncated:
    return Truncated(text)


def empty_text(text: str = "", input_tokens: int = 100, output_tokens: int = 1) -> EmptyText:
    return EmptyText(text, input_tokens, output_tokens)


def raw(body: bytes, code: int = 200, content_type: str = "application/json") -> Raw:
    return Raw(body, code, content_type)


def malformed_json() -> Raw:
    return Raw(b'{"id": "msg_broken", "type": "message", "content": [{"type": "te')


class RecordedRequest(msgspec.Struct, frozen=True):
    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: object  # the parsed JSON, or None when the body was not JSON
    raw_body: bytes


def message_json(
    text: str,
    input_tokens: int,
    output_tokens: int,
    model: str,
    cache_read: int = 0,
    cache_write: int = 0,
) -> bytes:
    return json.dumps(
        {
            "id": "msg_test_0001",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        }
    ).encode()


def error_json(code: int) -> bytes:
    error_type = _ERROR_TYPES.get(code, "api_error")
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": f"scripted {code}"}}
    ).encode()


class MessagesAPIServer:
    """`with MessagesAPIServer() as server:` then point the SDK at `server.base_url`."""

    def __init__(
        self,
        default: Behaviour | None = None,
        *,
        responder: Callable[[dict[str, object]], str] | None = None,
    ) -> None:
        self.default: Behaviour = default or Ok()
        # `realistic` behaviour: the text a model would answer, and the provider's prompt cache.
        self.responder = responder or (lambda body: "summary")
        self.prompt_cache = PromptCache()
        self._script: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        # Set on close so a handler sleeping in `delay` stops at once instead of holding shutdown.
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> list[RecordedRequest]:
        """The requests once `count` have arrived: a client that gave up (a timeout) may have
        sent one the server thread has not read yet on a loaded machine."""
        deadline = time.monotonic() + timeout_s
        while len(requests := self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return requests

    def script(self, *behaviours: Behaviour) -> None:
        """Replace the script: the next requests get these behaviours, in order."""
        with self._lock:
            self._script = deque(behaviours)

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _next_behaviour(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(request)
            return self._script.popleft() if self._script else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes; without this, Nagle plus delayed ACK
                # adds ~40 ms to every response.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw_body = self.rfile.read(length) if length else b""
                try:
                    body: object = json.loads(raw_body) if raw_body else None
                except ValueError:
                    body = None
                path = self.path.split("?", 1)[0]
                request = RecordedRequest(
                    method="POST",
                    path=path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=body,
                    raw_body=raw_body,
                )
                behaviour = server._next_behaviour(request)
                try:
                    if isinstance(behaviour, Echo):
                        self._echo(behaviour.code, request.headers)
                        return
                    self._serve(path, body, behaviour)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nobody is listening any more

            def _echo(self, code: int, headers: dict[str, str]) -> None:
                said = "; ".join(f"{name}: {value}" for name, value in headers.items())
                message = f"rejected request with headers {said}"
                payload = json.dumps(
                    {"type": "error", "error": {"type": "api_error", "message": message}}
                ).encode()
                self._send(code, payload)

            def _trickle(self, payload: bytes, interval_s: float) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.flush()
                for index in range(len(payload)):
                    if server._closing.wait(interval_s):
                        break
                    self.wfile.write(payload[index : index + 1])
                    self.wfile.flush()
                self.close_connection = True

            def _serve(self, path: str, body: object, behaviour: Behaviour) -> None:
                if path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
                    self._send(404, error_json(404))
                    return
                if isinstance(behaviour, Delay):
                    if server._closing.wait(behaviour.seconds):
                        self.close_connection = True
                        return
                    behaviour = behaviour.then
                model = body.get("model", "unknown") if isinstance(body, dict) else "unknown"
                if isinstance(behaviour, Status):
                    payload = (
                        behaviour.body if behaviour.body is not None else error_json(behaviour.code)
                    )
                    self._send(behaviour.code, payload, behaviour.headers)
                elif isinstance(behaviour, Raw):
                    self._send(behaviour.code, behaviour.body, content_type=behaviour.content_type)
                elif isinstance(behaviour, Trickle):
                    payload = message_json(behaviour.text, 100, 20, model)
                    self._trickle(payload, behaviour.interval_s)
                elif isinstance(behaviour, Truncated):
                    full = message_json(behaviour.text, 100, 20, model)
                    self._send(200, full, send_bytes=len(full) // 2)
                elif path == COUNT_TOKENS_PATH:
                    tokens = behaviour.input_tokens if isinstance(behaviour, Ok | EmptyText) else 0
                    if isinstance(behaviour, Realistic) and isinstance(body, dict):
                        tokens = sum(server.prompt_cache.bill(body, write=False))
                    self._send(200, json.dumps({"input_tokens": tokens}).encode())
                elif isinstance(behaviour, Realistic):
                    assert isinstance(body, dict)
                    text = server.responder(body)
                    fresh, read, written = server.prompt_cache.bill(body)
                    payload = message_json(
                        text, fresh, count_tokens(text), model, cache_read=read, cache_write=written
                    )
                    self._send(200, payload)
                elif isinstance(behaviour, Ok):
                    payload = message_json(
                        behaviour.text,
                        behaviour.input_tokens,
                        behaviour.output_tokens,
                        model,
                        behaviour.cache_read_input_tokens,
                        behaviour.cache_creation_input_tokens,
                    )
                    self._send(200, payload)
                elif isinstance(behaviour, EmptyText):
                    payload = message_json(
                        behaviour.text, behaviour.input_tokens, behaviour.output_tokens, model
                    )
                    self._send(200, payload)

            def _send(
                self,
                code: int,
                payload: bytes,
                headers: dict[str, str] | None = None,
                *,
                content_type: str = "application/json",
                send_bytes: int | None = None,
            ) -> None:
                self.send_response(code)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.send_header("request-id", f"req_test_{next(_request_ids)}")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                if send_bytes is None:
                    self.wfile.write(payload)
                    return
                # Half a body, then a hard close: the client sees the body end early.
                self.wfile.write(payload[:send_bytes])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

        return Handler


_request_ids = itertools.count(1)

# Sockets bound but never listening: connecting to them is refused at once, and holding them for
# the life of the process keeps anyone else from taking the port.
_refusing_sockets: list[socket.socket] = []


def refused_base_url() -> str:
    """A 127.0.0.1 URL where nothing listens, so every connection is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    _refusing_sockets.append(sock)
    return f"http://127.0.0.1:{sock.getsockname()[1]}"
