"""What the engine would do this turn and why (§3.1), and compaction spend against the budget.

The decision is `engine.plan_turn`'s, explained by `TriggerDecision.explain()`; a trigger that
fires with no valid boundary (§3.3) is called out, since that turn would fail instead. The spend
line also names the compaction strategy and, when it fits, what the last compaction saved
(engine.savings: tokens off every request, USD a turn, turns to pay back).
"""

from __future__ import annotations

import re
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from engine import (
    OFFLINE,
    CompactionRecord,
    SummarizerSettings,
    TriggerAction,
    TriggerReason,
    TurnPlan,
    compaction_savings,
    is_offline,
    named_price_origin,
)
from metis_compaction_tui.sources.session_data import money, short_tokens
from metis_compaction_tui.widgets.fit import first_fitting, lines

LABEL = "Trigger   "
LEADING_VERB = re.compile(r"^(skip|soft|forced): ")
SPEND_LABEL = "Spend     "


def badge_of(plan: TurnPlan) -> tuple[str, str]:
    """(badge text, component class) for the decision: skip, soft, forced, budget, no boundary."""
    decision = plan.decision
    if decision.fires and plan.span is None:
        return " NO BOUNDARY ", "trigger--forced"
    if decision.reason is TriggerReason.BUDGET_EXHAUSTED_FORCED:
        return " FORCED · BUDGET ", "trigger--forced"
    if decision.reason is TriggerReason.BUDGET_EXHAUSTED_SKIP:
        return " SKIP · BUDGET ", "trigger--budget"
    if decision.action is TriggerAction.FORCED:
        return " FORCED ", "trigger--forced"
    if decision.action is TriggerAction.SOFT:
        return " SOFT ", "trigger--soft"
    return " SKIP ", "trigger--skip"


class TriggerPanel(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "trigger--label",
        "trigger--skip",
        "trigger--soft",
        "trigger--forced",
        "trigger--budget",
        "trigger--explain",
        "trigger--spend",
        "trigger--spend-empty",
        "trigger--spend-over",
        "trigger--model",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plan: TurnPlan | None = None
        self.model = ""
        self.last: CompactionRecord | None = None
        self.price_origin = ""
        self.summarizer: SummarizerSettings | None = None

    def set_plan(
        self,
        plan: TurnPlan,
        model: str,
        last: CompactionRecord | None = None,
        price_origin: str = "",
        summarizer: SummarizerSettings | None = None,
    ) -> None:
        self.plan, self.model, self.last = plan, model, last
        self.price_origin, self.summarizer = price_origin, summarizer
        self.refresh()

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(10, self.size.width)
        head = Text(no_wrap=True, end="")
        head.append(LABEL, style("trigger--label"))
        if self.plan is None:
            head.append("no session", style("trigger--explain"))
            return head
        badge, badge_class = badge_of(self.plan)
        head.append(badge, style(badge_class))
        head.append(" ")
        room = width - head.cell_len
        reason = first_fitting(
            (partial(Text, line, style("trigger--explain"), end="") for line in self._reasons()),
            room,
        )
        notes = self._notes()
        # Longest first: everything; then the model gives way to what the last compaction saved,
        # then the notes go from the end; the bare line (model only) last.
        wordings = [(True, notes)]
        wordings += [(False, notes[:keep]) for keep in range(len(notes), 1, -1)]
        wordings += [(True, notes[:keep]) for keep in range(len(notes) - 1, -1, -1)]
        spend = first_fitting(
            (partial(self._spend_line, kept, model) for model, kept in wordings), width
        )
        return lines(head + reason, spend)

    def _notes(self) -> list[str]:
        """After the model, most important first: the strategy (and what it would do now), then
        what the last compaction saved."""
        assert self.plan is not None
        plan = self.plan
        doing = f" → {plan.action}" if plan.decision.fires and plan.action else ""
        notes = [f"strategy {plan.strategy}{doing}"]
        last = self.last
        savings = compaction_savings(last, self.summarizer) if last is not None else None
        if last is not None and savings is not None:
            saved = short_tokens(savings.saved_tokens)
            notes.append(
                f"last {last.strategy or 'summarize'} −{saved} tok "
                f"{money(savings.saved_usd_per_turn)}/turn"
            )
            even = savings.break_even_turns
            notes.append("never pays back" if even is None else f"pays back in {even} turns")
        return notes

    def _reasons(self) -> list[str]:
        """Why, longest first: the engine's own sentence (its leading verb is the badge's)."""
        assert self.plan is not None
        plan, decision = self.plan, self.plan.decision
        sentence = LEADING_VERB.sub("", decision.explain())
        pending, thr, cap = (
            decision.pending_history_tokens,
            decision.threshold_tokens,
            decision.hard_cap_tokens,
        )
        if decision.fires and plan.span is None:
            return [
                f"{sentence}, but no tool-cycle boundary: the turn fails (no_valid_boundary)",
                f"{pending:,} ≥ {thr:,} but no tool-cycle boundary (no_valid_boundary)",
                "no tool-cycle boundary: no_valid_boundary",
            ]
        short = {
            TriggerReason.BELOW_THRESHOLD: f"{pending:,} pending < threshold {thr:,}",
            TriggerReason.THRESHOLD_CROSSED: f"{pending:,} pending ≥ threshold {thr:,}",
            TriggerReason.BUDGET_EXHAUSTED_SKIP: "threshold reached, budget spent: skipped",
            TriggerReason.HARD_CAP_CROSSED: f"{pending:,} pending ≥ hard cap {cap:,}",
            TriggerReason.BUDGET_EXHAUSTED_FORCED: "hard cap reached, budget spent: runs anyway",
            TriggerReason.NOT_REDUCIBLE: "over threshold, but compaction can't get under it",
            TriggerReason.MASK_WOULD_NOT_PAY: "over threshold, but a mask would not pay back",
        }[decision.reason]
        return [sentence, short]

    def _spend_line(self, notes: list[str] | None = None, with_model: bool = True) -> Text:
        style = self.get_component_rich_style
        assert self.plan is not None
        spent, budget = self.plan.decision.spent_usd, self.plan.decision.budget_usd
        width = max(10, self.size.width)
        bar_cells = max(6, min(20, width // 6))
        ratio = float(spent / budget) if budget > 0 else (1.0 if spent > 0 else 0.0)
        filled = min(bar_cells, round(ratio * bar_cells))
        over = self.plan.decision.budget_exhausted
        text = Text(no_wrap=True, end="")
        text.append(SPEND_LABEL, style("trigger--label"))
        text.append("█" * filled, style("trigger--spend-over" if over else "trigger--spend"))
        text.append("░" * (bar_cells - filled), style("trigger--spend-empty"))
        text.append(f" {money(spent)} of {money(budget)}", style("trigger--explain"))
        if over:
            text.append(" · budget spent", style("trigger--spend-over"))
        if with_model:
            text.append(" · model ", style("trigger--explain"))
            model_note = self.model
            if is_offline(self.model):
                model_note += f" ({OFFLINE})"
            named = named_price_origin(self.price_origin)
            if named:
                model_note += f" ({named})"
            text.append(model_note, style("trigger--model"))
        for note in notes or ():
            text.append(f" · {note}", style("trigger--explain"))
        return text
