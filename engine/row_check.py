"""Column checks for rows read back from SQLite: the store and the cache are files other
processes, old versions and people with `sqlite3` edit, and their tables are not STRICT, so any
column can hold any SQLite value (int, float incl. NaN/inf, text, blob, NULL, huge). Every read
goes through these: a typed value or one BadRow naming the table, column and row, never a
TypeError far away or a wrong value passed on.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_INT = 2**62  # far past any count, seq or ms time this engine writes
MAX_SHORT_TEXT = 4_096  # ids, titles, model names, prompt versions
MAX_SUMMARY_CHARS = 1_000_000  # a summary is capped in tokens (§5.1); this is the size backstop
MAX_USD = Decimal(1_000_000)


class BadRow(ValueError):
    """A column holding something this engine never writes; `where` names table, column, row."""

    def __init__(self, table: str, column: str, row_id: object, detail: str) -> None:
        self.table, self.column, self.row_id = table, column, _short(row_id)
        self.where = f"{table}.{column} of row {self.row_id}"
        super().__init__(f"{self.where}: {detail}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    if isinstance(value, bytes | str) and len(value) > 60:
        unit = "bytes" if isinstance(value, bytes) else "chars"
        return f"a {type(value).__name__} of {len(value)} {unit}"
    return f"{type(value).__name__} {_short(value)}"


def int_col(
    table: str,
    column: str,
    row_id: object,
    value: Any,
    *,
    nullable: bool = False,
    low: int = 0,
    high: int = MAX_INT,
) -> Any:
    """An integer in [low, high] (bool and float refused: SQLite hands back what was written)."""
    if value is None and nullable:
        return None
    if type(value) is int and low <= value <= high:
        return value
    want = f"an integer in {low}..{high}" + (" or NULL" if nullable else "")
    raise BadRow(table, column, row_id, f"{_kind(value)}, not {want}")


def text_col(
    table: str,
    column: str,
    row_id: object,
    value: Any,
    *,
    max_chars: int = MAX_SHORT_TEXT,
    non_empty: bool = False,
) -> str:
    if type(value) is not str:
        raise BadRow(table, column, row_id, f"{_kind(value)}, not text")
    if len(value) > max_chars:
        raise BadRow(table, column, row_id, f"text of {len(value)} chars, over {max_chars}")
    if non_empty and not value.strip():
        raise BadRow(table, column, row_id, "empty text")
    if "\x00" in value:
        raise BadRow(table, column, row_id, "text with a NUL character")
    return value


def usd_col(table: str, column: str, row_id: object, value: Any) -> Decimal:
    """Money, stored as decimal text: finite, not negative, not absurd (NaN would poison every
    budget comparison; 'abc' every sum)."""
    if type(value) is int:
        amount = Decimal(value)
    elif type(value) is str and len(value) <= 64:
        try:
            amount = Decimal(value)
        except InvalidOperation:
            raise BadRow(table, column, row_id, f"{_kind(value)}, not a decimal amount") from None
    elif type(value) is float and math.isfinite(value):
        amount = Decimal(repr(value))
    else:
        raise BadRow(table, column, row_id, f"{_kind(value)}, not a decimal amount")
    if not amount.is_finite() or not (0 <= amount <= MAX_USD):
        raise BadRow(table, column, row_id, f"{_short(value)} is not an amount in 0..{MAX_USD}")
    return amount


def text_or_bytes_col(
    table: str, column: str, row_id: object, value: Any, *, max_bytes: int = 64 * 1024 * 1024
) -> bytes:
    """A JSON column (text; bytes accepted as its UTF-8), bounded before it is decoded."""
    if type(value) is str:
        value = value.encode("utf-8", "surrogatepass")
    if type(value) is not bytes:
        raise BadRow(table, column, row_id, f"{_kind(value)}, not JSON text")
    if len(value) > max_bytes:
        raise BadRow(table, column, row_id, f"{len(value)} bytes, over {max_bytes}")
    return value
