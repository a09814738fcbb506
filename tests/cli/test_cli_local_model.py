"""A local model server as the compaction model, from the command line: `simulate` runs the
simulated metis dev against a Messages API server on 127.0.0.1 with no key anywhere."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli_process import run_cli
from tests.engine.test_local_endpoint import CREDENTIAL_VARIABLES
from tests.messages_api_server import MessagesAPIServer, ok


def test_simulate_compacts_through_a_local_server_without_a_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARIABLES}
    env["HOME"] = str(tmp_path)  # no on-disk profile either
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with MessagesAPIServer(default=ok("LOCAL MODEL SUMMARY", 2_000, 150)) as server:
        done = run_cli(
            "simulate",
            str(workspace),
            "--model",
            "anthropic:qwen2.5-coder:7b",
            "--set",
            f"summarizer.base_url={server.base_url}",
            "--set",
            "summarizer.price.input_per_mtok=0",
            "--set",
            "summarizer.price.output_per_mtok=0",
            "--turns",
            "12",
            "--pace",
            "0",
            "--reruns",
            "0",
            env=env,
        )
    assert done.returncode == 0, done.stderr
    calls = [r for r in server.requests if r.path == "/v1/messages"]
    assert calls, done.stdout
    assert all("authorization" not in r.headers and "x-api-key" not in r.headers for r in calls)
    assert "qwen2.5-coder:7b" in done.stdout
