"""The §10 workload's contract, and quick runs of the tests/perf scripts so they cannot rot.

The scripts' figures are not asserted (they are measurements, printed as tables); only that they
run, exit 0 and print their tables.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from engine import SessionManager, estimate_message_tokens, validate_history
from metis_compaction_tui.demo.workload import (
    DEFAULT_TURNS,
    PlantedFact,
    planted_facts,
    scripted_session,
)

pytestmark = pytest.mark.slow  # minutes of real processes; not in the fast subset

ROOT = Path(__file__).resolve().parents[2]
PERF = ROOT / "tests" / "perf"
SEEDS = (0, 1, 2, 3, 4)


# -- engine/workload.py ---------------------------------------------------------------------------


def test_same_seed_same_session_other_seed_other_session() -> None:
    first = list(scripted_session(7, 30))
    assert first == list(scripted_session(7, 30))
    assert first != list(scripted_session(8, 30))
    assert planted_facts(7) == planted_facts(7)


def test_a_shorter_session_is_a_prefix_of_a_longer_one() -> None:
    short = [m for turn in scripted_session(3, 20) for m in turn]
    long = [m for turn in scripted_session(3, DEFAULT_TURNS) for m in turn]
    assert short == long[: len(short)]
    assert planted_facts(3, 20) == [f for f in planted_facts(3) if f.turn <= 20]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_prefix_validates(seed: int) -> None:
    messages = []
    for turn in scripted_session(seed):
        assert turn[0].role.value == "user" and turn[-1].role.value == "assistant"
        assert not turn[-1].tool_use_ids()
        messages.extend(turn)
        validate_history(messages, allow_pending_tool_use=False)  # each turn ends complete
    for end in range(1, len(messages) + 1):  # and every message-level prefix is valid too
        validate_history(messages[end - 1 : end], previous=messages[end - 2] if end > 1 else None)


async def test_the_session_replays_through_a_session_manager() -> None:
    manager = SessionManager(compaction_model="local:extractive")
    compacted = 0
    for turn in scripted_session(0):
        compacted += (await manager.before_turn()).status == "compacted"
        for message in turn:
            manager.append(message)  # validates each message against the one before
    validate_history(manager.messages)
    assert compacted >= 1


@pytest.mark.parametrize("seed", SEEDS)
def test_about_1k_tokens_a_turn_and_30k_near_turn_30(seed: int) -> None:
    per_turn = [sum(map(estimate_message_tokens, turn)) for turn in scripted_session(seed)]
    assert 850 <= statistics.mean(per_turn) <= 1_300
    running, crossed = 0, None
    for number, tokens in enumerate(per_turn, start=1):
        running += tokens
        if running >= 30_000:
            crossed = number
            break
    assert crossed is not None and 22 <= crossed <= 36


@pytest.mark.parametrize("seed", SEEDS)
def test_planted_facts_appear_at_their_turns_and_nowhere_else(seed: int) -> None:
    facts = planted_facts(seed)
    turns = list(scripted_session(seed))
    assert len(facts) >= 10
    assert len({f.turn for f in facts}) == len(facts)
    for fact in facts:
        carriers = [
            (number, m)
            for number, turn in enumerate(turns, start=1)
            for m in turn
            if fact.statement in m.text()
        ]
        assert len(carriers) == 1, fact.fact_id
        number, message = carriers[0]
        assert number == fact.turn
        assert message.role.value == fact.role
        assert all(k.lower() in fact.statement.lower() for k in fact.answer_keywords)
        others = "\n".join(m.text() for turn in turns for m in turn if m is not message).lower()
        # at least one keyword is specific: a fact is recovered only if its own words survive
        assert any(k.lower() not in others for k in fact.answer_keywords), fact.fact_id


def test_planted_fact_is_a_msgspec_struct() -> None:
    fact = planted_facts(0)[0]
    assert isinstance(fact, PlantedFact)
    assert msgspec.json.decode(msgspec.json.encode(fact), type=PlantedFact) == fact
    assert {"fact_id", "turn", "statement", "question", "answer_keywords"} <= set(
        PlantedFact.__struct_fields__
    )


# -- the perf scripts, --quick --------------------------------------------------------------------


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a perf script in its own process group; on timeout the whole group is killed, so an
    app it started (bench_app runs a real one) is not left spinning after the test fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}  # offline
    command = [sys.executable, *args]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = process.communicate()
        pytest.fail(f"{command} still running after {timeout:.0f} s (process group killed)")
    finally:
        kill_group(process)  # anything the script left behind in its group
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def test_workload_cost_quick(tmp_path: Path) -> None:
    chart = tmp_path / "curve.svg"
    done = run_script(str(PERF / "workload_cost.py"), "--quick", "--offline", "--svg", str(chart))
    assert done.returncode == 0, done.stderr
    for header in (
        "## local:extractive: the §7 table, measured",
        "| phase ",
        "### Compactions",
        "### Results against the targets",
        "| break-even turn",
        "| facts recovered after each compaction",
        "| rerun, same workspace",
    ):
        assert header in done.stdout
    assert chart.read_text(encoding="utf-8").startswith("<svg")


def test_bench_speed_quick() -> None:
    done = run_script(str(PERF / "bench_speed.py"), "--quick")
    assert done.returncode == 0, done.stderr
    assert "| benchmark " in done.stdout
    for row in (
        "plan a turn (ledger kept) vs trim_messages",
        "incremental: append 1 msg + plan vs from scratch",
        "cache key vs bare sha256 of its bytes",
        "cache hit vs miss (local server)",
        "LRU: put past max_rows",
    ):
        assert row in done.stdout


def test_bench_transcript_quick() -> None:
    done = run_script(str(PERF / "bench_transcript.py"), "--quick")
    assert done.returncode == 0, done.stderr + done.stdout
    for line in (
        "## Import of 5 MB",
        "## First frame: the app on the 5 MB log",
        "## Per append while tailing (20 turns of 5 records each)",
        "ratio of medians 5 MB / 1 MB:",
        "write → on screen median",
    ):
        assert line in done.stdout, line


def test_bench_app_quick() -> None:
    done = run_script(str(PERF / "bench_app.py"), "--quick")
    assert done.returncode == 0, done.stderr + done.stdout
    for line in (
        "## The app: first frame, memory, live updates",
        "| headless first frame (run_test; imports not counted)",
        "| real process: spawn -> last row on the terminal",
        "| headless RSS peak (ru_maxrss, whole process)",
        "| Python heap peak while loading (tracemalloc)",
        "### Live updates: 300 messages appended by another process at 200/s",
        "feed thread: StoreSource.poll",
        "UI thread: apply (on_session_grew)",
        "commit -> end of that frame",
        "messages per update (median · mean · max)",
        "The real process exited 0 after `q`.",
    ):
        assert line in done.stdout, line


def test_bench_statusline_quick() -> None:
    done = run_script(str(PERF / "bench_statusline.py"), "--quick")
    assert done.returncode == 0, done.stderr + done.stdout
    for line in (
        "## statusline: one call against a bare interpreter start",
        "| bare `python -c pass` (1 MB)",
        "| this: statusline, one turn appended (10 MB)",
        "| first call on 10 MB < 2 s (the line)",
        "| first call on 10 MB: figures ready (detached refresher)",
    ):
        assert line in done.stdout, line


def test_bench_cli_quick() -> None:
    done = run_script(str(PERF / "bench_cli.py"), "--quick")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "| `status WS` |" in done.stdout and "| `statusline` (garbage stdin) |" in done.stdout


def test_startup_bench_quick() -> None:
    done = run_script(str(PERF / "startup_bench.py"), "--quick", "--calls", "2")
    assert done.returncode == 0, done.stderr + done.stdout
    for line in (
        "## Start-up against a bare interpreter (this checkout)",
        "| 10,000 messages, one appended before each call",
        "SessionStore.open + manager() at 10,000 messages, in process: best",
        "| `statusline WS`  ",
        "| `cache list WS`  ",
    ):
        assert line in done.stdout, line


def test_run_all_collects_markdown(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = run_script(
        str(PERF / "run_all.py"), "--quick", "--only", "workload_cost", "--out", str(out)
    )
    assert done.returncode == 0, done.stdout
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Performance results")
    assert "## workload_cost.py" in text and "| phase " in text
