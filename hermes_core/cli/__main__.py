"""``python -m hermes_core.cli``: the ``hermes`` command without its console script."""

from . import main

main()
