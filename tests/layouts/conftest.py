"""Each test (and each hypothesis example, see test_claude_code_properties) starts with no
cached picture of who holds which file open: toolkit.live keeps one for a second, keyed by
(device, inode), and other processes on the machine create and delete temp files all the time,
so a cached inode of theirs can match a file a test has just created (a false ``in-use``)."""

from __future__ import annotations

import pytest

from toolkit import live


def forget_open_files() -> None:
    live._SNAPSHOT = None


@pytest.fixture(autouse=True)
def fresh_liveness():
    forget_open_files()
    yield
