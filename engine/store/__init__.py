"""The live session store and everything that reads it back.

`session_store` (the `SessionStore` API, docs/store-api.md), `schema` (the file and its tables,
docs/store-schema.md), `rows` (row decoding), `sql` (the statements), `tail` (following another
process's commits).
"""

# The public names are listed once, in session_store.__all__.
from engine.store.session_store import *  # noqa: F403
from engine.store.session_store import __all__ as __all__
