"""A Copilot CLI log past KEEP_BYTES is read as a stream and its records converted again on each
pass (memory flat, issue 27: a 20 MB log held peaked at 169 MiB): the same journals, report and
findings as one held in memory, for every kind of event and every damage SOURCES-AGENTS §4 lists,
on the first import and after the log grew; a log that changed between the read and a pass is
refused, never half written."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.bench.probe import PROBE
from tests.helpers import import_report, run_cli, store_files
from tests.importers.test_copilot import copilot_session, encode, events
from toolkit.errors import FileChangedError
from toolkit.importers import copilot
from toolkit.importers.output import Options

SID = "5e55a0e1-0000-4000-8000-0000000000c0"
MIB = 1 << 20
HELD = copilot.KEEP_BYTES  # (as shipped: hypothesis runs every example in one monkeypatch)




def _event(kind: str, data: dict, n: int, parent: str | None = None) -> bytes:
    return encode([{"type": kind, "data": data, "id": str(uuid.UUID(int=1000 + n)),
                    "timestamp": f"2026-01-10T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "parentId": parent}])


def _pieces(cwd: Path) -> dict[str, object]:
    """Lines of a log, by what they are: each kind of event and each damage."""
    base = [line + b"\n" for line in encode(events(SID, cwd)).split(b"\n") if line]
    split = _event("tool.execution_complete", {"toolCallId": "c1", "success": True,
                                               "result": {"content": "RAWNL"}}, 90).replace(b"RAWNL", b"one\ntwo\nthree")
    return {
        "start": base[0], "prompt": base[1], "turn": base[2], "step": base[3], "tool start": base[4], "tool done": base[5],
        "tool start 2": base[6], "tool failed": base[7], "turn end": base[8], "model": base[9], "reply": base[10],
        "quota": base[11], "compacting": base[12], "compacted": base[13], "shutdown": base[14],
        "resume": _event("session.resume", {"resumeTime": "2026-01-10T10:00:00.000Z", "context": {"cwd": str(cwd)}}, 91),
        "unrequested call": _event("tool.execution_start", {"toolCallId": "c9", "toolName": "bash", "arguments": "ls"}, 92),
        "unrequested result": _event("tool.execution_complete", {"toolCallId": "c8", "success": False,
                                                                 "error": {"message": "no"}}, 93),
        "pending step": _event("assistant.message", {"messageId": "m9", "content": "", "interactionId": "i1",
                                                     "toolRequests": [{"toolCallId": "c7", "name": "bash", "arguments": {}}]}, 94),
        "split by newlines": split,
        "joined": base[1].rstrip(b"\n") + base[10],
        "joined and cut": base[1].rstrip(b"\n") + base[10][:40] + b"\n",
        "not JSON": b"this is not json\n",
        "not an event": b'{"no":"type"}\n',
        "blank": b"\n  \n",
        "no id": b'{"type":"user.message","data":{"content":"no id"},"timestamp":"2026-01-10T11:00:00.000Z"}\n',
        "second start": _event("session.start", {"sessionId": "other", "startTime": "2026-01-10T12:00:00.000Z"}, 95),
    }


KINDS = sorted(_pieces(Path("/x")))
TAILS = {"none": b"", "torn": b'{"type":"assistant.message","da', "nul run": b"\0" * 1206, "nul run after newline": b"\n" + b"\0" * 40}


def _log(cwd: Path, kinds: list[str], tail: str, bom: bool) -> bytes:
    pieces = _pieces(cwd)
    return (copilot.BOM if bom else b"") + b"".join(pieces[kind] for kind in kinds) + TAILS[tail]


def _both(tmp_path: Path, monkeypatch, data: bytes, grown: bytes = b"") -> None:
    """The log imported held and streamed, into stores of their own: the same reports and journals;
    then grown by ``grown`` and imported again."""
    (tmp_path / "proj").mkdir(exist_ok=True)
    home = tmp_path / ".copilot"
    log = copilot_session(home, SID, tmp_path / "proj", objects=[])

    def alike() -> None:
        reports = []
        for keep in (HELD, 0):
            monkeypatch.setattr(copilot, "KEEP_BYTES", keep)
            reports.append(import_report("copilot", home, tmp_path / f"store-{keep}"))
        assert reports[0] == reports[1]
        assert store_files(tmp_path / f"store-{HELD}") == store_files(tmp_path / "store-0")
    log.write_bytes(data)
    alike()
    if grown:
        log.write_bytes(data + grown)
        alike()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=0, max_size=14), tail=st.sampled_from(sorted(TAILS)),
       bom=st.booleans(), lead=st.booleans())
@example(kinds=KINDS, tail="torn", bom=True, lead=True)
@example(kinds=["split by newlines", "joined", "not JSON"], tail="nul run", bom=False, lead=False)
def test_a_log_read_as_a_stream_imports_as_one_held(tmp_path_factory, monkeypatch, kinds, tail, bom, lead):
    tmp_path = tmp_path_factory.mktemp("copilot")
    cwd = tmp_path / "proj"
    order = (["start"] if lead else []) + kinds
    _both(tmp_path, monkeypatch, _log(cwd, order, tail, bom))


def test_every_kind_of_line_then_growth_imports_alike_held_or_streamed(tmp_path, monkeypatch):
    cwd = tmp_path / "proj"
    data = _log(cwd, ["start"] + KINDS, "none", False)
    pieces = _pieces(cwd)
    _both(tmp_path, monkeypatch, data, grown=pieces["prompt"] + pieces["step"] + pieces["tool done"] + pieces["reply"])


def test_a_log_rewritten_between_the_read_and_a_pass_is_refused_and_one_that_grew_gives_what_was_read(tmp_path, monkeypatch):
    monkeypatch.setattr(copilot, "KEEP_BYTES", 0)
    (tmp_path / "proj").mkdir()
    log = copilot_session(tmp_path / ".copilot", SID, tmp_path / "proj")
    session = copilot.session_from_stream(log, Options(), lambda _f: None)
    first = [(record["sourceKey"], json.dumps(record.get("content"), sort_keys=True)) for record in session.records]
    held = copilot.session_from_log(log, log.read_bytes(), Options(), lambda _f: None)
    assert first == [(record["sourceKey"], json.dumps(record.get("content"), sort_keys=True)) for record in held.records]
    assert len(session.records) == len(first) == len(held.records)
    data = log.read_bytes()
    log.write_bytes(data + _event("user.message", {"content": "later"}, 99))
    assert [(r["sourceKey"], json.dumps(r.get("content"), sort_keys=True)) for r in session.records] == first, \
        "events written since: the next import's"
    for old, new in ((b'"fix the failing', b'"fix the failinG'), (b'"1 failed', b'"2 failed')):  # a prompt; a tool result read by its call
        log.write_bytes(data.replace(old, new, 1))  # same size, rewritten in place
        with pytest.raises(FileChangedError):
            list(session.records)


def test_a_changed_log_leaves_no_journal_and_says_so(tmp_path, monkeypatch):
    """The change found while the journal is written: no journal, a finding, the next import takes it."""
    monkeypatch.setattr(copilot, "KEEP_BYTES", 0)
    (tmp_path / "proj").mkdir()
    home = tmp_path / ".copilot"
    copilot_session(home, SID, tmp_path / "proj")
    real = copilot.session_from_stream

    def rewritten(path, options, report):  # the log rewritten just after its first read
        session = real(path, options, report)
        path.write_bytes(path.read_bytes().replace(b'"1 failed', b'"2 failed', 1))
        return session
    monkeypatch.setattr(copilot, "session_from_stream", rewritten)
    result = run_cli("import", "--from", "copilot", "--source", home, "--store", tmp_path / "store", "--json")
    assert "Traceback" not in result.stdout + result.stderr and result.exit_code != 0
    assert "changed while it was being imported" in result.stdout
    assert not list((tmp_path / "store").rglob("copilot-*.jsonl"))
    monkeypatch.setattr(copilot, "session_from_stream", real)
    again = json.loads(run_cli("import", "--from", "copilot", "--source", home, "--store", tmp_path / "store", "--json").stdout)
    assert [s["status"] for s in again["sessions"]] == ["created"]


@pytest.mark.slow
def test_a_20_mb_log_imports_in_flat_memory(tmp_path):
    """Copilot CLI's users report valid logs of 18-20 MB (SOURCES-AGENTS §4): held, one peaked at
    169 MiB; read as a stream it stays under 100 MiB, its journal the one a held read writes."""
    home, cwd = tmp_path / ".copilot", tmp_path / "proj"
    cwd.mkdir()
    pieces = _pieces(cwd)
    turn = b"".join(pieces[k] for k in ("prompt", "turn", "step", "tool start", "tool done", "tool start 2", "tool failed",
                                        "turn end", "reply"))
    log = copilot_session(home, SID, cwd, objects=[])
    with open(log, "wb") as out:
        out.write(pieces["start"])
        for n in range(20 * MIB // len(turn)):  # (the same ids each turn: each step carries its calls, as in a real log)
            out.write(turn.replace(b'"i1"', b'"i%d"' % n))
    report = tmp_path / "rss"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), "import", "--from", "copilot", "--source", str(home),
                           "--store", str(tmp_path / "store"), "--json"], capture_output=True, timeout=600)
    assert proc.returncode in (0, 4), proc.stderr.decode(errors="replace")[-3000:]
    [session] = json.loads(proc.stdout)["sessions"]
    assert session["status"] == "created"
    rss = int(report.read_text())
    assert rss < 100 * MIB, f"import of a {log.stat().st_size / MIB:.0f} MiB log: peak RSS {rss / MIB:.1f} MiB"
