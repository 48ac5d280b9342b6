"""On a stream that cannot show UTF-8 (latin-1, ASCII, cp1252, LANG=C), nothing levelsess itself
chooses to print comes out as an escape: captions ("... and 3 more"), bullets, arrows, rich's
borders and a rendered transcript's markers degrade to ASCII.  A user's own text may be escaped,
but never stops a command.  Every command's typical output, in a real subprocess (issue 23)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_store, session_records, torn_store, write_journal
from tests.importers.cline_data import cline_storage

ROOT = Path(__file__).resolve().parents[1]
ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")
ENCODINGS = {"latin-1": {"PYTHONIOENCODING": "latin-1"}, "ascii": {"PYTHONIOENCODING": "ascii"},
             "cp1252": {"PYTHONIOENCODING": "cp1252"},
             "LANG=C": {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}}


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> dict:
    """A home with only ASCII in it (paths, titles, messages): every escape would be levelsess's."""
    home = tmp_path_factory.mktemp("home")
    store, _journal = torn_store(home / "torn")
    v1 = make_store(home / "v1", sessions=0)
    for n in range(23):  # more than a migrate table shows: its caption says how many more
        sid = f"2026-11-30T09-{n // 60:02d}-{n % 60:02d}-a1b{n % 10}"
        write_journal(v1 / "-home-ada-code-thin-ly" / f"{sid}.jsonl", session_records(sid, turns=1, v=1))
    cline = cline_storage(home / ".config", [str(1787306400123 + n * 100000) for n in range(33)])  # > 30: the import caption
    cron = home / "cron"
    cron.mkdir()
    (cron / "crontab").write_text("#!/bin/sh\ncase \"$1\" in -l) cat \"$0.table\" 2>/dev/null || { echo 'no crontab' >&2; exit 1; };; "
                                  "*) cat \"$1\" > \"$0.table\";; esac\n")
    (cron / "crontab").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVELSESS_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"),
               XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(ROOT), NO_COLOR="1", LEVELSESS_CRONTAB=str(cron / "crontab"))
    imported = home / "kept"
    subprocess.run([sys.executable, "-m", "toolkit.cli", "import", "--from", "cline", "--source", str(cline), "--store", str(imported)],
                   env=env, check=True, capture_output=True, timeout=300)
    subprocess.run([sys.executable, "-m", "toolkit.cli", "trash", "cline-1787306400123", "--store", str(imported)],
                   env=env, check=True, capture_output=True, timeout=300)
    return {"home": home, "env": env, "store": store, "v1": v1, "cline": cline, "kept": imported}


def commands(m: dict) -> list[list[str]]:
    s, v1, kept = str(m["store"]), str(m["v1"]), str(m["kept"])
    return [["ls", "--store", s], ["ls", "--store", v1, "--grep", "refunds", "-n", "3"], ["ls", "--store", kept, "--limit", "0"],
            ["show", "2026-11-30T09-00-00-a1b0", "--store", s], ["fsck", s], ["fsck", s, "-v"], ["fsck", s, "--repair", "--dry-run"],
            ["migrate", v1, "--dry-run"], ["import", "--from", "cline", "--source", str(m["cline"]), "--store", kept, "--dry-run", "-v"],
            ["import", "--from", "cline", "--source", str(m["cline"]), "--store", str(m["home"] / "new")  , "--dry-run"],
            ["doctor", "--store", kept, str(m["home"])], ["trash", "--list", "--store", kept], ["restore", "--list"],
            ["schedule", "status", "--store", kept], ["schedule", "install", "--app", "cline", "--store", kept, "--dry-run"],
            ["schedule", "status", "--dry-run"], ["reindex", s, "--check"], ["locks", s]]


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_nothing_levelsess_chooses_prints_as_an_escape(machine, encoding, columns):
    env = {**machine["env"], **ENCODINGS[encoding], "COLUMNS": columns}
    for argv in commands(machine):
        run = subprocess.run([sys.executable, "-m", "toolkit.cli", *argv], env=env, capture_output=True, timeout=300)
        text = (run.stdout + run.stderr).decode("latin-1")
        where = f"levelsess {shlex.join(argv)} ({encoding}, {columns} columns)"
        assert "Traceback" not in text, f"{where}\n{text}"
        assert run.returncode in (0, 4, 16), f"{where}: exit {run.returncode}\n{text}"
        found = ESCAPE.search(text)
        assert found is None, f"{where}: {found.group()} in\n{text[max(0, found.start() - 200):found.end() + 100]}"


def test_the_glyphs_behind_the_sweep_are_there_on_utf_8(machine):
    """The sweep would pass vacuously if levelsess printed no glyph: on UTF-8 it does."""
    env = {**machine["env"], "PYTHONIOENCODING": "utf-8", "COLUMNS": "200"}
    migrate = subprocess.run([sys.executable, "-m", "toolkit.cli", "migrate", str(machine["v1"]), "--dry-run"], env=env,
                             capture_output=True, timeout=300).stdout.decode()
    assert re.search("\u2026 and [0-9]+ more", migrate), migrate
    ascii_ = subprocess.run([sys.executable, "-m", "toolkit.cli", "migrate", str(machine["v1"]), "--dry-run"],
                            env={**env, "PYTHONIOENCODING": "ascii"}, capture_output=True, timeout=300).stdout.decode("ascii")
    assert re.search(r"\.\.\. and [0-9]+ more", ascii_), ascii_


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_a_users_own_text_may_be_escaped_but_never_stops_a_command(tmp_path, encoding):
    records = session_records("2026-11-30T09-00-00-a1b2")
    records[-1]["title"] = "Caf\u00e9 \u2713 \u65e5\u672c \U0001f642 \ud83d"  # and a lone surrogate, as importers keep it
    records[1]["content"] = "r\u00e9sum\u00e9 \u2192 \u65e5\u672c"
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)  # \ud83d as JSON spells it (orjson refuses it)
    write_journal(tmp_path / "store" / "-p" / "2026-11-30T09-00-00-a1b2.jsonl", data)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PYTHONIOENCODING": encoding, "COLUMNS": "120"}
    for argv in (["ls"], ["ls", "--grep", "sum"], ["show", "2026-11-30T09-00-00-a1b2"], ["fsck"], ["export", "2026-11-30T09-00-00-a1b2"]):
        run = subprocess.run([sys.executable, "-m", "toolkit.cli", *argv, "--store", str(tmp_path / "store")], env=env,
                             capture_output=True, timeout=120)
        assert run.returncode == 0 and b"Traceback" not in run.stderr, (argv, run.stderr.decode("latin-1"))
