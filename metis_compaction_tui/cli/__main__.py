import sys

from metis_compaction_tui.cli import main

sys.exit(main())
