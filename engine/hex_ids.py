"""A commit id or digest as tools print it (git logs, image digests, cache keys): 7-40 lower-case
hex characters with a digit and a letter among them. One pattern for the tool-output rules
(engine.policy.tool_output) and the ledger's values (engine.ledger.values), which `status --json`
reads without the former."""

import re

HEX_ID = r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
HASH = re.compile(HEX_ID)
