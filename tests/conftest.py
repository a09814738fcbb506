"""Fixtures shared by every test folder: real parts, never mocks.

- `server`: the local Messages API (tests/messages_api_server.py) on 127.0.0.1, default replies.
- `demo_template` / `demo_workspace`: the demo workspace (a real store and cache), built once per
  run and copied fresh for each test.
- `simulated_workspace`: a workspace where the simulated metis dev ran one session that compacted.
- `store`: a fresh real store with one session `SID` under the small test knobs.
- after every test, any worker process it spawned (tests/processes.py) is killed with its group.
- every test has its own user config folder (XDG_CONFIG_HOME, inherited by the CLI subprocesses):
  workspace trust (engine.workspace_trust) is recorded there, never in the user's real one.
- the run's temporary folder is its own (TMPDIR), and the run fails if anything the project names
  (metis-*) is left in it: a demo, a load run or an app that does not clean up after itself.
- METIS_LEAK_REPORT=FILE: after each test module, the threads, child processes and open file
  descriptors still there are appended to FILE (what to look at when a late test starves).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
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


# What the project's code and scripts create in the temporary folder (metis-demo-, metis-load-,
# metis-app-errors-...): none of it may outlive the run.
PROJECT_TEMP_PREFIX = "metis-"


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_in_the_temp_folder() -> Iterator[None]:
    outer = tempfile.gettempdir()
    private = tempfile.mkdtemp(prefix="tests-", dir=outer)
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = tempfile.tempdir = private  # subprocesses inherit it too
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before
        tempfile.tempdir = None
        left = sorted(p.name for p in Path(private).iterdir() if p.name.startswith("metis-"))
        shutil.rmtree(private, ignore_errors=True)
    assert not left, f"the tests left these in the temporary folder: {left}"


def _children(pid: int) -> list[str]:
    """Every live descendant of `pid`, as "pid command" (from /proc; [] where there is none)."""
    found: list[str] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            try:
                command = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            found.append(f"{kid} {command.decode(errors='replace').strip()[:160]}")
            found += _children(kid)
    return found


@pytest.fixture(scope="module", autouse=True)
def _leak_report(request: pytest.FixtureRequest) -> Iterator[None]:
    report = os.environ.get("METIS_LEAK_REPORT")
    yield
    if not report:
        return
    threads = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.append(f"{fd}->{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            pass  # the listing's own descriptor, closed by now
    with open(report, "a", encoding="utf-8") as out:
        out.write(f"== {request.node.nodeid}\n")
        out.write(f"threads ({len(threads)}): {threads}\n")
        out.write(f"children: {_children(os.getpid())}\n")
        out.write(f"fds ({len(fds)}): {fds}\n")
