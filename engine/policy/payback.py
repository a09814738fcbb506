"""§7's pay-back arithmetic, once: what a compaction costs against what it saves per turn.

A compaction makes its own turn write the new, shorter transcript to the prompt cache (at the
cache-write rate) where the uncompacted session would have read the old one (at the cache-read
rate); every later turn reads `before - after` fewer tokens. Both sessions add the same new turns,
so those cancel out. The call itself (0 for a mask or a cache hit) is paid once.

    owed       = call + write * after - read * before
    per turn   = read * (before - after)
    pay-back   = owed / per turn   (turns after the compaction's own)
"""

from __future__ import annotations

from decimal import Decimal

# Anthropic's prompt-cache prices, as multiples of the input price (§7): a write costs 1.25x,
# a read 0.1x. A price that states no cache rates gets these.
CACHE_WRITE_FACTOR = Decimal("1.25")
CACHE_READ_FACTOR = Decimal("0.1")


def recache_usd(before_tokens: int, after_tokens: int, *, read: Decimal, write: Decimal) -> Decimal:
    """The compaction turn's extra: the new transcript written where the old one was read."""
    return write * after_tokens - read * before_tokens


def payback_turns(
    before_tokens: int,
    after_tokens: int,
    *,
    call_usd: Decimal,
    read: Decimal,
    write: Decimal,
) -> Decimal | None:
    """Turns after the compaction until it has paid for its call and its re-cache (module doc);
    0 when it owes nothing, None when it never does (it saves nothing per turn)."""
    owed = call_usd + recache_usd(before_tokens, after_tokens, read=read, write=write)
    if owed <= 0:
        return Decimal(0)
    saving = read * (before_tokens - after_tokens)
    if saving <= 0:
        return None
    return owed / saving
