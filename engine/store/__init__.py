"""The live session store and everything that reads it back.

`session_store` (the `SessionStore` API, docs/store-api.md), `schema` (the file and its tables,
docs/store-schema.md), `rows` (row decoding), `sql` (the statements), `tail` (following another
process's commits).
"""

from engine.store.session_store import (
    SCHEMA_VERSION,
    SessionInfo,
    SessionStore,
    SessionView,
    StoredCompaction,
    StoredEvent,
    StoredMessage,
    StoreError,
    UndoRefused,
    UnknownSession,
    WriteLog,
    store_path,
)

__all__ = [
    "SCHEMA_VERSION",
    "SessionInfo",
    "SessionStore",
    "SessionView",
    "StoreError",
    "StoredCompaction",
    "StoredEvent",
    "StoredMessage",
    "UndoRefused",
    "UnknownSession",
    "WriteLog",
    "store_path",
]
