"""What every command prints: on any stdout encoding, for any journal fsck accepts, at any width."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT, encode, meta, session_records, write_journal

REPO = Path(__file__).resolve().parents[1]
SID = "2026-11-30T09-00-00-a1b2"
CUT = "2026-11-30T09-00-01-a1b3"


def levelsess(*args, env: dict | None = None, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``levelsess ARGS`` as a real process (bytes out), importing this checkout's toolkit."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True,
                          env=environment, cwd=cwd, timeout=timeout, check=False)


# --- 1. any stdout encoding ---------------------------------------------------------------


def unicode_store(root: Path) -> Path:
    """A store whose folders, titles and messages hold emoji, CJK and a lone surrogate escape."""
    records = session_records(SID)
    records[1]["content"] = "question 😀 about 退款, café"
    records[-1]["title"] = "Refunds 🎉 退款"
    write_journal(root / "-home-ada-日本-😀" / f"{SID}.jsonl", records)
    records = session_records(CUT)
    data = encode(records)
    # a title cut mid-emoji, as JavaScript's JSON.stringify writes it (valid JSON, no UTF-8 form)
    data += ('{"kind":"title","t":"2026-11-30T10:00:00Z","title":"cut \\ud83d émoji","seq":%d}\n' % len(records)).encode()
    write_journal(root / "-home-ada-cut-é" / f"{CUT}.jsonl", data)
    return root


COMMANDS = [
    ("ls",), ("ls", "--json"), ("ls", "--json", "--project", "日本"), ("ls", "--verify"), ("fsck",), ("fsck", "--json"), ("fsck", "--strict"),
    ("show", SID), ("show", SID, "--json"), ("export", SID), ("export", SID, "--format", "json"),
    ("export", SID, "--format", "jsonl"), ("show", CUT), ("show", CUT, "--json"), ("export", CUT),
    ("export", CUT, "--format", "json"), ("reindex", "--check"), ("reindex", "--check", "--json"),
    ("migrate", "--dry-run"), ("migrate", "--dry-run", "--json"),
]


@pytest.fixture(scope="module")
def utf8_runs(tmp_path_factory):
    store = unicode_store(tmp_path_factory.mktemp("unicode") / "store")
    return store, {c: levelsess(*c, "--store", store, env={"PYTHONIOENCODING": "utf-8"}) for c in COMMANDS}


def _parse(data: bytes) -> object:
    return json.loads(data.decode("ascii"))  # the std parser: it accepts lone surrogate escapes


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_prints_on_a_stdout_that_is_not_utf8(utf8_runs, encoding, command):
    store, reference = utf8_runs[0], utf8_runs[1][command]
    result = levelsess(*command, "--store", store, env={"PYTHONIOENCODING": encoding})
    assert b"Traceback" not in result.stderr, result.stderr.decode("utf-8", "replace")
    assert result.returncode == reference.returncode, result.stderr
    if command[0] == "export":  # the export itself: the same UTF-8 bytes on every locale
        assert result.stdout == reference.stdout and result.stdout
    elif "--json" in command:
        assert result.stdout.isascii()
        assert _parse(result.stdout) == json.loads(reference.stdout.decode("utf-8"))
    elif command[0] == "show":  # piped, the transcript is Markdown text in UTF-8, like export's
        assert result.stdout == reference.stdout and ("退款".encode() in result.stdout or "émoji".encode() in result.stdout)
    else:
        result.stdout.decode(encoding)  # human output degrades to escapes that the stream can hold
        result.stderr.decode(encoding)


def test_lang_c_prints_a_unicode_store(utf8_runs):
    store = utf8_runs[0]
    env = {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    for command in (("ls",), ("fsck",), ("fsck", "--json")):
        result = levelsess(*command, "--store", store, env=env)
        assert b"Traceback" not in result.stderr and result.returncode in (0, 4), result.stderr


def test_import_prints_a_unicode_project_on_an_ascii_stdout(tmp_path):
    from tests.importers.cursor_db import modern_user_dir

    project = tmp_path / "code" / "日本-😀"
    project.mkdir(parents=True)
    info = modern_user_dir(tmp_path / "cursor", project)
    try:
        store = tmp_path / "store"
        for args in ((), ("--json",)):
            result = levelsess("import", "--from", "cursor", "--source", info["user"], "--store", store, "--dry-run", *args,
                               env={"PYTHONIOENCODING": "ascii"})
            assert b"Traceback" not in result.stderr and result.returncode in (0, 4), result.stderr
        document = _parse(result.stdout)
        assert any(s["project"] == str(project) for s in document["sessions"])
    finally:
        info["conn"].close()
