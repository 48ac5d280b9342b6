"""Shared fixtures: isolation from the user's home, a CLI runner, journal builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import run_cli  # noqa: F401  (re-exported for tests)

# The test command runs the same examples every time (CI is deterministic: a property that passed on
# main passes on the next clean checkout of it); HYPOTHESIS_EXPLORE=1 draws new ones, to hunt.
settings.register_profile("repeatable", derandomize=True, database=None)
if not os.environ.get("HYPOTHESIS_EXPLORE"):
    settings.load_profile("repeatable")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Point HOME and platformdirs at a temporary folder and drop LEVELSESS_* variables."""
    home = tmp_path_factory.mktemp("home")
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
