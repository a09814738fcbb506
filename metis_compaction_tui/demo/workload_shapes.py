"""Two more shapes of the scripted workload (demo.workload), for the strategy benchmark.

- `long_outputs`: the agent reads whole files and service logs and runs the suite verbosely, so
  tool outputs carry most of the tokens (a turn adds about 3k tokens instead of 1k).
- `chatty`: a design discussion with few tools; most turns are an ask and a long answer.

The default `mixed` shape is the workload as it always was; these reuse its tasks, its planted facts
and its seeded generator, so a shape is as deterministic as the default.
"""

from __future__ import annotations

import random

SHAPES = ("mixed", "long_outputs", "chatty")

_SERVICES = ("import-worker", "ledger-api", "reconciler", "exporter")
_LEVELS = ("INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARNING")
_EVENTS = (
    "processed batch {n} ({m} rows) in {ms} ms",
    "committed offset {n} for partition {m}",
    "cache hit ratio {m}% over the last {n} lookups",
    "retrying upstream call after {ms} ms (attempt {m})",
    "flushed {n} entries to the ledger in {ms} ms",
    "health check ok ({ms} ms)",
    "opened connection {n} to the database pool (size {m})",
)

_DISCUSSION = (
    "One thing I keep going back and forth on is whether {function} should own the validation or "
    "whether the caller should. If it owns it, every caller gets the same behaviour for free, but "
    "the error messages get generic. If the caller owns it, we duplicate checks in three places.",
    "I'd rather not add another configuration flag for this. We already have too many knobs in "
    "{path} that nobody remembers the reason for, and each one doubles what the tests must cover.",
    "Thinking about the rollout: if we ship the change to {function} behind the existing release "
    "train, support will see the corrected numbers on the next nightly run and may ask why older "
    "reports differ. We should write a short note for them.",
    "My worry with the quick fix is that it hides the real problem. The data coming in is messy, "
    "and {function} has been quietly compensating for it. I'd like us to log what we correct.",
    "Let me push back a little on the plan. A targeted fix in {path} is fine, but the same pattern "
    "shows up in the exporter, and we will be back here in a month if we only fix one of them.",
    "For the record, the original design assumed one bank and one file format. Both assumptions "
    "are gone now, so some of the odd code in {path} is history rather than intent.",
)

_ANSWERS = (
    "That's a fair concern. Looking at {path}, {function} is called from two places, and both "
    "already validate their input loosely, so moving the checks into {function} would not change "
    "their behaviour, only make it consistent. I'd keep the messages specific by naming the field.",
    "Agreed on not adding a flag. The behaviour we want is the corrected one everywhere; a flag "
    "would only let the old bug live on in one deployment. I'd write the change so that the test "
    "in {test_path} pins the new behaviour and the old one cannot come back unnoticed.",
    "On the rollout: a short note for support is cheap and saves a round of tickets. I can draft "
    "it from the commit message once the fix lands, with one before-and-after example.",
    "Logging the corrections is a good idea, as long as it is one line per batch and not one per "
    "row, or the nightly job's log will grow by a few megabytes. I'd count them and log the count.",
    "You're right that the exporter has the same pattern. I'd fix {function} first, with its test, "
    "and open a follow-up for the exporter rather than widen this change; that keeps review small.",
    "That history explains a lot. I'd leave a comment in {path} saying which assumption a piece of "
    "code came from, so the next person does not mistake a workaround for a requirement.",
)


def service_log(rng: random.Random, lines: tuple[int, int] = (110, 190)) -> str:
    """A service's recent log: mostly routine lines, a warning or an error now and then."""
    service = rng.choice(_SERVICES)
    second = rng.randint(0, 3_000)
    out = []
    for _ in range(rng.randint(*lines)):
        second += rng.randint(0, 3)
        level = rng.choice(_LEVELS)
        event = rng.choice(_EVENTS).format(
            n=rng.randint(1, 9_999), m=rng.randint(1, 99), ms=rng.randint(2, 900)
        )
        if rng.random() < 0.02:
            level, event = "ERROR", f"upstream returned 503 after {rng.randint(100, 900)} ms"
        day = rng.randint(10, 28)
        clock = f"{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        pid = rng.randint(100, 999)
        out.append(f"2026-03-{day:02d}T{clock}Z {level:<7} {service}[{pid}] {event}")
    return "\n".join(out)


def long_plan(rng: random.Random, first: bool, last: bool) -> list[list[str]]:
    """Tool cycles for a `long_outputs` turn: whole files, logs and verbose test runs."""
    if first:
        return [["read_file"], ["read_log"], ["run_tests"]]
    if last:
        return [["run_tests"]]
    kinds = ("read_file", "read_log", "run_tests", "grep", "edit_file")
    cycles = rng.choices((1, 2, 3), (3, 4, 2))[0]
    return [[rng.choices(kinds, (4, 3, 3, 1, 2))[0]] for _ in range(cycles)]


def chatty_plan(rng: random.Random, first: bool, last: bool) -> list[list[str]]:
    """Tool cycles for a `chatty` turn: usually none, sometimes one small one."""
    if first:
        return [["grep"]]
    if rng.random() < 0.8:
        return []
    return [[rng.choice(("grep", "edit_file", "run_tests"))]]


def discussion(rng: random.Random, fields: dict[str, str]) -> tuple[str, str]:
    """A paragraph the user adds to an ask, and the paragraph the assistant answers it with."""
    index = rng.randrange(len(_DISCUSSION))
    return _DISCUSSION[index].format(**fields), _ANSWERS[index].format(**fields)
