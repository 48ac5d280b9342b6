"""A re-import that finds nothing new loads neither the converter nor the writer, nor hashlib's OpenSSL (issue 27): the
registry's claude, codex and gemini are their listings (importers/claude_units.py, codex_units.py, gemini_units.py), whose
module ``__getattr__`` loads the rest of the importer only when a file must be read.  Each import
runs in a process of its own, as a nightly job does, and says which of those modules it loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.layouts.gemini import SID, every_kind, gemini_home, name
from tests.restore.kit import CLAUDE, CODEX

#: Run ``levelsess ARGS`` as the console script does; print, after its own output, the modules of
#: the import's reading and writing that it loaded.
RUN = r"""
import sys
from toolkit.cli import main
try:
    main()
except SystemExit:
    pass
HEAVY = ("toolkit.importers.claude", "toolkit.importers.codex", "toolkit.importers.gemini", "toolkit.importers.output", "toolkit.durable",
         "toolkit.importers.sourcelines", "toolkit.importers.bloom",
         "_hashlib",  # (hashlib's OpenSSL: its load alone was a tenth of such an import, toolkit.digest)
         "toolkit.layouts.codex",  # (and with it the reader of rollouts' records: codex_units loads it to list or read one)
         "toolkit.layouts.gemini",  # (Gemini CLI's layout: gemini_units lists with the names alone, layouts/gemini_names.py)
         "toolkit.lines")  # (the line splitter: the cache and the tombstones are parsed by toolkit.parse alone)
print("\nLOADED " + " ".join(m for m in HEAVY if m in sys.modules))
"""


def _import(app: str, source, store, cache) -> tuple[dict, set[str]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-c", RUN, "import", "--from", app, "--source", str(source), "--store", str(store),
                           "--json"], capture_output=True, text=True, env=env, check=True)
    report, _, loaded = done.stdout.rpartition("\nLOADED ")
    return json.loads(report), set(loaded.split())


@pytest.mark.parametrize("app", ["claude", "codex", "gemini"])
def test_a_reimport_that_finds_nothing_new_loads_no_converter_and_no_writer(tmp_path, app):
    if app == "gemini":  # (no fixture: a folder of SOURCES-MORE §1.9's shapes)
        source = gemini_home(tmp_path / "source", {name(): every_kind(), f"{SID}/sub.jsonl": every_kind("5ab0c4d1-0000-4000-8000-000000000001")})
    else:
        fixtures = CLAUDE if app == "claude" else CODEX
        if fixtures is None:
            pytest.skip("the shared fixtures are not on this machine")
        source = tmp_path / "source"
        shutil.copytree(fixtures, source)
    first, loaded = _import(app, source, tmp_path / "store", tmp_path / "cache")
    assert first["read"] > 0 and f"toolkit.importers.{app}" in loaded and "toolkit.importers.output" in loaded
    again, loaded = _import(app, source, tmp_path / "store", tmp_path / "cache")
    assert again["read"] == 0 and again["from_cache"] == len(first["sessions"]) > 0
    assert [s["status"] for s in again["sessions"]] == ["unchanged"] * len(first["sessions"])
    # (Claude Code's kept listing asks its layout, which reads with toolkit.lines, whether the head of
    # a file that told whose a folder is still says so)
    assert loaded - ({"toolkit.lines"} if app == "claude" else set()) == set(), f"an import that read nothing loaded {sorted(loaded)}"
    grown = next(p for p in sorted(source.rglob("*.jsonl")) if p.stat().st_size > 0)
    with open(grown, "ab") as out:  # a line that is not a whole record yet: the file is read again (resumed or in full)
        out.write(b'{"type":"partial')
    third, loaded = _import(app, source, tmp_path / "store", tmp_path / "cache")
    assert third["read"] + third["resumed"] >= 1 and f"toolkit.importers.{app}" in loaded
