"""Defaults the command line needs before it knows which subcommand runs, kept apart so that
parsing `--help` or `status` imports none of the demo's or the transcript source's machinery.
demo.simulator and sources.transcript re-export them."""

LOCAL_MODEL = "local:extractive"  # the offline summarizer the demo uses
DEMO_PACE = 6.0  # messages per second
DEMO_TURNS = 30
DEFAULT_LIMIT = 30  # transcripts listed from a folder: the most recently written
