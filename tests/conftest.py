"""Fixtures shared by every test folder: real parts, never mocks.

- `server`: the local Messages API (tests/messages_api_server.py) on 127.0.0.1, default replies.
- `demo_template` / `demo_workspace`: the demo workspace (a real store and cache), built once per
  run and copied fresh for each test.
- `simulated_workspace`: a workspace where the simulated metis dev ran one session that compacted.
- `store`: a fresh real store with one session `SID` under the small test knobs.
- after every test, any worker process it spawned (tests/processes.py) is killed with its group.
- every test has its own user config folder (XDG_CONFIG_HOME, inherited by the CLI subprocesses):
  workspace trust (engine.workspace_trust) is recorded there, never in the user's real one.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.store import SessionStore
from metis_compaction_tui.demo.simulator import Simulator
from metis_compaction_tui.demo.store import build_demo_workspace
from tests.history_builders import SID, SMALL_CONFIG
from tests.messages_api_server import MessagesAPIServer
from tests.processes import reap_all


@pytest.fixture
def server() -> Iterator[MessagesAPIServer]:
    with MessagesAPIServer() as running:
        yield running


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_workspace(tmp_path_factory.mktemp("demo") / "workspace")


@pytest.fixture
def demo_workspace(demo_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the demo workspace (store + cache) for each test."""
    target = tmp_path / "workspace"
    shutil.copytree(demo_template, target)
    return target


@pytest.fixture
def simulated_workspace(tmp_path: Path) -> Path:
    """One simulated metis dev session that has compacted (and a cache row or two)."""
    asyncio.run(Simulator(tmp_path, pace=0, turns=12, reruns=0, session_prefix="cli").run())
    return tmp_path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    opened = SessionStore.open(tmp_path, create=True)
    opened.create_session(SID, config=SMALL_CONFIG, title="a session")
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def _own_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh, empty user config folder per test: nothing is trusted until a test trusts it."""
    folder = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    yield
    reap_all()
