"""Sub-commands of the ``stategym`` CLI (see :mod:`stategym.cli`)."""
