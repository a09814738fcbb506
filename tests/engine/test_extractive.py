"""`local:extractive`: what it keeps, that it never overruns its budget (counted on the whole
§4.2 message, as the engine counts), and that it repeats nothing and leaves no empty heading."""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.messages import (
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.policy.splice import summary_text
from engine.summarizers.base import SummaryRequest
from engine.summarizers.extractive import NAME, ExtractiveSummarizer
from engine.summarizers.extractive_pool import build_pool
from engine.tokens import estimate_text_tokens

SUMMARIZER = ExtractiveSummarizer()


def summarize(
    span: list[Message], max_tokens: int = 2_000, *, start: int = 0, instructions: str | None = None
) -> str:
    request = SummaryRequest(
        span=tuple(span),
        prompt_version="1.0.0",
        max_tokens=max_tokens,
        instructions=instructions,
        span_start=start,
    )
    return asyncio.run(SUMMARIZER.summarize(request)).text


def text(message_id: str, role: Role, body: str) -> Message:
    return Message(id=message_id, role=role, content=(TextContentBlock(body),))


def call(message_id: str, name: str, args: dict[str, object], output: str, *, error: bool = False):
    use = Message(
        id=message_id,
        role=Role.ASSISTANT,
        content=(TextContentBlock("Running it."), ToolUseContentBlock(message_id, name, args)),
    )
    result = Message(
        id=f"{message_id}r",
        role=Role.USER,
        content=(ToolResultContentBlock(tool_use_id=message_id, content=output, is_error=error),),
    )
    return [use, result]


def bullets(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.startswith("- ")]


def assert_well_formed(summary: str) -> None:
    """No line twice; every heading has at least one line under it."""
    lines = bullets(summary)
    assert len(lines) == len(set(lines)), summary
    rows = summary.splitlines()
    for index, row in enumerate(rows):
        if row.endswith(":") and not row.startswith("- "):
            assert index + 1 < len(rows) and rows[index + 1].startswith("- "), summary


def test_keeps_tool_output_facts_decisions_constraints_and_files() -> None:
    span = [
        text("u0", Role.USER, "The service will not start on staging. Find out why."),
        *call("c1", "bash", {"cmd": "redis-server --version"}, "Redis server v=7.2.4 sha=0"),
        *call("c2", "read_file", {"path": "deploy/app.ini"}, "[app]\nworkers = 6\nport = 8443\n"),
        *call(
            "c3",
            "bash",
            {"cmd": "systemctl start app"},
            "Job for app.service failed: bind: address already in use",
            error=True,
        ),
        text("a4", Role.ASSISTANT, "Another process holds the port."),
        text("u5", Role.USER, "Never touch the nginx config, ops manage it."),
        *call("c6", "bash", {"cmd": "sudo fuser -k 8443/tcp && systemctl start app"}, "started"),
        text(
            "a7",
            Role.ASSISTANT,
            "We went with killing the stale worker because the unit file has no restart guard.",
        ),
        *call("c8", "edit_file", {"path": "deploy/app.service"}, "edited deploy/app.service"),
        text("a9", Role.ASSISTANT, "Still to do: add ExecStartPre to deploy/app.service."),
    ]
    summary = summarize(span, 400)
    for needle in (
        "7.2.4",  # a version printed by a command
        "8443",  # a port read from a config file
        "address already in use",  # the error message
        "fuser -k",  # the command that worked
        "nginx",  # the user's constraint
        "because the unit file",  # the decision with its reason
        "deploy/app.service",  # the file touched
        "ExecStartPre",  # the open task
    ):
        assert needle in summary, (needle, summary)
    assert_well_formed(summary)


def test_the_same_failing_test_line_is_kept_once() -> None:
    failure = "FAILED tests/test_api.py::test_create - KeyError: 'id'"
    span = [text("u0", Role.USER, "Make the API tests pass.")]
    for run in range(3):
        span += call(f"c{run}", "bash", {"cmd": "pytest -q"}, f"..F..\n{failure}\n1 failed")
    summary = summarize(span)
    assert summary.count(failure) == 1
    assert_well_formed(summary)


def test_a_tool_heavy_span_has_no_empty_tool_heading_and_counts_what_it_left_out() -> None:
    span = [text("u0", Role.USER, "Tidy the repository.")]
    for index in range(60):
        span += call(
            f"c{index}", "bash", {"cmd": f"git mv old/m{index}.py new/m{index}.py"}, "renamed"
        )
    summary = summarize(span, 200)
    assert_well_formed(summary)
    assert "more lines not kept)" in summary.splitlines()[-1]
    assert estimate_text_tokens(summary_text(NAME, 0, summary)) <= 200


def test_the_users_instructions_come_first() -> None:
    span = [text("u0", Role.USER, "hello"), text("a1", Role.ASSISTANT, "hi")]
    summary = summarize(span, instructions="keep the schema discussion")
    assert summary.splitlines()[2:4] == [
        "Kept at the user's request:",
        "- keep the schema discussion",
    ]


def test_it_is_deterministic() -> None:
    span = [
        text("u0", Role.USER, "Port 8080 or 9090? Decide. Don't use 80."),
        *call("c1", "bash", {"cmd": "ss -ltn"}, "LISTEN 0 128 *:8080\nLISTEN 0 128 *:5432"),
        text("a2", Role.ASSISTANT, "Decision: 9090, since 8080 is taken."),
    ]
    assert summarize(span, 120) == summarize(span, 120)


# --- the budget holds for any span -------------------------------------------------------------

_words = st.text(
    alphabet=st.sampled_from(
        list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789./_-:=;?!,'\"`()[]\n\té€漢🙂\x1b")
    ),
    max_size=400,
)
_phrases = st.sampled_from(
    [
        "Decision: we use sqlite because it is embedded.",
        "Please don't edit tests/test_x.py.",
        "Never touch prod.",
        "Next: update docs/README.md.",
        "FAILED tests/test_a.py::test_b - AssertionError: 1 != 2",
        "version = 1.2.3",
        "port = 8080",
        "We went with X because Y.",
        "x" * 900,
    ]
)
_body = st.lists(st.one_of(_words, _phrases), min_size=1, max_size=4).map(" ".join)


@st.composite
def spans(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for index in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "call"]))
        if kind == "call":
            name = draw(st.sampled_from(["bash", "read_file", "edit_file", "grep"]))
            key = draw(st.sampled_from(["cmd", "path", "pattern"]))
            messages += call(
                f"m{index}",
                name,
                {key: draw(_body)},
                draw(_body),
                error=draw(st.booleans()),
            )
        else:
            role = Role.USER if kind == "user" else Role.ASSISTANT
            messages.append(text(f"m{index}", role, draw(_body)))
    return messages


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    span=spans(),
    max_tokens=st.integers(1, 3_000),
    start=st.integers(0, 10**9),
    instructions=st.one_of(st.none(), _body),
)
def test_the_wrapped_summary_never_exceeds_max_tokens(
    span: list[Message], max_tokens: int, start: int, instructions: str | None
) -> None:
    summary = summarize(span, max_tokens, start=start, instructions=instructions)
    assert estimate_text_tokens(summary) <= max_tokens
    wrapper_tokens = estimate_text_tokens(summary_text(NAME, start, "")) + 20
    if max_tokens >= wrapper_tokens:  # below that not even the wrapper fits
        assert estimate_text_tokens(summary_text(NAME, start, summary)) <= max_tokens
    assert_well_formed(summary)
    assert "\x1b" not in summary


def test_an_earlier_summary_in_the_span_keeps_its_sections() -> None:
    first = summarize(
        [
            text("u0", Role.USER, "Never push to main directly. Fix the login bug."),
            text("a1", Role.ASSISTANT, "Decision: we keep bcrypt because the hashes are stored."),
        ]
    )
    earlier = Message(
        id="s0",
        role=Role.USER,
        content=(TextContentBlock(summary_text(NAME, 0, first)),),
        metadata=MessageMetadata(synthetic=True, compaction_span=(0, 2)),
    )
    filler = Message(
        id="f0",
        role=Role.ASSISTANT,
        content=(TextContentBlock("Understood. I will continue from the note above."),),
        metadata=MessageMetadata(synthetic=True),
    )
    later = [text("u1", Role.USER, "Now the signup form."), text("a2", Role.ASSISTANT, "On it.")]
    summary = summarize([earlier, filler, *later], 300)
    constraints = summary.split("User constraints and preferences:\n")[1].split("\n\n")[0]
    assert "- Never push to main directly." in constraints
    assert "- Decision: we keep bcrypt because the hashes are stored." in summary
    assert "COMPACTION_SUMMARY" not in summary
    assert "continue from the note above" not in summary
    assert_well_formed(summary)


def test_codex_argv_commands_and_patched_files() -> None:
    patch = "*** Begin Patch\n*** Update File: src/app/main.rs\n@@\n-a\n+b\n*** End Patch"
    span = [
        text("u0", Role.USER, "Bump the crate and fix the build."),
        *call("c1", "shell", {"command": ["bash", "-lc", "cargo --version"]}, "cargo 1.79.0"),
        *call("c2", "apply_patch", {"input": patch}, "Success. Updated the following files"),
    ]
    summary = summarize(span, 300)
    assert "cargo --version → cargo 1.79.0" in summary
    assert "src/app/main.rs (edited)" in summary
    assert "bash -lc" not in summary


def test_it_stops_at_filler_instead_of_filling_its_budget_and_keeps_the_one_off_facts() -> None:
    span: list[Message] = [text("u0", Role.USER, "Get the nightly export green again.")]
    for i in range(40):  # the same chatter about a different helper each time
        span.append(text(f"a{i}", Role.ASSISTANT, f"I looked at helper_{i} and it seems fine."))
        span.append(text(f"u{i + 1}", Role.USER, "Sounds good, go on."))
    span.append(
        text("a-fact", Role.ASSISTANT, "The upstream API rejects batches over 750 entries.")
    )
    span.append(
        text("u-fact", Role.USER, "The production bucket is ledger-prod-eu-west-1; never touch it.")
    )
    summary = summarize(span, max_tokens=2_000)
    assert "750" in summary and "ledger-prod-eu-west-1" in summary
    # A model given 2,000 tokens for this would not write 2,000: nor does this.
    assert estimate_text_tokens(summary) < 400
    assert_well_formed(summary)


def test_people_named_with_a_role_verb_or_an_apposition_go_under_people() -> None:
    span = [
        text("u0", Role.USER, "Cut it today. Ines manages the data platform, so ask first."),
        text("u1", Role.USER, "Jun (the release manager) signs off every rollout."),
        text("u2", Role.USER, "Ask Renata, she owns the store console."),
        text("u3", Role.USER, "Mei-Lin is the QA lead who wrote the fuzzing harness."),
        text("u4", Role.USER, "Go ahead."),
    ]
    summary = summarize(span)
    people = summary.split("People:", 1)[1].split("\n\n", 1)[0]
    for name in ("Ines", "Jun", "Renata", "Mei-Lin"):
        assert name in people, summary


def test_a_corrected_value_with_its_unit_is_not_taken_for_a_bare_number_already_said() -> None:
    # "120" is already in the summary from the load test's rate; "120 seconds" is the new TTL.
    span = [
        text("u0", Role.USER, "Get the cache TTL right before the canary."),
        text("u1", Role.USER, "Never set the TTL above 300, prices go stale."),
        text("u2", Role.USER, "Keep the load test at 120 rps."),
        text("u3", Role.USER, "Dmitri says 300 is too stale; use 120 seconds for the TTL."),
        text("u4", Role.USER, "Thanks, go on."),
    ]
    summary = summarize(span)
    assert "120 seconds" in summary, summary


def test_a_long_config_read_is_told_by_its_odd_settings_not_the_first_of_its_crowd() -> None:
    crowd = [f"retries_{i}: {100 + i * 7}" for i in range(40)]
    config = "\n".join([*crowd[:20], "instance_class: db.r6g.xlarge", *crowd[20:]])
    span = [
        text("u0", Role.USER, "Size the new database."),
        *call("c1", "Read", {"file_path": "/infra/main.yaml"}, config),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span)
    assert "db.r6g.xlarge" in summary, summary
    assert "retries_0" not in summary


def test_commit_subjects_of_a_log_are_not_errors_and_a_junit_failure_is_one() -> None:
    log = "\n".join(f"{i:07x}a Improve error message (sam)" for i in range(1, 12))
    junit = "CheckoutTest > applies promo FAILED\norg.junit.ComparisonFailure: was:<2099>"
    span = [
        text("u0", Role.USER, "Check the release branch."),
        *call("c1", "Bash", {"command": "git log --oneline"}, log),
        *call("c2", "Bash", {"command": "./gradlew test"}, junit),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span)
    errors = summary.split("Errors:", 1)[1].split("\n\n", 1)[0]
    assert "Improve error message" not in errors and "git log --oneline → failed" not in summary
    assert "ComparisonFailure" in errors, summary


def test_a_long_read_told_by_an_odd_setting_weighs_as_a_result_not_as_a_body() -> None:
    crowd = [f"retries_{i}: {100 + i * 7}" for i in range(40)]
    config = "\n".join([*crowd[:20], "instance_class: db.r6g.xlarge", *crowd[20:]])
    span = [text("u0", Role.USER, "Size the new database.")]
    span += call("c1", "Read", {"file_path": "/infra/main.yaml"}, config)
    span += call("c2", "Read", {"file_path": "/infra/other.yaml"}, "\n".join(crowd))
    span.append(text("u1", Role.USER, "Thanks."))
    tools = {c.text.split(" → ")[0]: c for c in build_pool(tuple(span), None) if "→" in c.text}
    odd, body = tools["Read /infra/main.yaml"], tools["Read /infra/other.yaml"]
    assert "db.r6g.xlarge" in odd.text
    assert odd.priority - body.priority >= 100  # the body read is discounted; the config is not


def test_a_value_corrected_in_the_same_message_is_said_only_as_corrected() -> None:
    span = [
        text("u0", Role.USER, "Restore the orders table."),
        text("a0", Role.ASSISTANT, "Ready to backfill."),
        text("u1", Role.USER, "Backfill from June 3. Sorry, correction: from June 1."),
    ]
    summary = summarize(span)
    assert "June 1" in summary and "June 3" not in summary, summary


def test_an_earlier_request_restated_with_a_new_value_ranks_below_the_restatement() -> None:
    older = "Start the staged rollout at 10% on Thursday."
    newer = "Jun says 10% is too much, make the first stage 2.5% on Monday."
    span = [text("u0", Role.USER, older), text("a0", Role.ASSISTANT, "Planned.")]
    span += [text("u1", Role.USER, newer), text("a1", Role.ASSISTANT, "Updated.")]
    span += [text("u2", Role.USER, "Thanks, go on.")]
    pool = {c.text: c for c in build_pool(tuple(span), None)}
    assert pool[older].priority < pool[newer].priority - 100


def test_a_codex_shell_result_is_read_without_its_envelope() -> None:
    listing = "\n".join(f"-rw-r--r-- 1 root root {100 + i} Mar 3 2025 job_{i}" for i in range(6))
    envelope = {"output": listing, "metadata": {"exit_code": 0, "duration_seconds": 0.4}}
    text_envelope = "Exit code: 0\nWall time: 0.3 seconds\nOutput:\nfastly-cli 10.17.2"
    span = [
        text("u0", Role.USER, "Look at the cron jobs."),
        *call(
            "c1", "shell", {"command": ["bash", "-lc", "ls -la /etc/cron.d"]}, json.dumps(envelope)
        ),
        *call("c2", "shell", {"command": ["bash", "-lc", "fastly version"]}, text_envelope),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span, 2_000)
    assert '{"output"' not in summary and "metadata" not in summary, summary
    assert "Wall time" not in summary
    assert "fastly version → fastly-cli 10.17.2" in summary, summary


def test_an_error_line_seen_again_with_other_numbers_is_said_once() -> None:
    first = "Dec 4 04:55:21 batch-01 fx-rates[59988]: ERROR fetching rates: ReadTimeout(read=10)"
    later = "Dec 7 00:35:56 batch-01 fx-rates[49173]: ERROR fetching rates: ReadTimeout(read=10)"
    span = [
        text("u0", Role.USER, "Why are the rates stale?"),
        *call("c1", "Bash", {"command": "grep fx-rates /var/log/syslog"}, first, error=True),
        *call("c2", "Bash", {"command": "grep fx-rates /var/log/syslog.1"}, later, error=True),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span, 2_000)
    errors = summary.split("Errors:", 1)[1].split("\n\n", 1)[0]
    assert errors.count("ReadTimeout") == 1 and "Dec 7" in errors, summary


def test_a_decision_keeps_its_reason_past_the_usual_line_limit_when_the_budget_is_roomy() -> None:
    decision = (
        "For the guard I'll take a Postgres advisory lock at the start of the run rather than "
        "a Redis lock: the job already holds a Postgres connection for its whole run, and the "
        "lock is released automatically if the process dies, whereas a Redis lock with a TTL "
        "can expire in the middle of a long run and let a second runner in."
    )
    assert len(decision) > 240  # past the longest line any other kind gets
    span = [
        text("u0", Role.USER, "Stop the reminders from running twice."),
        text("a0", Role.ASSISTANT, decision),
        text("u1", Role.USER, "Go on."),
    ]
    assert "let a second runner in" in summarize(span, 2_000)
    assert "let a second runner in" not in summarize(span, 300)  # a small budget clips it


def test_the_answer_to_a_users_question_is_kept_with_its_reason() -> None:
    answer = (
        "The older account, the lower id. It carries the billing history and past orders; the "
        "newer twin was created only because login failed."
    )
    span = [
        text("u0", Role.USER, "Merge the colliding accounts."),
        text("a0", Role.ASSISTANT, "Found 1286 colliding groups."),
        text("u1", Role.USER, "When two accounts collide, which one survives?"),
        text("a1", Role.ASSISTANT, answer),
        text("u2", Role.USER, "Go on."),
    ]
    summary = summarize(span, 2_000)
    assert "The older account, the lower id. It carries the billing history" in summary, summary
    assert summary.count("billing history") == 1  # its second sentence is not said again


def test_a_conclusion_that_relates_what_other_lines_name_is_kept_on_a_roomy_budget() -> None:
    # Every concrete term of the conclusions (checkout-api, HPA, CPU, scale-down) is in the
    # user's last request, which goes first: they are kept for what they relate where the
    # budget is roomy, and left out where each line must bring a term of its own.
    span = [
        text("u0", Role.USER, "Look into the autoscaler."),
        text(
            "a1",
            Role.ASSISTANT,
            "It is a feedback loop between warming CPU and the HPA scale-down, not traffic.",
        ),
        text("a2", Role.ASSISTANT, "The soak test showed that checkout-api warms slowly."),
        text("u1", Role.USER, "checkout-api flaps and the HPA targets CPU; scale-down is 0."),
    ]
    roomy = summarize(span, 2_000)
    assert "feedback loop" in roomy and "warms slowly" in roomy, roomy
    small = summarize(span, 300)
    assert "feedback loop" not in small and "warms slowly" not in small, small


def test_an_answer_after_narration_or_beside_a_reminder_is_still_the_answer() -> None:
    question = "When two accounts collide, which one survives?"
    reminder = "<system-reminder>Todo list is empty.</system-reminder>"
    answer = "The older account survives, the one with the lower id and the billing history."
    asked = Message(
        id="u1", role=Role.USER, content=(TextContentBlock(question), TextContentBlock(reminder))
    )
    span = [
        text("u0", Role.USER, "Merge the colliding accounts."),
        asked,
        *call("c1", "Read", {"file_path": "accounts/merge.py"}, "def merge(a, b): ..."),
        text("a2", Role.ASSISTANT, answer),
        text("u2", Role.USER, "Go on."),
    ]
    roomy = build_pool(tuple(span), None, line_limit=240, wide_limit=360)
    assert any(c.section == "Decisions" and c.text == answer for c in roomy), roomy
    # On a small budget the answer's sentences compete as what they are, not as an answer.
    small = build_pool(tuple(span), None, line_limit=180)
    assert not any(c.section == "Decisions" and c.text == answer for c in small), small


def test_a_task_that_says_not_what_is_a_task_and_show_that_asked_for_is_no_conclusion() -> None:
    task = "Still to do: migrate the users table, not the orders table."
    asked = "Let me show that file next."
    span = [
        text("u0", Role.USER, "Finish the migration."),
        text("a0", Role.ASSISTANT, task),
        text("a1", Role.ASSISTANT, asked),
        text("a2", Role.ASSISTANT, "That's not the cause of the lag."),
        text("u1", Role.USER, "Go on."),
    ]
    pool = {c.text: c.section for c in build_pool(tuple(span), None)}
    assert pool[task] == "Open tasks"
    assert pool.get(asked) != "Decisions"
    assert pool["That's not the cause of the lag."] == "Decisions"


def test_a_long_error_line_seen_again_with_a_wider_pid_is_still_said_once() -> None:
    tail = "ERROR fetching rates from the upstream provider: ReadTimeout(read=10) " * 5
    first = f"Dec 4 04:55:21 batch-01 fx-rates[5998]: {tail}"
    later = f"Dec 7 00:35:56 batch-01 fx-rates[49173]: {tail}"
    span = [
        text("u0", Role.USER, "Why are the rates stale?"),
        *call("c1", "Bash", {"command": "grep fx /var/log/syslog"}, first, error=True),
        *call("c2", "Bash", {"command": "grep fx /var/log/syslog.1"}, later, error=True),
        text("u1", Role.USER, "Go on."),
    ]
    errors = summarize(span, 2_000).split("Errors:", 1)[1].split("\n\n", 1)[0]
    assert errors.count("fx-rates[") == 1 and "49173" in errors, errors


def test_a_codex_exit_status_is_a_failure_and_a_read_json_file_is_not_an_envelope() -> None:
    failed = json.dumps({"output": "rollout: 2 of 3 updated", "metadata": {"exit_code": 1}})
    config = json.dumps({"output": "dist", "minify": True})
    span = [
        text("u0", Role.USER, "Deploy the api."),
        *call("c1", "shell", {"command": ["bash", "-lc", "./deploy.sh api"]}, failed),
        *call("c2", "Read", {"file_path": "build.json"}, config),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span, 2_000)
    assert "./deploy.sh api → failed" in summary, summary
    assert "Read build.json → dist" not in summary, summary


def test_a_conclusion_restated_in_the_same_words_is_said_once() -> None:
    span = [
        text("u0", Role.USER, "Why do batch ids collide?"),
        text("a0", Role.ASSISTANT, "The cause: new_batch_id is just the millisecond timestamp."),
        text(
            "a1",
            Role.ASSISTANT,
            "The cause is that new_batch_id is just the millisecond timestamp.",
        ),
        text("u1", Role.USER, "Go on."),
    ]
    summary = summarize(span, 2_000)
    assert summary.count("millisecond timestamp") == 1, summary


def test_a_cause_ruled_out_or_in_is_a_conclusion() -> None:
    ruled = "The JDK 21 upgrade in the same release is a red herring; the heap cut is what changed."
    span = [
        text("u0", Role.USER, "Why did GC pauses double after the release?"),
        text("a0", Role.ASSISTANT, "G1 picks 4 MB regions at a 5 GB heap."),
        text("a1", Role.ASSISTANT, ruled),
        text("u1", Role.USER, "Go on."),
    ]
    pool = {c.text: c for c in build_pool(tuple(span), None)}
    assert pool[ruled].section == "Decisions", pool[ruled]
