"""What every command prints: on any stdout encoding, for any journal fsck accepts, at any width."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, encode, logician_session, make_store, on_a_terminal, run_cli, session_records, write_journal

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


# --- 2. whatever fsck accepts, every command can print -----------------------------------


def nested(depth: int) -> bytes:
    return b"[" * depth + b'"deep"' + b"]" * depth


def deep_journal(root: Path, depth: int) -> Path:
    """A v2 journal whose user content, tool input, tool result and title nest ``depth`` deep."""
    records = session_records(SID, turns=1)
    lines = encode(records[:-1]).splitlines()
    deep = nested(depth)
    lines += [b'{"kind":"user","t":"2026-11-30T09:30:00Z","content":' + deep + b',"seq":3}',
              b'{"kind":"assistant","t":"2026-11-30T09:31:00Z","content":[{"type":"tool_use","name":"grep","input":' + deep
              + b'},{"type":"tool_result","content":' + deep + b'}],"seq":4}',
              b'{"kind":"title","t":"2026-11-30T09:32:00Z","title":' + deep + b',"seq":5}']
    return write_journal(root / "-p" / f"{SID}.jsonl", b"\n".join(lines) + b"\n")


# orjson (>= 3.10) parses up to 1,024 levels; deeper lines are too-deep, a typed finding (never cut)
@pytest.mark.parametrize("depth", [900, 1000, 1020, 1023, 1024, 1025, 1100, 3000, 50_000])
def test_a_deeply_nested_journal_that_fsck_accepts_prints_everywhere(tmp_path, depth):
    journal = deep_journal(tmp_path / "store", depth)
    store = tmp_path / "store"
    check = run_cli("fsck", "--json", store)
    errors = [f for f in check.json["findings"] if f["severity"] == "error"]
    if errors:  # too deep to parse: a typed finding, and every command says so instead of crashing
        assert depth > 1000 and "too-deep" in {f["code"] for f in errors} <= {"too-deep", "seq-gap"}, errors
        assert run_cli("ls", "--json", "--verify", "--store", store).json["sessions"][0]["state"] == "corrupt"
        for command in (("show", SID), ("export", SID), ("export", SID, "--format", "json")):
            result = run_cli(*command, "--store", store)
            assert result.exit_code == 4 and "too-deep" in result.stderr, (command, result.stderr)
        return
    for command in (("ls",), ("ls", "--json"), ("ls", "--verify"), ("show", SID), ("show", SID, "--json"),
                    ("export", SID), ("export", SID, "--format", "jsonl"), ("export", SID, "--format", "md")):
        result = run_cli(*command, "--store", store)
        assert result.exit_code == 0, (command, result.stderr)
    document = run_cli("export", SID, "--format", "json", "--store", store)
    assert document.exit_code == 0, document.stderr
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * depth))  # the document nests one level deeper than orjson reads
    try:
        value = json.loads(document.stdout)
    finally:
        sys.setrecursionlimit(limit)
    lines = journal.read_bytes().splitlines()
    assert value["meta"] == orjson.loads(lines[0]) and len(value["records"]) == len(lines) - 1
    for line in lines:  # each record is its journal bytes (== on 3,000-deep lists would recurse)
        assert line.decode() in document.stdout
    listed = run_cli("ls", "--json", "--store", store)
    assert nested(depth).decode() in listed.stdout.replace(" ", "").replace("\n", "")


def test_export_json_keeps_every_record_as_the_journal_spells_it(tmp_path):
    records = session_records(SID, turns=1)
    lines = encode(records).splitlines()
    lines[2] = lines[2][:-1] + b',"n":1e400,"big":123456789012345678901234567890,"x":1.10,"cut":"\\ud83d"}'
    journal = write_journal(tmp_path / "store" / "-p" / f"{SID}.jsonl", b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n")
    result = run_cli("export", SID, "--format", "json", "--store", tmp_path / "store")
    assert result.exit_code == 0, result.stderr
    for line in journal.read_bytes()[3:].split(b"\r\n")[:-1]:  # without the BOM and the CRs
        assert f"\n    {line.decode()}" in result.stdout or f'"meta": {line.decode()},' in result.stdout
    document = json.loads(result.stdout)
    assert document["records"][1]["big"] == 123456789012345678901234567890 and document["records"][1]["cut"] == "\ud83d"


def test_json_encoder_without_recursion_matches_orjson_and_survives_any_depth():
    from toolkit.encode import dumps, encode_json

    value = {"a": [1, 2.5, {"b": None, "c": True}], "d": {}, "e": [], "f": "é 😀", "g": -0.0}
    for indent in (False, True):
        assert encode_json(value, indent) == orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    odd = {"cut": "\ud83d", "big": 10**30, "inf": float("inf")}
    assert json.loads(dumps(odd)) == odd
    deep: list = []
    cursor = deep
    for _ in range(200_000):
        cursor.append([])
        cursor = cursor[0]
    assert dumps(deep) == b"[" * 200_001 + b"]" * 200_001


# --- 3. Logician show / export keep every character ---------------------------------------


def long_message() -> str:
    """5,000 characters over many lines, with a code block, a backtick fence and odd spacing."""
    lines = [f"line {n}:   some text,  with  double  spaces and a tab\tand ünïcödé 😀" for n in range(40)]
    body = "\n".join(lines[:20]) + "\n\n```python\ndef f(x):\n    return x * 2\n```\n\n" + "\n".join(lines[20:]) + "\n"
    return (body * 3)[:5000]


def test_logician_export_and_show_keep_every_character_and_the_session_name(tmp_path):
    text = long_message()
    assert len(text) == 5000 and text.count("\n") > 50
    entries = [
        {"id": "e1", "parentId": None, "timestamp": "2026-11-30T12:00:00Z", "role": "user", "text": text},
        {"id": "e2", "parentId": "e1", "timestamp": "2026-11-30T12:00:05Z", "role": "assistant",
         "content": [{"type": "text", "text": "Second " + text}, {"type": "tool_use", "name": "grep", "input": {"q": "x"}}]},
        {"id": "e3", "parentId": "e2", "timestamp": "2026-11-30T12:00:06Z", "type": "message",
         "message": {"role": "user", "content": "third: " + text}},
        {"id": "e4", "parentId": "e3", "timestamp": "2026-11-30T12:00:07Z", "type": "checkpoint", "files": ["```a```"]},
    ]
    folder = logician_session(tmp_path / "ws", entries=entries)
    (folder / "meta.json").write_text(json.dumps({"formatVersion": 1, "name": "Refund bug hunt", "workspace": str(tmp_path / "ws"),
                                                  "createdAt": "2026-11-30T12:00:00Z", "updatedAt": "2026-11-30T12:00:07Z",
                                                  "entryCount": 4, "parentSession": None, "activeLeaf": "e4"}))
    exported = run_cli("export", "s1", "--in", tmp_path / "ws")
    shown = run_cli("show", "s1", "--in", tmp_path / "ws")
    for result in (exported, shown):
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("# Refund bug hunt\n")
        for message in (text, "Second " + text, "third: " + text):
            assert message in result.stdout
        assert "### user · 2026-11-30T12:00:00Z" in result.stdout and "### assistant" in result.stdout
        assert '"files"' in result.stdout and "````json" in result.stdout  # an entry without text is shown whole
    to_file = tmp_path / "s1.md"
    assert run_cli("export", "s1", "--in", tmp_path / "ws", "-o", to_file).exit_code == 0
    assert to_file.read_bytes() == exported.stdout.encode()


def test_logician_session_without_a_name_is_titled_by_its_id(tmp_path):
    logician_session(tmp_path / "ws", sid="s9")
    result = run_cli("export", "s9", "--in", tmp_path / "ws")
    assert result.exit_code == 0 and result.stdout.startswith("# s9\n") and "hello" in result.stdout


# --- 7. Ctrl-C exits 32 in every command ---------------------------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """500 v1 journals of about 200 KB: every reading command takes a second or more."""
    root = tmp_path_factory.mktemp("big") / "store"
    for n in range(500):
        sid = f"2026-11-30T09-{n // 60:02d}-{n % 60:02d}-a{n:03d}"
        write_journal(root / "-home-ada-big" / f"{sid}.jsonl", session_records(sid, turns=700, v=1))
    return root


def _reading_a_journal(pid: int) -> bool:
    """Whether ``pid`` or one of its worker processes has a journal open."""
    import psutil

    try:
        pids = [pid] + [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return False
    for each in pids:
        try:
            if any(os.readlink(f"/proc/{each}/fd/{fd}").endswith(".jsonl") for fd in os.listdir(f"/proc/{each}/fd")):
                return True
        except OSError:  # gone, or a descriptor closed while we looked
            continue
    return False


def interrupt_while_reading(*args, group: bool = False) -> tuple[int, str]:
    """Start levelsess, wait until it has a journal open, send SIGINT (to its whole process
    group when ``group``, as a terminal's Ctrl-C does); return (exit code, stderr)."""
    import signal
    import time

    environment = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, "-m", "toolkit.cli", *map(str, args)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=environment, start_new_session=True)
    deadline = time.monotonic() + 60
    while not _reading_a_journal(process.pid) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    if group:
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err.decode("utf-8", "replace")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="polls /proc for the open journal")
@pytest.mark.parametrize("command", [("fsck", "--jobs", "1"), ("fsck", "--strict", "--jobs", "1"), ("fsck", "--repair", "--jobs", "1"),
                                     ("reindex", "--full"), ("ls", "--verify"), ("migrate", "--dry-run", "--jobs", "1")],
                         ids=" ".join)
def test_ctrl_c_while_reading_exits_32_without_a_traceback(big_store, command):
    code, err = interrupt_while_reading(*command, big_store)
    assert code == 32, err
    assert "Traceback" not in err and "interrupted" in err


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="polls /proc for the open journal")
def test_ctrl_c_to_the_process_group_stops_fsck_workers_quietly(big_store):
    code, err = interrupt_while_reading("fsck", "--strict", "--jobs", "2", big_store, group=True)
    assert code == 32, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


# --- 4. a rebuilt Logician meta.json names its workspace by its absolute path ---------------


@pytest.mark.parametrize("typed", [".", ".logician", "./.logician/sessions/sessions/s1", ".logician/sessions/sessions/s1/messages.jsonl"])
def test_rebuilt_meta_names_the_workspace_absolutely_whatever_path_was_typed(tmp_path, monkeypatch, typed):
    workspace = tmp_path / "code" / "app"
    folder = logician_session(workspace)
    monkeypatch.chdir(workspace)
    result = run_cli("fsck", "--repair", typed)
    assert result.exit_code == 1, result.stdout + result.stderr
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["workspace"] == str(workspace.resolve()) and Path(meta["workspace"]).is_absolute()
    assert run_cli("fsck", typed).exit_code == 0  # and a check from anywhere agrees with it
    monkeypatch.chdir(tmp_path)
    assert run_cli("fsck", workspace).exit_code == 0


def test_rebuilt_meta_keeps_a_stored_workspace(tmp_path, monkeypatch):
    workspace = tmp_path / "app"
    folder = logician_session(workspace)
    (folder / "meta.json").write_text(json.dumps({"formatVersion": 1, "name": "kept", "workspace": "/where/it/was",
                                                  "createdAt": "2026-11-30T12:00:00Z", "entryCount": 1}))
    monkeypatch.chdir(workspace)
    assert run_cli("fsck", "--repair", ".").exit_code == 1
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["workspace"] == "/where/it/was" and meta["name"] == "kept" and meta["entryCount"] == 2


# --- 6. --help shows flags as flags, and every option in an example -------------------------


def _commands():
    import typer.main

    from toolkit.cli import app

    def walk(command, words):
        yield words, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, [*words, name])

    return list(walk(typer.main.get_command(app), []))


COMMAND_WORDS = [words for words, _ in _commands()]


@pytest.mark.parametrize("words", COMMAND_WORDS, ids=lambda w: " ".join(w) or "levelsess")
def test_help_shows_flags_as_flags_and_every_option_in_an_example(words):
    import re

    command = dict((tuple(w), c) for w, c in _commands())[tuple(words)]
    result = run_cli(*words, "--help")
    assert result.exit_code == 0, result.stderr
    for garbage in ("<bool>", "<list[", "<int", "<float", "<str>", "<path>", "BOOLEAN", "INTEGER", "RANGE", "VALUE"):
        assert garbage not in result.stdout, garbage
    examples = [line for line in result.stdout.splitlines() if re.search(r"^\W*levelsess ", line.strip("│ "))]
    if words in (["chaos"], ["chaos", "writer"]):
        return  # a group of commands; chaos writer passes its options through
    assert examples, "no example line"
    tokens = {token for line in examples for token in re.split(r"[\s=]+", line)}
    missing = [param.opts for param in command.params if param.opts and param.opts[0].startswith("-")
               and not tokens & set(param.opts + param.secondary_opts)]
    assert not missing, f"options without an example: {missing}"


def test_export_json_describes_what_was_written_or_is_the_export_itself(tmp_path):
    store = tmp_path / "store"
    write_journal(store / "-p" / f"{SID}.jsonl", session_records(SID))
    target = tmp_path / "chat.md"
    described = run_cli("export", SID, "--store", store, "-o", target, "--json")
    assert described.exit_code == 0, described.stderr
    assert described.json == {"version": 1, "session": SID, "path": str(store / "-p" / f"{SID}.jsonl"), "format": "md",
                              "output": str(target), "bytes": target.stat().st_size, "exit": 0}
    itself = run_cli("export", SID, "--store", store, "--json")
    assert itself.exit_code == 0 and itself.json == run_cli("export", SID, "--store", store, "-f", "json").json
    refused = run_cli("export", SID, "--store", store, "--json", "-f", "md")
    assert refused.exit_code == 16 and refused.json["error"]["type"] == "UsageError" and "--json" in refused.stderr


# --- 5. table captions are true whatever PATH was given ------------------------------------


def _caption_tells_the_truth(result_human, result_json) -> None:
    import re

    text = result_human.stdout
    match = re.search(r"paths relative to (\S+)", text)
    paths = {f["path"] for f in result_json.json["findings"]}
    assert paths, "the fixture should produce findings"
    for path in paths:
        if match:
            base = match.group(1)
            assert path.startswith(base.rstrip("/") + "/"), (path, base)
            assert path[len(base.rstrip("/")) + 1 :] in text
        else:
            assert path in text


@pytest.mark.parametrize("how", ["journal", "relative", "dot", "two-trees", "trailing-slash", "symlink"])
def test_the_paths_caption_is_true_whatever_path_was_given(tmp_path, monkeypatch, how):
    first = tmp_path / "a" / "store"
    second = tmp_path / "b" / "other"
    for root in (first, second):
        write_journal(root / "-p" / f"{SID}.jsonl", encode(session_records(SID)) + b'{"kind":"user","t":"x","cont')
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(first)
    args = {"journal": [first / "-p" / f"{SID}.jsonl"], "relative": ["a/store"], "dot": ["."],
            "two-trees": [first, second], "trailing-slash": [f"{first}/"], "symlink": [link]}[how]
    if how == "dot":
        monkeypatch.chdir(first)
    human, machine = run_cli("fsck", *args), run_cli("fsck", "--json", *args)
    assert human.exit_code == machine.exit_code == 4
    _caption_tells_the_truth(human, machine)


def test_a_deep_title_is_indexed_and_repaired_without_recursion(tmp_path):
    deep = b"[" * 1000 + b'"x"' + b"]" * 1000
    store = tmp_path / "store"
    write_journal(store / "-p" / f"{SID}.jsonl", encode(session_records(SID, turns=1)[:-1])
                  + b'{"kind":"title","t":"2026-11-30T09:32:00Z","title":' + deep + b',"seq":3}\n' + b'{"kind":"us')
    for command in (["fsck", "--repair"], ["reindex", "--full"], ["ls", "--json"]):
        result = run_cli(*command, store)
        assert result.exit_code in (0, 1), (command, result.stderr)
    assert run_cli("fsck", store).exit_code == 0


def _run_at(columns: int, *args):
    result = run_cli(*args, columns=columns)
    return result.exit_code, result.stdout


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_at_any_width_every_path_and_id_is_printed_whole_on_one_line(tmp_path, columns):
    store = tmp_path / "store"
    long_slug = "-home-ada-code-" + "a-really-long-project-folder-name-" * 3 + "x"
    long_id = "cursor-" + "0123456789abcdef" * 4
    for folder, sid in ((PROJECT_SLUG, SID), (long_slug, long_id)):
        write_journal(store / folder / f"{sid}.jsonl", encode(session_records(sid, turns=1)) + b'{"kind":"user","t":"x","con')
    paths = {f["path"] for f in run_cli("fsck", "--json", store).json["findings"]}
    for command in (["fsck", store], ["fsck", "--repair", "-v", store], ["ls", "--verify", store], ["ls", store]):
        code, stdout = _run_at(columns, *command)
        assert code in (0, 1, 4), stdout
        lines = stdout.splitlines()
        base = next((line.split("paths relative to ", 1)[1].strip() for line in lines if "paths relative to " in line), None)
        wanted = {long_id} if command[0] == "ls" else {p[len(base) + 1:] if base else p for p in paths}
        for name in wanted:
            assert any(name in line for line in lines), f"{name!r} is broken in:\n{stdout}"


def test_a_cache_finding_names_the_repair_and_following_it_ends_clean(tmp_path):
    """A missing index.json is a finding on its folder, the rebuild an action on the file: the
    check's "next:" line must still name the repair, and following it must end clean."""
    import shlex

    from tests.helpers import make_store

    store = make_store(tmp_path / "store")
    for index in store.rglob("index.json"):
        index.unlink()
    check = run_cli("fsck", str(store))
    assert check.exit_code == 0 and "missing-index" in check.stdout
    step = next(line for line in check.stderr.splitlines() if line.startswith("next: run `"))
    command = shlex.split(step.split("`")[1])
    assert command[:3] == ["levelsess", "fsck", "--repair"]
    assert run_cli(*command[1:]).exit_code == 1
    again = run_cli("fsck", str(store))
    assert again.exit_code == 0 and "next:" not in again.stderr and "0 warning(s)" in again.stdout


def test_the_progress_bar_on_a_terminal_shows_its_label_never_markup(tmp_path):
    """The consoles read no markup (a path may hold brackets); the bar's label column once was
    the markup string "[progress.description]{task.description}", printed as it stood."""
    store = make_store(tmp_path / "store", sessions=6)
    code, shown = on_a_terminal("fsck", "--jobs", "1", str(store), stderr_too=True)
    assert code == 0, shown
    assert "checking" in shown, shown  # the bar was drawn
    assert "[progress." not in shown and "{task." not in shown
