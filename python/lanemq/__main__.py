"""``python -m lanemq``: the ``lanemq`` command."""

from lanemq.cli import main

main()
