"""Shared fixtures: isolation from the user's home, a CLI runner, journal builders."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import run_cli  # noqa: F401  (re-exported for tests)

# Tests press Ctrl-C on the processes they start.  A shell that starts the suite in the background
# (`nohup .ci/run &`, a CI runner's job without a terminal) starts it with SIGINT ignored, which
# every child inherits: there, a Python child never sees Ctrl-C.  The suite restores the handler a
# terminal gives, so the children it starts get SIGINT as a user's would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The test command runs the same examples every time (CI is deterministic: a property that passed on
# main passes on the next clean checkout of it); HYPOTHESIS_EXPLORE=1 draws new ones, to hunt.  No
# example has a deadline: how long one takes is how busy the machine is (a listing test's 200 ms
# default failed a CI run while another suite ran beside it: 484 ms, then 1 ms).
settings.register_profile("repeatable", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile("explore" if os.environ.get("HYPOTHESIS_EXPLORE") else "repeatable")


def _isolate(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("COLUMNS", "200")
    for name in list(os.environ):
        if name.startswith("LEVELSESS_") or name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "USERPROFILE", "WSL_DISTRO_NAME"):
            monkeypatch.delenv(name)
    # every scan an import makes of a journal as it writes it is checked against a read of the file
    # (toolkit.importers._written_scan): the whole suite's imports, of every source, compare them
    monkeypatch.setenv("LEVELSESS_SELF_CHECK", "1")
    return home


@pytest.fixture(scope="session", autouse=True)
def isolated_session_home(tmp_path_factory):
    """The same isolation for the fixtures wider than a test (a module's import of the fixtures),
    which are made before any test's own: they ran with the machine's HOME, and wrote the import's
    index memo under the user's ~/.cache/levelsess."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _isolate(tmp_path_factory.mktemp("session-home"), monkeypatch)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and platformdirs at a temporary folder and drop LEVELSESS_* variables."""
    return _isolate(tmp_path_factory.mktemp("home"), monkeypatch)
