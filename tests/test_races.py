"""The race harness: a writer that takes no lock appends while levelsess changes the same file.

The appender (tests/race_appender.py) writes the way Claude Code does - open, append one line,
close - and ACKs each record after its close.  It is started at the worst moment of each writing
verb (right after levelsess saved what it will cut or replace, while it holds the file; or just
before it swaps a rewrite in) and also runs continuously through the write.  Whatever the timing,
the outcome is asserted, never a time: every ACKed record is in the journal byte for byte, every
complete record that was there before is still there, and nothing raised.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
import uuid as uuidlib
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, make_store, run_cli, write_journal, session_records
from toolkit import durable

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the appender races through /proc (Linux)")

APPENDER = Path(__file__).with_name("race_appender.py")


class Appender:
    """A real process appending to ``path`` without a lock; ``acks`` are the records it wrote."""

    def __init__(self, path: Path, layout: str, count: int, tmp: Path, *, parent: str | None = None, seq: int = 1) -> None:
        self.stop = tmp / f"stop-{uuidlib.uuid4().hex}"
        args = [sys.executable, str(APPENDER), str(path), layout, str(count), "--go", "--stop", str(self.stop),
                "--seq", str(seq)]
        if count == 0:
            args += ["--pause", "0.0005"]
        if parent:
            args += ["--parent", parent]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.count = count
        self.acks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.started = False

    def _read(self) -> None:
        for line in self.proc.stdout:
            word, _, rest = line.rstrip(b"\n").partition(b" ")
            if word == b"ACK":
                digest, _, record = rest.partition(b" ")
                assert hashlib.sha256(record).hexdigest().encode() == digest
                self.acks.append(record)

    def go(self) -> None:
        if not self.started:
            self.started = True
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.flush()

    def blocked_or_done(self, limit: float = 30.0) -> None:
        """Wait until the appender has finished or waits in the kernel on levelsess's lease."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if "lease" in Path(f"/proc/{self.proc.pid}/wchan").read_text():
                    return
            except OSError:
                return
            time.sleep(0.001)

    def finish(self) -> list[bytes]:
        self.go()
        if self.count == 0:  # a continuous appender stops at the next record (after one at least); a counted one writes them all
            deadline = time.monotonic() + 60
            while not self.acks and self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            self.stop.touch()
        self.proc.wait(timeout=120)
        self._reader.join(timeout=30)
        assert self.proc.returncode == 0, self.proc.stderr.read().decode()
        return self.acks


# -- journals -----------------------------------------------------------------------------------


def claude_line(number: int, parent: str | None, kind: str = "user") -> tuple[bytes, str]:
    me = str(uuidlib.UUID(int=number + 1))
    record = {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": me, "sessionId": "race",
              "cwd": "/home/ada/p", "timestamp": f"2026-12-01T10:{number // 60 % 60:02d}:{number % 60:02d}.000Z",
              "message": {"role": kind, "content": f"complete record {number} " + "y" * (number * 53 % 700)}}
    return orjson.dumps(record), me


def claude_journal(tmp: Path, count: int, tail: bytes = b"", damage: str | None = None) -> tuple[Path, list[bytes], str]:
    """A Claude Code transcript of ``count`` chained records (+ ``tail``); ``damage``: None,
    'spliced' (two records on one line: salvage) or 'dangling' (a parent that is nowhere: relink)."""
    lines, parent = [], None
    for number in range(count):
        line, parent = claude_line(number, parent, "user" if number % 2 == 0 else "assistant")
        lines.append(line)
    if damage == "dangling":
        lines[count // 2] = lines[count // 2].replace(b'"parentUuid":"', b'"parentUuid":"f' , 1)
    body = b"\n".join(lines) + b"\n"
    if damage == "spliced":
        body = body.replace(lines[count // 2] + b"\n", lines[count // 2], 1)
    journal = tmp / ".claude" / "projects" / "-home-ada-p" / "0b5e8a4c-2f4e-4a37-9a55-1d2c3b4a5f60.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(body + tail)
    return journal, lines, parent


def levelcode_journal(tmp: Path, v: int, tail: bytes = b"") -> tuple[Path, list[bytes]]:
    store = make_store(tmp / "store", sessions=1, v=v)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    if tail:
        with open(journal, "ab") as handle:
            handle.write(tail)
    return journal, [line for line in journal.read_bytes().split(b"\n")[:-1]]


def everything_kept(journal: Path, before: list[bytes], acks: list[bytes], marks: list[bytes], extra: list[Path] = ()) -> None:
    """Every ACKed record's bytes are in the journal (or in ``extra`` places), ending a line (one
    appended onto a torn tail before levelsess came is spliced to it, not lost: salvage splits it);
    every earlier complete record is still there (found by ``marks``: a rewrite may splice a field)."""
    data = b"".join(p.read_bytes() for p in [journal, *extra] if p.exists())
    lost = [ack for ack in acks if ack + b"\n" not in data]
    assert not lost, f"{len(lost)} of {len(acks)} ACKed records are not in {journal}: {lost[:1]}"
    missing = [mark for mark in marks if mark not in data]
    assert not missing, f"{len(missing)} of {len(before)} earlier records are gone: {missing[:3]}"


def claude_marks(lines: list[bytes]) -> list[bytes]:
    return [b'"uuid":"' + orjson.loads(line)["uuid"].encode() + b'"' for line in lines]


# -- hooks: start the appender at a chosen moment of levelsess's own write ------------------------


def hook(monkeypatch, name: str, appender: Appender, *, after: bool, wait: bool) -> None:
    """Wrap ``durable.<name>``: its first call starts the appender (before or after the call) and,
    with ``wait``, lets it reach the file (blocked on our lease, or done) before going on."""
    original = getattr(durable, name)

    def wrapped(*args, **kwargs):
        if not after:
            trigger()
        result = original(*args, **kwargs)
        if after:
            trigger()
        return result

    def trigger() -> None:
        if not appender.started:
            appender.go()
            if wait:
                appender.blocked_or_done()

    monkeypatch.setattr(durable, name, wrapped)


# (verb, the damage it repairs, where the appender starts: (durable function, after?, wait?))
WORST = {
    "trim": [("write_new", True, True), ("held_still", False, True), ("truncate_saving", False, True)],
    "terminate": [("fsync_fd", True, True), ("held_still", False, True)],
    "salvage": [("_keep", True, True), ("_swap", False, True), ("_replace", False, True)],
    "relink": [("_keep", True, True), ("_swap", False, True), ("_replace", False, True)],
}


def _claude_case(tmp: Path, verb: str):
    if verb == "trim":
        journal, lines, last = claude_journal(tmp, 40, tail=b'{"parentUuid":"3f2a","type":"assist')
        return journal, lines, last, ["fsck", "--repair", journal]
    if verb == "terminate":
        journal, lines, last = claude_journal(tmp, 40)
        journal.write_bytes(journal.read_bytes()[:-1])
        return journal, lines, last, ["fsck", "--repair", journal]
    if verb == "salvage":
        journal, lines, last = claude_journal(tmp, 40, damage="spliced")
        return journal, lines, last, ["fsck", "--salvage", "--yes", journal]
    journal, lines, last = claude_journal(tmp, 40, damage="dangling")
    return journal, lines, last, ["fsck", "--relink", "--yes", journal]


@pytest.fixture(params=["lease", "no-lease"])
def leases(request, monkeypatch):
    """Run with file leases, and without them (another OS, a file system without leases): then the
    checks just before and after each change stand in, and must still lose nothing at these moments."""
    if request.param == "no-lease":
        monkeypatch.setattr("toolkit.lease.take", lambda fd: "unsupported")
    return request.param


@pytest.mark.parametrize("verb,point", [(verb, point) for verb, points in WORST.items() for point in points],
                         ids=lambda value: value if isinstance(value, str) else f"{value[0]}-{'after' if value[1] else 'before'}")
def test_an_appender_at_the_worst_moment_loses_nothing(tmp_path, monkeypatch, leases, verb, point):
    journal, lines, last, args = _claude_case(tmp_path, verb)
    appender = Appender(journal, "claude", 5, tmp_path, parent=last)
    name, after, wait = point
    hook(monkeypatch, name, appender, after=after, wait=wait)
    result = run_cli(*args)
    acks = appender.finish()
    assert appender.started, f"durable.{name} was never called by {args[:3]}"
    assert len(acks) == 5
    assert result.exit_code & ~5 == 0 and result.exit_code & 5, result.stdout + result.stderr
    everything_kept(journal, lines, acks, claude_marks(lines))


@pytest.mark.parametrize("verb", list(WORST))
def test_a_continuous_appender_loses_nothing(tmp_path, monkeypatch, verb):
    journal, lines, last, args = _claude_case(tmp_path, verb)
    appender = Appender(journal, "claude", 0, tmp_path, parent=last)
    name = {"trim": "held_still", "terminate": "held_still", "salvage": "rewriting", "relink": "rewriting"}[verb]
    hook(monkeypatch, name, appender, after=False, wait=False)
    try:
        result = run_cli(*args)
        time.sleep(0.05)  # let it append a few more after levelsess is done
    finally:
        acks = appender.finish()
    assert appender.started and acks
    assert result.exit_code & ~5 == 0 and result.exit_code & 5, result.stdout + result.stderr
    everything_kept(journal, lines, acks, claude_marks(lines))


def test_a_repair_that_finds_the_file_changed_says_so_and_exits_4(tmp_path, monkeypatch):
    """The appender lands before the lease: the torn tail is now mid-file, so nothing is cut."""
    journal, lines, last, args = _claude_case(tmp_path, "trim")
    appender = Appender(journal, "claude", 1, tmp_path, parent=last)
    hook(monkeypatch, "held_still", appender, after=False, wait=True)
    result = run_cli("fsck", "--json", "--repair", journal)
    acks = appender.finish()
    codes = {f["code"] for f in result.json["findings"] if not f["repaired"]}
    assert "changed-during-repair" in codes and result.exit_code & 4, result.stdout
    changed = [f for f in result.json["findings"] if f["code"] == "changed-during-repair"]
    assert "nothing was cut" in changed[0]["message"]
    everything_kept(journal, lines, acks, claude_marks(lines))


@pytest.mark.parametrize("mode", ["ab", "rb"])
def test_a_process_that_opens_the_journal_after_the_check(tmp_path, monkeypatch, mode):
    """It keeps the file open, so no lease can be had.  A writer's descriptor: in-use, nothing cut
    (even with --force).  A reader's: the checks before and after stand in, and the repair is done."""
    monkeypatch.setattr("toolkit.lease.WAIT_SECONDS", 0.2)
    journal, lines, last, args = _claude_case(tmp_path, "trim")
    before = journal.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", "import sys,time; f=open(sys.argv[1],sys.argv[2]); print('open', flush=True); "
                               "time.sleep(60)", str(journal), mode], stdout=subprocess.PIPE)
    original = durable.held_still

    def opened_meanwhile(path):
        assert holder.stdout.readline().strip() == b"open"
        return original(path)

    monkeypatch.setattr(durable, "held_still", opened_meanwhile)
    try:
        result = run_cli("fsck", "--json", "--repair", "--force", journal)
    finally:
        holder.kill()
        holder.wait()
    if mode == "rb":
        assert result.exit_code == 1 and journal.read_bytes() == b"\n".join(lines) + b"\n", result.stdout
        return
    assert journal.read_bytes() == before and result.exit_code == 4
    in_use = [f for f in result.json["findings"] if f["code"] == "in-use"]
    assert f"pid {holder.pid}" in in_use[0]["message"] and "even with --force" in in_use[0]["message"]


def test_a_held_file_makes_an_opener_wait_until_levelsess_lets_go(tmp_path):
    """The mechanism itself, on this machine's file system: while levelsess holds a journal, an
    appender's open waits in the kernel, and its record lands after levelsess's change."""
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(b'{"kind":"meta"}\n{"torn')
    appender = Appender(journal, "levelcode1", 1, tmp_path)
    with durable.held_still(journal) as held:
        if not held.leased:
            appender.finish()
            pytest.skip("no file leases on this file system: the checks before and after stand in")
        appender.go()
        appender.blocked_or_done()
        assert appender.proc.poll() is None and not appender.acks  # waiting on us
        assert held.waiting()
        os.ftruncate(held.fd, 16)
    acks = appender.finish()
    assert journal.read_bytes() == b'{"kind":"meta"}\n' + acks[0] + b"\n"


# -- LevelCode: a writer that ignores the lock protocol; migrate, reindex, trash ------------------


def test_migrate_races_an_appender_that_ignores_the_lock(tmp_path, monkeypatch):
    for name, after in (("_swap", False), ("_keep", True)):
        case = tmp_path / name
        journal, before = levelcode_journal(case, v=1)
        appender = Appender(journal, "levelcode1", 3, case)
        hook(monkeypatch, name, appender, after=after, wait=True)
        result = run_cli("migrate", "--json", journal.parent.parent)
        acks = appender.finish()
        monkeypatch.undo()
        assert result.exit_code in (0, 4), result.stdout + result.stderr
        marks = [line.split(b'"content":"')[1][:20] for line in before if b'"content":"' in line]
        everything_kept(journal, before, acks, marks)


@pytest.mark.parametrize("command", ["reindex", "fsck-repair"])
def test_store_verbs_race_a_continuous_appender(tmp_path, monkeypatch, command):
    journal, before = levelcode_journal(tmp_path, v=2, tail=b'{"kind":"user","t":"x","conte')
    appender = Appender(journal, "levelcode2", 0, tmp_path, seq=len(before))
    appender.go()
    try:
        while not appender.acks and appender.proc.poll() is None:
            time.sleep(0.001)
        args = ["reindex", journal.parent.parent] if command == "reindex" else ["fsck", "--repair", "--force", journal.parent.parent]
        result = run_cli(*args)
    finally:
        acks = appender.finish()
    assert result.exit_code & ~5 == 0, result.stdout + result.stderr  # done, corrected or refused: never 8
    marks = [line.split(b'"content":"')[1][:20] for line in before if b'"content":"' in line]
    everything_kept(journal, before, acks, marks)


def test_trash_races_a_continuous_appender(tmp_path, isolated_home):
    journal, before = levelcode_journal(tmp_path, v=2)
    appender = Appender(journal, "levelcode2", 0, tmp_path, seq=len(before))
    started = time.time() - 1  # trashed copies of other tests (the same journal name) are older
    appender.go()
    try:
        while not appender.acks and appender.proc.poll() is None:
            time.sleep(0.001)
        result = run_cli("trash", "--in", journal.parent.parent, journal.stem)
    finally:
        acks = appender.finish()
    assert result.exit_code in (0, 4), result.stdout + result.stderr
    # send2trash fixes its trash folder when first imported: in a worker that imported it in an
    # earlier test, that test's home holds the trashed journal (any name: "x 1.jsonl" on a clash)
    from send2trash import plat_other

    homes = {Path(isolated_home), Path(os.fsdecode(plat_other.HOMETRASH_B))}
    trashed = [p for home in homes for p in home.rglob(journal.stem + "*.jsonl") if p.stat().st_mtime >= started]
    marks = [line.split(b'"content":"')[1][:20] for line in before if b'"content":"' in line]
    everything_kept(journal, before, acks, marks, extra=[p for p in trashed if p != journal])


# -- the class: any torn tail, any moment, any number of appended records -------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(3, 30),
       tail=st.sampled_from([b'{"parentUuid":"3f', b"\0" * 300, b"\0\n\0\n" + b'{"type":"us', b"garbage that is no record"]),
       point=st.sampled_from(WORST["trim"]),
       appended=st.integers(1, 4))
def test_trim_never_loses_an_appended_record(tmp_path_factory, count, tail, point, appended):
    tmp = tmp_path_factory.mktemp("race")
    journal, lines, last = claude_journal(tmp, count, tail=tail)
    appender = Appender(journal, "claude", appended, tmp, parent=last)
    with pytest.MonkeyPatch.context() as monkeypatch:
        hook(monkeypatch, point[0], appender, after=point[1], wait=point[2])
        result = run_cli("fsck", "--repair", journal)
    acks = appender.finish()
    assert len(acks) == appended and result.exit_code & ~5 == 0 and result.exit_code & 5
    everything_kept(journal, lines, acks, claude_marks(lines))
    data = journal.read_bytes()
    assert data.startswith(b"\n".join(lines) + b"\n")


# -- restore: appending the missing lines back into a transcript the tool may be writing -----------


@pytest.mark.parametrize("point", [("held_still", False, True), ("fsync_fd", True, True), ("append_if_unchanged", False, True)],
                         ids=lambda p: f"{p[0]}-{'after' if p[1] else 'before'}")
def test_restore_races_an_appender_in_the_tool_s_transcript(tmp_path, monkeypatch, point):
    journal, lines, last = claude_journal(tmp_path, 30)
    store = tmp_path / "store"
    imported = run_cli("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", store, "--json")
    assert imported.exit_code == 0, imported.stdout + imported.stderr
    journal.write_bytes(b"\n".join(lines[:10]) + b"\n")  # the tool lost the rest; it goes on writing
    appender = Appender(journal, "claude", 3, tmp_path, parent=orjson.loads(lines[9])["uuid"])
    hook(monkeypatch, point[0], appender, after=point[1], wait=point[2])
    result = run_cli("restore", journal.stem, "--store", store, "--yes", "--json")
    acks = appender.finish()
    assert appender.started and len(acks) == 3
    assert "Traceback" not in result.stdout + result.stderr and result.exit_code in (0, 4, 8), result.stdout
    everything_kept(journal, lines[:10], acks, claude_marks(lines[:10]))
    if result.exit_code == 0:  # restored first, then the tool's records after it: nothing cut, nothing twice
        assert journal.read_bytes() == b"\n".join(lines) + b"\n" + b"".join(a + b"\n" for a in acks)
