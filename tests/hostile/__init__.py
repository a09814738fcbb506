"""Hostile conditions: kill -9, races, full and read-only disks, a sabotaged cache,
provider faults, fuzzed input, untrusted text and secrets. Quick by default; HOSTILE_FULL=1 for
the full counts (tests/hostile/run_full.sh)."""
