"""Background helpers that work ahead of an import (issue 27): one is set in a context variable
while a block runs, where the code that needs its work finds it, and is closed when the block
ends (its thread stopped, what it made and no one took removed)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator


@contextlib.contextmanager
def running(var: contextvars.ContextVar, helper) -> Iterator[None]:
    """``helper`` (anything with ``close()``) in ``var`` while the block runs, then closed."""
    token = var.set(helper)
    try:
        yield
    finally:
        var.reset(token)
        helper.close()
