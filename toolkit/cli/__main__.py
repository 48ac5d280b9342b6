"""``python -m toolkit.cli``."""

from . import main

main()
