"""The candidate lines `local:extractive` chooses from, each with a section and a priority.

Every line of a span is read once and, if it can matter to a continuing agent, becomes a candidate
of one kind: what the user asked and the limits they set, decisions (better with their reason),
open tasks, errors, what tools printed (short outputs whole, long ones reduced to their lines
that are not repeats of a template), the commands that ran and whether they worked, statements
carrying something concrete (numbers, paths, identifiers), and the files touched. The priority says
how much a continuing agent would miss the line; the summarizer fills its budget in that order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from engine.ledger.model import shape
from engine.ledger.values import PATH as _PATH
from engine.ledger.values import WITH_UNIT, standing_out
from engine.messages import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.policy.tool_calls import command_of, file_action, path_of
from engine.policy.tool_output import (
    HASH,
    SPACES,
    clean,
    clip,
    digest_lines,
    error_lines,
    is_error_line,
    masked_lines,
    salient_lines,
    sentences,
    shell_output,
    value_weight,
)

# Sections, in the order they are rendered.
KEPT = "Kept at the user's request"
LAST_ASK = "Last user request"
CONSTRAINTS = "User constraints and preferences"
DECISIONS = "Decisions"
TASKS = "Open tasks"
ERRORS = "Errors"
TOOLS = "Tool results"
FACTS = "Facts that may warrant memory_add"
FILES = "Files"
ASKS = "Earlier user requests"
PEOPLE = "People"
SECTIONS = (
    KEPT,
    LAST_ASK,
    CONSTRAINTS,
    PEOPLE,
    DECISIONS,
    TASKS,
    ERRORS,
    TOOLS,
    FACTS,
    FILES,
    ASKS,
)


@dataclass(frozen=True)
class Candidate:
    section: str
    priority: float
    order: int  # the order lines were read in: a section renders its lines in this order
    text: str
    terms: frozenset[str] = field(default=frozenset())  # the concrete things the line carries
    always: bool = False  # kept even when its terms are already in the summary
    # A conclusion or an answer relates what other lines name: kept though its terms are said,
    # while it brings words of its own ("a feedback loop between warm-up and ...").
    relates: bool = False
    # Two lines of one identity are one line, said once (an error line seen again with other
    # counts or times: engine.ledger.model.shape, read before the line is clipped).
    identity: str = ""


# Concrete terms: numbers and versions (with a unit), identifiers with an inner _ . : - or a case
# change, quoted code, upper-case constants, hashes. What makes a line a fact rather than prose.
_TERM = re.compile(
    r"`[^`\n]{1,80}`"
    r"|\b\d+(?:[.,:]\d+)*(?:[a-zA-Z%]{1,4}\b|%)?(?!\w)"
    r"|\b[A-Za-z][\w]*(?:[_.:-][\w]+)+\b"
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b"
    r"|\b[A-Z]{2,}[A-Z0-9_]*\b"
    r"|(?<=[\w,;] )[A-Z][a-z]{2,}\b"  # a name inside a sentence: Dana, Postgres, Friday
)

# A decision's or a limit's reason follows it ("X rather than Y: Z", "never X: Z"): clipped at
# the usual limit, the reason is what goes. A budget of dozens of lines lets these run longer.
_WIDE = frozenset({DECISIONS, CONSTRAINTS})

# What an earlier request loses when a later one restates its values with new ones.
_RESTATED = 200.0
_QUESTION = re.compile(r"\?\s*$")
# A limit the user sets. "never" after a verb of being describes (it can never succeed); words like
# "only" and "instead" set a limit when they lead the sentence ("Only the local database.") and
# usually describe a bug when they do not ("it only shows up with the second bank").
_CONSTRAINT = re.compile(
    r"(?i)\b(?:don'?t|do not|doesn'?t|(?<!can )(?<!could )(?<!will )(?<!would )(?<!is )(?<!are )"
    r"never|always|must(?:n'?t)?|shouldn'?t|should not|avoid|"
    r"keep|leave|prefer\w*|no longer|not allowed|make sure|ensure|remember|"
    r"at most|at least|no more than|stick to|owns|off[- ]limits|use only|only use|"
    r"careful|unless|hands off|can'?t|cannot|won'?t|has to|have to|needs? to stay|stay away|"
    r"not (?:to|use|touch|change|edit|add|run|push|merge|commit))\b"
    r"|^(?:(?:and|but|also|plus),? )?(?:no|only|without|instead|rather|stay)\b"
)
# Someone named with their role ("Priya from the payments team owns X", "Marek is the SRE on
# call"): who to ask or wait for is lost by any summary that keeps only the work.
_ROLE = re.compile(
    r"(?i)\b(?:lead|manager|manages|owner|owns|on[- ]call|reviews?|approves?|signs? off|"
    r"maintainer|maintains|runs the|in charge|responsible for|heads|oversees|rota|"
    r"engineer|sre|dba|architect|admin|team|product|design|security|legal|finance|qa)\b"
)
_NAME = re.compile(
    r"(?:^|(?<=[\s(,]))(?!(?:The|This|That|These|We|Our|It|If|In|On|At|For|And|But|So|Set|"
    r"Use|Open|Decision|Correction|Note|Yes|No|Sorry|Please|Ask|Keep|Let|After|Before|When|Then|"
    r"Now|Ship|Make|Never|Don|Do|All|One|Root|Read|Run|Checking|Reading)\b)"
    r"[A-Z][a-z]{2,}(?:-[A-Z][a-z]+)?\b"  # Dana, Mei-Lin
    r"(?= (?:is|from|owns|approves|reviews|signs|wants|needs|will|has|leads|runs|manages|"
    r"maintains|handles|heads|oversees)\b|'s\b"
    # an apposition: "Jun (the release manager)", "Ola, our DBA, ..."
    r"| \((?:the|our|a|an|who)\b|, (?:the|our|who)\b)"
    r"|\b(?i:ask|asks|ping|loop in|tell|wait for) [A-Z][a-z]{2,}\b"
)
# What a reply concluded, and a value it corrected: what later work rests on.
_CONCLUSION = re.compile(
    r"(?i)^(?:root cause|the (?:root )?cause|the (?:regression|problem|issue|bug|failure) "
    r"(?:is|was|comes?|came)|so\b|this means|that means|turns out|it turns out|conclusion|"
    r"the reason|which (?:is why|means))|\bbecause\b.*\b(?:fails?|failed|broke|breaks)\b"
    # what a test or a reading showed
    r"|\b(?:shows|showed|shown|(?:did|does) show|confirms|confirmed|proves|proved) (?:is )?that\b"
    # a cause ruled in or out: "X is a red herring", "Y is what changed it", "not the cause"
    r"|\bred herring\b|\b(?:is|was) what (?:changed|caused|broke|triggered)\b"
    r"|(?:'s|\bis|\bwas|\bare|\bwere|\bisn't|\bwasn't|\baren't|\bweren't) (?:not )?the cause\b"
    r"|\bnothing to do with\b"
)
# A cause told apart from another ("a feedback loop ..., not real traffic"): what a reply
# concluded, when it decides nothing.
_CONTRAST = re.compile(
    r"\w, not (?!(?:only|all|yet|much|every|even|just|sure|quite|always|never)\b)"
    r"(?:the |a |an )?\w+"
)
_CORRECTION = re.compile(
    r"(?i)^(?:correction|actually|sorry,? correction)\b|\b(?:not|instead of) \S+;"
)
_DECISION = re.compile(
    r"(?i)\b(?:decision|decid\w*|chose|chosen|choose|choosing|opt(?:ed|ing)? (?:for|to)|"
    r"went with|go(?:ing)? with|settled? on|we(?:'ll| will| should| are going to) \w+|"
    r"i(?:'ll| will) (?!look|read|check|run|start|see|try|open|search|find|let|get)\w+|"
    r"(?:switch|mov|migrat)\w* to|"
    r"instead of|rather than|in favou?r of|plan is|the plan|approach|agreed|the fix is|fixed by|"
    r"by using|replac\w+ \S+ with|let'?s (?:use|go|keep|switch|stick|move|drop|do))\b"
)
_REASON = re.compile(
    r"(?i)\b(?:because|since|so that|so the|so it|so we|as it|as the|which means|to avoid|, so|"
    r"to keep|due to|given that|otherwise|that way|reason|which is why|that is why)\b"
)
_TASK = re.compile(
    r"(?i)^open:|(?:^|\b)(?:next|remaining|still (?:to do|need|needs|have|has|to)|to ?do|"
    r"left to|not yet|pending|follow[- ]?up|after that|later|then (?:I|we)|i still|we still|"
    r"need to|needs to|outstanding|what'?s left)\b"
)
_NARRATION = re.compile(
    r"(?i)^(?:let me|let's|i'?ll (?:look|read|check|run|start|see|try|open)|i am|i'm|checking|"
    r"reading|looking|running|now let|ok\b|okay|sure|great|good|thanks|understood|noted|will do|"
    r"done\.?$|measuring|timing|profiling|searching)"
)
_POLITE = re.compile(r"(?i)^(?:can|could|would|will) you\b|^please\b")
_ACK = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|sure|great|good|nice|fine|thanks|thank you|perfect|cool|yes|right|"
    r"got it|sounds good|looks good|lgtm|agreed|understood|noted|will do|done|ack|by me|"
    r"that works|works for me)\W*)+$"
)


def values_with_units(text: str) -> frozenset[str]:
    """A number with its unit written apart: "120 seconds" states another fact than the
    "--duration 120" of a command, so a corrected value is not taken for one already said."""
    return frozenset(m.group(0).lower() for m in WITH_UNIT.finditer(text))


def terms_of(text: str) -> frozenset[str]:
    found = {m.group(0).strip("`").lower() for m in _TERM.finditer(text)}
    found.update(m.group(0).lower() for m in _PATH.finditer(text))
    found.update(m.group(0).lower() for m in HASH.finditer(text))
    return frozenset(t for t in found if len(t) > 1 or t.isdigit())


_TEMPLATE_TERM = re.compile(_TERM.pattern + "|" + _PATH.pattern + r"|\b\w+_\w+\b")
_TEMPLATE_WORD = re.compile(_PATH.pattern + r"|[\w#@$%.:/-]*\w[\w#@$%.:/-]*")


def template_of(text: str, section: str) -> str:
    """The template a line is an instance of. Prose keeps its words with its concrete terms
    blanked ("kept the signature of X as it was", said for ten Xs); what a tool printed keeps
    only its shape, every word and value one symbol ("<time> ERROR <service>[<pid>] upstream
    returned 503 after <n> ms" from every service of a log)."""
    lowered = text.lower()
    if section in (ERRORS, TOOLS):
        return SPACES.sub("", _TEMPLATE_WORD.sub("w", lowered))
    return SPACES.sub(" ", _TEMPLATE_TERM.sub("#", lowered)).strip()


def is_roomy(line_limit: int, wide_limit: int) -> bool:
    """The budget holds dozens of lines: a decision's or a limit's line may run past the usual
    limit (wide_limit over line_limit), an answer is kept, a conclusion for what it relates."""
    return wide_limit > line_limit


@dataclass
class _Pool:
    line_limit: int
    total: int
    wide_limit: int  # for the sections in _WIDE
    out: list[Candidate] = field(default_factory=list)
    shown: set[str] = field(default_factory=set)  # output lines already in a digest

    @property
    def roomy(self) -> bool:
        return is_roomy(self.line_limit, self.wide_limit)

    def add(
        self,
        section: str,
        priority: float,
        position: int,
        text: str,
        *,
        always: bool = False,
        relates: bool = False,
        identity: str = "",
    ) -> None:
        limit = self.wide_limit if section in _WIDE else self.line_limit
        text = clip(clean(text), limit)
        if not text:
            return
        # Later lines weigh a little more within a kind: they are closer to where work resumes.
        recency = 40 * position / self.total
        self.out.append(
            Candidate(
                section=section,
                priority=priority + recency,
                order=len(self.out),
                text=text,
                terms=terms_of(text),
                always=always,
                relates=relates,
                identity=identity,
            )
        )


def build_pool(
    span: tuple[Message, ...],
    instructions: str | None,
    *,
    line_limit: int = 200,
    wide_limit: int | None = None,
) -> list[Candidate]:
    results: dict[str, ToolResultContentBlock] = {
        block.tool_use_id: block
        for message in span
        for block in message.content
        if isinstance(block, ToolResultContentBlock)
    }
    user_turns = [
        i
        for i, m in enumerate(span)
        if m.role is Role.USER
        and not m.synthetic
        and any(isinstance(b, TextContentBlock) and b.text.strip() for b in m.content)
    ]
    last_user = user_turns[-1] if user_turns else -1
    wide = max(line_limit, wide_limit or line_limit)
    pool = _Pool(line_limit=line_limit, total=max(len(span), 1), wide_limit=wide)
    if instructions and instructions.strip():
        pool.add(KEPT, 10_000, 0, instructions, always=True)
    failed_commands: list[str] = []
    asked = False  # the user's last words were a question the next reply answers
    for position, message in enumerate(span):
        asking = False  # a text block of this user message asked a question
        for block in message.content:
            if isinstance(block, TextContentBlock):
                if _earlier(message, block.text):
                    _earlier_summary(pool, block.text, position)
                elif message.synthetic:
                    continue  # fillers and notices the compactor wrote
                elif message.role is Role.USER:
                    _user(pool, block.text, position, latest=position == last_user)
                    asked = asking or _asks(block.text)
                    asking = asked  # a later block of the message (a reminder) keeps it
                else:
                    # The reply may open with narration and answer in a later message.
                    asked = asked and not _answer(pool, block.text, position)
                    _prose(pool, block.text, position)
            elif isinstance(block, ToolUseContentBlock):
                _tool_call(pool, block, results.get(block.id), position, failed_commands)
    return _superseded(pool.out)


def _numbers(terms: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if t[0].isdigit())


def _superseded(pool: list[Candidate]) -> list[Candidate]:
    """An earlier request whose values a later one repeats beside new ones ("at 10% on Thursday",
    then "10% is too much: make it 2.5%") was restated: the later holds, the earlier drops back
    to filler."""
    asks = [c for c in pool if c.section in (ASKS, LAST_ASK)]
    out: list[Candidate] = []
    for c in pool:
        said = _numbers(c.terms)
        if c.section == ASKS and said:
            later = (_numbers(k.terms) for k in asks if k.order > c.order)
            if any(said < numbers for numbers in later):
                c = replace(c, priority=c.priority - _RESTATED)
        out.append(c)
    return out


# An earlier summary in the span keeps its sections: its lines were already chosen once.
_WRAPPER = re.compile(r"^<COMPACTION_SUMMARY [^>\n]*>", re.MULTILINE)
# What a line of an earlier summary is worth beyond a fresh line of its kind: it was chosen once
# already, and a fold that drops it loses it for good (tuned on the workloads, cached call:
# planted facts kept by the folds on mixed 44/49 -> 47/51, chatty 15/21 -> 17/21, long outputs
# hybrid 56/63 -> 62/68 and recompact 111/117 -> 109/116; set A unchanged).
_CARRIED_BONUS = 120.0
_CARRIED = {
    KEPT: (CONSTRAINTS, 880),
    LAST_ASK: (ASKS, 600),
    ASKS: (ASKS, 500),
    CONSTRAINTS: (CONSTRAINTS, 880),
    PEOPLE: (PEOPLE, 880),
    DECISIONS: (DECISIONS, 820),
    TASKS: (TASKS, 700),
    ERRORS: (ERRORS, 650),
    TOOLS: (TOOLS, 640),
    FACTS: (FACTS, 640),
    FILES: (FILES, 560),
}


def _earlier(message: Message, text: str) -> bool:
    """An earlier summary: the compactor's synthetic message, or (a span read back from a
    request, where no metadata travels) a user message that is one §4.2 wrapper."""
    if message.synthetic:
        return bool(_WRAPPER.search(text))
    return message.role is Role.USER and bool(_WRAPPER.match(text.lstrip()))


def _earlier_summary(pool: _Pool, text: str, position: int) -> None:
    from engine.ledger.render import split  # the ledger section is the engine's to merge

    section, base = FACTS, 600
    # Its work ledger is the engine's to carry (engine.ledger merges it), not prose to re-choose.
    for line in split(text).prose.splitlines():
        line = line.strip()
        if line.startswith("- "):
            pool.add(section, base + _CARRIED_BONUS, position, line[2:], always=section != FILES)
        elif line.endswith(":") and line[:-1] in _CARRIED:
            section, base = _CARRIED[line[:-1]]


def _user(pool: _Pool, text: str, position: int, *, latest: bool) -> None:
    ask: list[str] = []
    parts = _sentences(text)
    for index, sentence in enumerate(parts):
        if index + 1 < len(parts) and _CORRECTION.match(parts[index + 1]):
            continue  # "From June 3. Sorry, correction: from June 1": only the latter holds
        if _person(pool, sentence, position):
            continue
        if _CORRECTION.search(sentence):
            pool.add(DECISIONS, 870, position, sentence, always=True)
        elif _CONSTRAINT.search(sentence) and (
            not _QUESTION.search(sentence) or _POLITE.match(sentence)
        ):  # "Could you avoid X?" is a limit asked politely
            pool.add(CONSTRAINTS, 900, position, sentence, always=True)
        elif _DECISION.search(sentence) and not _QUESTION.search(sentence):
            pool.add(DECISIONS, 820, position, sentence, always=True)
        elif _ACK.match(sentence):
            continue
        elif latest:
            ask.append(sentence)
        elif _QUESTION.search(sentence):
            pool.add(ASKS, 300 + 20 * len(terms_of(sentence)), position, sentence)
        else:  # what the user asked for or told: with numbers in it, as good as a fact
            terms = terms_of(sentence)
            numbers = any(t[0].isdigit() for t in terms)
            pool.add(ASKS, (660 if numbers else 520) + 20 * min(len(terms), 3), position, sentence)
    if ask:
        pool.add(LAST_ASK, 950, position, " ".join(ask), always=True)
    for path in _PATH.findall(text):
        pool.add(FILES, 470, position, path)


# An answer's opening this short ("The older account, the lower id.") says little without the
# sentence that follows it, its reason.
_SHORT_ANSWER = 60


# A sentence is read this far: a line is clipped far shorter, and a pattern such as
# "because ... failed" costs the square of what it reads.
_SENTENCE_LIMIT = 2_000


def _sentences(text: str) -> list[str]:
    return [sentence[:_SENTENCE_LIMIT] for sentence in sentences(text)]


def _asks(text: str) -> bool:
    """The user's words end in a question (a harness's <system-reminder> block is not theirs)."""
    stripped = text.strip()
    return not stripped.startswith("<") and bool(_QUESTION.search(stripped))


def _answer(pool: _Pool, text: str, position: int) -> bool:
    """A reply to the user's question opens with its answer: what the user now knows (the
    question itself is dropped as answered). Where the budget holds dozens of lines: on a small
    one the answer is a line that relates, and would take a fact's room (held-out set B at 300
    tokens: 42 -> 40 of 44). False when this text is not the answer yet (narration, an
    acknowledgement)."""
    if not pool.roomy:
        return True  # a small budget: the answer's sentences compete as what they are
    parts = [p for p in _sentences(text) if not _QUESTION.search(p)]
    if not parts or _NARRATION.match(parts[0]) or _ACK.match(parts[0]):
        return False
    answer = " ".join(parts[:2]) if len(parts[0]) < _SHORT_ANSWER else parts[0]
    pool.add(DECISIONS, 830, position, answer, relates=True)
    return True


def _prose(pool: _Pool, text: str, position: int) -> None:
    for sentence in _sentences(text):
        if _QUESTION.search(sentence) or _ACK.match(sentence):
            continue
        terms = terms_of(sentence)
        if _person(pool, sentence, position):
            continue
        concluded = 800 + 10 * min(len(terms), 3)
        if _CORRECTION.search(sentence) or _CONCLUSION.search(sentence):
            pool.add(DECISIONS, concluded, position, sentence, relates=True)
        elif _DECISION.search(sentence):
            reason = bool(_REASON.search(sentence))
            pool.add(DECISIONS, 860 if reason else 740, position, sentence, always=reason)
        elif _TASK.search(sentence):
            pool.add(TASKS, 780, position, sentence)
        elif _CONTRAST.search(sentence):
            pool.add(DECISIONS, concluded, position, sentence, relates=True)
        elif _NARRATION.match(sentence) and not terms:
            continue
        elif _REASON.search(sentence):  # a change or finding with its why
            pool.add(FACTS, 720 + 10 * min(len(terms), 3), position, sentence)
        elif terms:
            numbers = sum(1 for t in terms if t[0].isdigit())
            names = sum(1 for t in terms if "_" in t or "/" in t)
            weight = 25 * min(numbers, 3) + 20 * min(names, 2) + 10 * min(len(terms), 3)
            pool.add(FACTS, 600 + weight, position, sentence)
        elif is_error_line(sentence):
            pool.add(FACTS, 450, position, sentence)
    for path in _PATH.findall(text):
        pool.add(FILES, 480, position, path)


def _person(pool: _Pool, sentence: str, position: int) -> bool:
    if _ROLE.search(sentence) and _NAME.search(sentence) and not _QUESTION.search(sentence):
        pool.add(PEOPLE, 860, position, sentence)
        return True
    return False


def _command_of(block: ToolUseContentBlock) -> tuple[str, str | None]:
    """How a call reads in a summary (the shell command itself, or `tool path`), and its path."""
    inputs = block.input
    path = path_of(inputs)
    command = command_of(inputs)
    if command is not None:
        return clean(command), path
    if path is not None:
        return f"{block.name} {path}", path
    args = ", ".join(f"{k}={v}" for k, v in sorted(inputs.items()) if isinstance(v, str | int))
    return clean(f"{block.name}({args})"), None


def _tool_call(
    pool: _Pool,
    block: ToolUseContentBlock,
    result: ToolResultContentBlock | None,
    position: int,
    failed_commands: list[str],
) -> None:
    command, path = _command_of(block)
    is_read = path is not None and command.startswith(f"{block.name} ")
    output = result.content if result is not None else ""
    exit_code: int | None = None
    if result is not None and not is_read:
        # A shell result's envelope (Codex's JSON or "Exit code: ... Output:") is not its output:
        # read as the ledger reads it (tool_output.shell_output).
        output, exit_code = shell_output(result.content)
    kept = masked_lines(output)
    lines = [clean(line) for line in (output.splitlines() if kept is None else kept)]
    lines = [line for line in lines if line]
    # A file's contents are not errors ("raise ValueError" in a source file): a read fails only
    # when the tool says so, and then its first line says why.
    if is_read:
        errors = lines[:1] if result is not None and result.is_error else []
    else:
        errors = error_lines(lines)
    failed = bool(result is not None and result.is_error) or bool(errors) or bool(exit_code)
    action = file_action(block.name)
    edits = action in ("edited", "wrote") and not failed
    for line in errors:
        pool.add(ERRORS, 800, position, line, always=True, identity=shape(line))
    if path is not None:
        label = "edited" if edits else ("read" if action == "read" else "used")
        pool.add(FILES, 800 if edits else 600, position, f"{path} ({label})")
    for found in dict.fromkeys(_PATH.findall(command)):
        if found == path:
            continue
        if edits and path is None:  # a patch names the files it changes
            pool.add(FILES, 800, position, f"{found} (edited)")
        else:
            pool.add(FILES, 470, position, found)
    if edits:
        return  # "edited X" says nothing the Files line does not
    head = command.split()[0] if command.split() else command
    if failed:
        failed_commands.append(head)
        pool.add(TOOLS, 520, position, f"{command} → failed")
        return
    # A line printed again (the same banner on every test run) is said once.
    salient = [
        line for line in salient_lines(lines) if line not in errors and line not in pool.shown
    ]
    # Of a long output, the lines shaped like few others stand for it (the one version among
    # forty settings), not the first of its crowd.
    alone = standing_out(salient)
    odd = any(alone) and not all(alone)
    if odd:
        salient = [line for line, keep in zip(salient, alone, strict=True) if keep]
    picked = digest_lines(salient, long=len(lines) > 4)
    digest = " | ".join(clip(salient[i], 100) for i in picked)
    pool.shown.update(salient[i] for i in picked)
    worked = not is_read and any(head == f or f in command for f in failed_commands)
    weight = max((value_weight(salient[i]) for i in picked), default=0)
    if digest:
        # A long file read is mostly a body to re-read, not a result; unless what stands for it
        # is shaped like none of the rest (the one odd setting of a config).
        body = is_read and len(lines) > 12 and not odd
        priority = 640 + 25 * weight - (120 if body else 0)
        text = f"{command} → {digest}"
        if worked:
            text = f"{command} → worked: {digest}"
            priority += 60
        pool.add(TOOLS, priority, position, text)
    else:
        outcome = "worked" if worked else "ok"
        pool.add(TOOLS, 700 if worked else 380, position, f"{command} → {outcome}")
