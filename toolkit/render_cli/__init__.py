"""What each command prints: rich tables, cards, summaries and ``next:`` lines, one module per
command group (``checks``: fsck, reindex, migrate, demo; ``sessions``: ls, locks; ``doctor``;
``schedule``; ``restore``; ``chaos``).

``toolkit/report.py`` holds the shared pieces (``Output``, findings tables, widths); these modules
draw one command's result with them.  Each is imported inside the command that uses it, and
imports rich inside the functions that draw: a command whose output is a line or a JSON document
never loads it (start-up, DESIGN.md §8).
"""
