"""`local:extractive`: a deterministic offline summarizer. No model, no key, no cost.

It builds a pool of candidate lines by kind (engine.summarizers.extractive_pool), takes them in
priority order while they fit the output budget, then renders the chosen lines by section in span
order. The budget is counted as the engine counts (engine.tokens) on the whole §4.2 message:
wrapper, headings and the "+N more" line included, so the spliced summary never exceeds
`max_tokens`.
The embedded default for the demo; never substituted for a named model."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import replace
from decimal import Decimal

from engine.events import redact
from engine.policy.splice import summary_text
from engine.summarizers.base import EXTRACTIVE_MODEL, SummaryRequest, SummaryResult
from engine.summarizers.extractive_pool import (
    DECISIONS,
    KEPT,
    LAST_ASK,
    SECTIONS,
    Candidate,
    build_pool,
    is_roomy,
    template_of,
    values_with_units,
)
from engine.tokens import CHARS_PER_TOKEN, estimate_text_tokens

NAME = EXTRACTIVE_MODEL
_PER_CHAR = 0.4  # priority points a character of summary costs
_PER_LINE = 8.0  # what each earlier line of the same section takes off a line's worth
# What each earlier line of the same template takes off a line's worth: "keep the signature of X
# unchanged" said for the tenth X tells less than a statement made once (a one-off fact).
_PER_TEMPLATE = 120.0
# A concrete term said once or twice in the span (a bucket name, a date, a limit) is news; one
# said on every other line (the module being worked on) is context. Worth per rare term, and
# what a line with nothing concrete in it loses (the last ask and kept instructions excepted).
_PER_RARE_TERM = 40.0
_RARE = 2
_VAGUE = 60.0
# Below this worth a line is filler (an aside, a question already answered, "→ ok" for the tenth
# command): the summary ends before it instead of filling its budget. Tuned on set A and the
# workloads: at 2,000 tokens the mixed and chatty first spans keep every planted fact they kept
# (6/6, 10/12) in 1,782 and 1,328 tokens instead of 1,970; at 600 a chatty fact goes.
_FILLER_WORTH = 500.0
_MORE = "\n(+{count} more lines not kept)"
# A line that relates terms said elsewhere (a conclusion) is kept while it brings this many words
# (of five letters or more) no chosen line has, where the budget is roomy; on a small one a line
# must bring a term of its own (at 300 tokens such lines took the room of facts: set D 16 -> 13
# of 24).
_WORD = re.compile(r"[^\W\d_]{5,}")
_OWN_WORDS = 3
# A line said inside a longer one already chosen is not said again; a shorter one ("ok", a bare
# file name) may mean something else where it stands.
_SAID_INSIDE = 16


class ExtractiveSummarizer:
    name = NAME

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        import asyncio  # loaded already: this runs in a coroutine

        started = time.perf_counter()
        # CPU work (most of a second on megabytes of logs): off the caller's event loop.
        text, tokens_in = await asyncio.to_thread(self._summarize_counted, request)
        return SummaryResult(
            text=text,
            model=NAME,
            tokens_in=tokens_in,
            tokens_out=estimate_text_tokens(text),
            cost_usd=Decimal(0),
            latency_ms=round((time.perf_counter() - started) * 1000),
        )

    def _summarize_counted(self, request: SummaryRequest) -> tuple[str, int]:
        text = self.summarize_now(request)
        return text, sum(estimate_text_tokens(m.text()) for m in request.span)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal(0)

    async def aclose(self) -> None:
        return None

    def summarize_now(self, request: SummaryRequest) -> str:
        wrapper = len(summary_text(NAME, request.span_start, ""))
        budget = request.max_tokens * CHARS_PER_TOKEN - wrapper
        header = f"Summary of {len(request.span)} earlier messages (extractive, offline)."
        if budget < len(header):
            # Too small for anything: what fits, and never an empty summary.
            return header[: max(budget, 0)] or header[: request.max_tokens * CHARS_PER_TOKEN]
        # A line may take a fifth of the budget, so one long line cannot crowd out the rest.
        line_limit = max(60, min(240, budget // 5))
        # Where the budget holds dozens of lines (a line's limit under a fifteenth of it), a
        # decision or a limit may run longer, to keep its reason, and a conclusion is kept for
        # what it relates (_fill's roomy).
        wide_limit = min(360, budget // 15)
        pool = build_pool(
            request.span, request.instructions, line_limit=line_limit, wide_limit=wide_limit
        )
        room = budget - len(header)
        more = len(_MORE.format(count=len(pool)))
        if room < more:  # no room to say what was left out: nothing beyond the header fits
            return header
        chosen = _fill(pool, room - more, roomy=is_roomy(line_limit, wide_limit))
        return _render(header, chosen, omitted=_omitted(pool, chosen))


def _fill(pool: list[Candidate], budget: int, *, roomy: bool = False) -> list[Candidate]:
    """Greedy by priority: each line that still fits and adds something is taken. A line whose
    concrete terms are all already in the summary adds nothing (same version, same path)."""
    chosen: list[Candidate] = []
    seen_text: set[str] = set()
    seen_identities: set[str] = set()
    covered_words: set[str] = set()
    covered: set[str] = set()
    open_sections: set[str] = set()
    used = 0
    # A long line costs room that shorter facts could use: it must be worth more to go first. And
    # each further line of one kind is worth a little less, so a long span's forty tool runs do not
    # crowd out every statement and decision.
    worth = {id(c): c.priority - _PER_CHAR * len(c.text) for c in pool}
    spread = Counter(term for c in pool for term in c.terms)
    shapes = Counter(template_of(c.text, c.section) for c in pool)
    for c in pool:
        # An instance of a repeated template (a log line) has unique values in its slots
        # (times, pids): news only when the line itself is one of a kind.
        if shapes[template_of(c.text, c.section)] > 1:
            rare = 0
        else:
            rare = sum(1 for term in c.terms if spread[term] <= _RARE)
        worth[id(c)] += _PER_RARE_TERM * min(rare, 3)
        if not c.terms and c.section not in (LAST_ASK, KEPT, DECISIONS):
            worth[id(c)] -= _VAGUE
    by_section: dict[str, list[Candidate]] = {}
    for candidate in sorted(pool, key=lambda c: (-worth[id(c)], c.order)):
        by_section.setdefault(candidate.section, []).append(candidate)
    for lines in by_section.values():
        for rank, candidate in enumerate(lines):
            worth[id(candidate)] -= _PER_LINE * rank
    by_template: dict[str, int] = {}
    for candidate in sorted(pool, key=lambda c: (-worth[id(c)], c.order)):
        key = template_of(candidate.text, candidate.section)
        worth[id(candidate)] -= _PER_TEMPLATE * by_template.get(key, 0)
        by_template[key] = by_template.get(key, 0) + 1
    ranked = sorted(pool, key=lambda c: (-worth[id(c)], c.order, c.text))
    for candidate in ranked:
        if worth[id(candidate)] < _FILLER_WORTH and candidate.section not in (KEPT, LAST_ASK):
            continue  # filler: a model would leave it out too, under its budget
        text = redact(candidate.text)
        key = text.lower()
        # An error line again with other counts or times is one error, said once: its latest
        # instance ranks first.
        if key in seen_text or (candidate.identity and candidate.identity in seen_identities):
            continue
        if len(key) >= _SAID_INSIDE and any(key in said for said in seen_text):
            continue  # said inside a longer line already (an answer with its reason)
        says = candidate.terms | values_with_units(text)
        words = set(_WORD.findall(key))
        brings_term = bool(candidate.terms) and not says <= covered
        if roomy and candidate.relates:
            if not brings_term and len(words - covered_words) < _OWN_WORDS:
                continue  # says again what is said ("The cause: X" after "The cause is X")
        elif not candidate.always and candidate.terms and says <= covered:
            continue
        cost = len(text) + 3  # "\n- "
        if candidate.section not in open_sections:
            cost += len(candidate.section) + 3  # "\n\n" + title + ":"
        if used + cost > budget:
            continue
        used += cost
        seen_text.add(key)
        seen_identities.add(candidate.identity)
        covered.update(says)
        covered_words.update(words)
        open_sections.add(candidate.section)
        chosen.append(replace(candidate, text=text))  # its text as said: redacted
    return chosen


def _omitted(pool: list[Candidate], chosen: list[Candidate]) -> int:
    return len({c.text.lower() for c in pool}) - len(chosen)


def _render(header: str, chosen: list[Candidate], *, omitted: int) -> str:
    out = [header]
    for section in SECTIONS:
        lines = sorted((c for c in chosen if c.section == section), key=lambda c: c.order)
        if lines:
            out.append(f"\n{section}:")
            out.extend(f"- {c.text}" for c in lines)
    text = "\n".join(out)
    if omitted > 0:
        text += _MORE.format(count=omitted)
    return text
