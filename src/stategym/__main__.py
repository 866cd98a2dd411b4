"""``python -m stategym``: the ``stategym`` command, where the entry point is not installed."""

from stategym.cli import main

raise SystemExit(main())
