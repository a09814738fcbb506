"""A real HTTP server speaking enough of the OpenAI chat completions API for the `openai:` tests.

Like tests/messages_api_server.py it runs stdlib `http.server` in a thread on 127.0.0.1, so the
real `openai` SDK is exercised end to end (headers, retries, body parsing), the way Ollama,
llama.cpp's server, vLLM or LM Studio answer it on a developer's machine. Each request takes the
next scripted behaviour (`ok`, `status`, `raw`); once the script runs out, the `default`.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

import msgspec

CHAT_PATH = "/v1/chat/completions"


class Ok(msgspec.Struct, frozen=True, tag="ok"):
    text: str = "summary"
    prompt_tokens: int = 100  # everything read, the cached part included (as the API counts)
    completion_tokens: int = 20
    cached_tokens: int | None = None  # None: no prompt_tokens_details (most local servers)


class Status(msgspec.Struct, frozen=True, tag="status"):
    code: int
    body: bytes | None = None
    headers: dict[str, str] = {}


class Raw(msgspec.Struct, frozen=True, tag="raw"):
    body: bytes
    code: int = 200


Behaviour = Ok | Status | Raw


def ok(
    text: str = "summary",
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int | None = None,
) -> Ok:
    return Ok(text, prompt_tokens, completion_tokens, cached_tokens)


def status(code: int, body: bytes | None = None, headers: dict[str, str] | None = None) -> Status:
    return Status(code, body, headers or {})


def raw(body: bytes, code: int = 200) -> Raw:
    return Raw(body, code)


def completion_json(behaviour: Ok, model: str) -> bytes:
    usage: dict[str, object] = {
        "prompt_tokens": behaviour.prompt_tokens,
        "completion_tokens": behaviour.completion_tokens,
        "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
    }
    if behaviour.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": behaviour.cached_tokens}
    return json.dumps(
        {
            "id": "chatcmpl-test-0001",
            "object": "chat.completion",
            "created": 1_765_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": behaviour.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
    ).encode()


def error_json(code: int) -> bytes:
    return json.dumps(
        {"error": {"message": f"scripted {code}", "type": "invalid_request_error", "code": None}}
    ).encode()


class RecordedRequest(msgspec.Struct, frozen=True):
    path: str
    headers: dict[str, str]  # names lowercased
    body: object  # the parsed JSON, or None


class OpenAIAPIServer:
    """`with OpenAIAPIServer() as server:` then point the SDK at `server.base_url` (".../v1")."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self.default: Behaviour = default or Ok()
        self._script: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script = deque(behaviours)

    def __enter__(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def _next(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(request)
            return self._script.popleft() if self._script else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw_body = self.rfile.read(length) if length else b""
                try:
                    body: object = json.loads(raw_body) if raw_body else None
                except ValueError:
                    body = None
                path = self.path.split("?", 1)[0]
                behaviour = server._next(
                    RecordedRequest(
                        path=path,
                        headers={name.lower(): value for name, value in self.headers.items()},
                        body=body,
                    )
                )
                model = body.get("model", "unknown") if isinstance(body, dict) else "unknown"
                if path != CHAT_PATH:
                    self._send(404, error_json(404))
                elif isinstance(behaviour, Status):
                    payload = (
                        behaviour.body if behaviour.body is not None else error_json(behaviour.code)
                    )
                    self._send(behaviour.code, payload, behaviour.headers)
                elif isinstance(behaviour, Raw):
                    self._send(behaviour.code, behaviour.body)
                else:
                    self._send(200, completion_json(behaviour, model))

            def _send(
                self, code: int, payload: bytes, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
