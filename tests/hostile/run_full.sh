#!/usr/bin/env sh
# The whole hostile suite at full counts, then the 10-minute load run.
#   tests/hostile/run_full.sh            from the repository root
set -eu
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
HOSTILE_FULL=1 "$PY" -m pytest tests/hostile "$@"
"$PY" tests/hostile/load.py --keep
