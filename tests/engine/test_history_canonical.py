"""History keeps the §5.1 canonical bytes of its messages in one buffer (the cache key
is a sha256 over a slice of it). Whatever appends and replacements happen, in eager and lazy mode,
a key computed through the buffer must equal the key computed from the messages alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cache_key import canonical_message_bytes, compute_cache_key
from engine.history import History, text_message
from engine.messages import Message, Role

KNOBS = {
    "summarization_model": "anthropic:claude-haiku-4-5",
    "summarization_prompt_version": "1.0.0",
    "summarization_max_tokens": 1024,
}


def message(n: int, text: str) -> Message:
    return text_message(f"m{n}", Role.USER if n % 2 == 0 else Role.ASSISTANT, text)


def key_through(history: History, start: int, end: int) -> str:
    with history.canonical_view(start, end) as span_bytes:
        assert bytes(span_bytes) == b"".join(
            canonical_message_bytes(m) for m in history.messages[start:end]
        )
        return compute_cache_key(history.messages[start:end], **KNOBS, span_bytes=span_bytes)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.text(max_size=30)),
        st.tuples(st.just("replace"), st.lists(st.text(max_size=30), max_size=3)),
        st.tuples(st.just("key"), st.none()),
        st.tuples(st.just("copy"), st.none()),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(
    eager=st.booleans(),
    seed=st.lists(st.text(max_size=20), max_size=6),
    ops=operations,
    data=st.data(),
)
def test_keys_through_the_buffer_equal_keys_from_the_messages(
    eager: bool, seed: list[str], ops: list[tuple[str, object]], data: st.DataObject
) -> None:
    history = History([message(i, t) for i, t in enumerate(seed)], eager_canonical=eager)
    made = len(seed)
    for op, arg in ops:
        size = len(history)
        if op == "append":
            history.append(message(made, str(arg)))
            made += 1
        elif op == "replace":
            start = data.draw(st.integers(0, size))
            end = data.draw(st.integers(start, size))
            new = [message(made + i, t) for i, t in enumerate(arg)]  # type: ignore[arg-type]
            made += len(new)
            history.replace(start, end, new, [history.counter(m) for m in new])
        elif op == "copy":
            history = history.copy()
        start = data.draw(st.integers(0, len(history)))
        end = data.draw(st.integers(start, len(history)))
        plain = compute_cache_key(history.messages[start:end], **KNOBS)
        assert key_through(history, start, end) == plain
    # the view is released after its block: the history can still grow
    history.append(message(made, "after"))
    assert key_through(history, 0, len(history)) == compute_cache_key(history.messages, **KNOBS)


def test_a_replacement_shifts_the_bytes_after_it() -> None:
    history = History([message(i, f"text {i}") for i in range(6)], eager_canonical=True)
    summary = text_message("s", Role.USER, "a summary of two", synthetic=True)
    history.replace(1, 3, [summary], [10])
    assert [m.id for m in history.messages] == ["m0", "s", "m3", "m4", "m5"]
    assert key_through(history, 2, 5) == compute_cache_key(history.messages[2:5], **KNOBS)
