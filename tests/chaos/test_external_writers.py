"""External writers: every journal they keep under the chaos folder is checked and repaired,
wherever a layout keeps it, and an ACK for a file the harness cannot check fails the run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from chaos.harness import Config, run
from chaos.scope import journals
from tests.helpers import run_cli

WRITER = Path(__file__).with_name("two_write_writer.py")
PLACES = {  # where two_write_writer.py puts writer N's journal, and the folder that holds it
    "root": "-chaos-ext{n}",
    "store": "store/-chaos-ext{n}",
    "nested": "stores/main/-chaos-ext{n}",
    "ws": "ws/.logician/sessions/sessions/ext{n}",
    "root-ws": ".logician/sessions/sessions/ext{n}",
}


def _writer(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, str(WRITER), *args))


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_two_write_writer_is_checked_and_repaired_wherever_it_keeps_journals(tmp_path, place):
    """Kills between a record's JSON and its newline leave whole unterminated records; each cycle
    repairs them (the newline is appended) and rebuilds the caches beside them."""
    work = tmp_path / "work"
    # a pause of up to 100 ms between a record and its newline, and kills a second or more after the
    # start (a loaded machine takes that long to start Python): most kills land in the pause
    report = run(Config(cycles=5, writers=2, seed=3, writer_cmd=_writer(place, "--gap", "0.1"), work=work, min_run=1.0, max_run=1.5))
    assert report.ok, report.violations[:3]
    assert report.acked >= 1 and report.lost == 0  # how many depends on the machine's load
    assert report.landings["kill"]["unterminated"] >= 1
    folder = work / "run-0001"
    found = journals(folder)
    assert {str(j.parent.relative_to(folder)) for j in found} == {PLACES[place].format(n=n) for n in (0, 1)}
    for journal in found:  # repaired after the last kill: whole and terminated, its cache rebuilt beside it
        result = run_cli("fsck", journal.parent, "--json")
        assert result.exit_code == 0 and result.json["findings"] == [], result.json["findings"]


@pytest.mark.parametrize("place", ["root", "store", "ws"])
def test_a_record_killed_before_its_newline_is_kept_whole(tmp_path, place):
    work = tmp_path / "work"
    command = _writer(place, "--stall-after", "3")  # 3 ACKed records, then a 4th without its newline until the kill
    report = run(Config(cycles=1, writers=1, seed=1, writer_cmd=command, work=work, min_run=5, max_run=5.1))
    assert report.ok, report.violations
    assert report.acked == 3  # it stalls after 3: five seconds is enough on any load this machine sees
    assert report.landings["kill"] == {"torn": 0, "unterminated": 1, "between": 0}
    [journal] = journals(work / "run-0001")
    data = journal.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 4, "the unacknowledged whole record was kept and terminated"
    assert report.trimmed_bytes == 0


_ACKER = """
import hashlib, os, pathlib, sys, time
root = pathlib.Path(os.environ["LEVELSESS_CHAOS_DIR"])
path = root / {relpath!r}
path.parent.mkdir(parents=True, exist_ok=True)
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for line in {lines!r}:
    os.write(fd, line + b"\\n")
    os.fsync(fd)
    end = os.lseek(fd, 0, os.SEEK_CUR)
    print("ACK", {relpath!r}, end, hashlib.sha256(line).hexdigest(), flush=True)
time.sleep(60)
"""
META = b'{"kind":"meta","v":1,"id":"2026-12-01T00-00-00-unch","project":"/x","createdAt":"2026-12-01T00:00:00Z","title":null}'
USER = b'{"kind":"user","t":"2026-12-01T00:00:01Z","content":"hello"}'


@pytest.mark.parametrize("relpath, lines, says", [
    ("notes/session.log", [META, USER], "no layout keeps a journal there"),
    ("-chaos-x/.2026-12-01T00-00-00-unch.jsonl", [META, USER], "no layout keeps a journal there"),
    ("-chaos-x/2026-12-01T00-00-00-unch.jsonl", [b'{"foo":1}', b'{"foo":2}'], "fsck calls it unknown-format"),
])
def test_an_ack_for_a_file_the_harness_cannot_check_is_a_violation(tmp_path, relpath, lines, says):
    script = tmp_path / "acker.py"
    script.write_text(_ACKER.format(relpath=relpath, lines=lines))
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    report = run(Config(cycles=1, writers=1, seed=1, writer_cmd=command, min_run=0.4, max_run=0.5))
    assert report.acked == 2 and report.lost == 0, "the bytes are there; the harness just cannot check them"
    assert [v["kind"] for v in report.violations] == ["unchecked"]
    violation = report.violations[0]
    assert violation["path"] == relpath and says in violation["detail"] and "2 ACKed record(s)" in violation["detail"]
    assert not report.ok


def test_the_writer_cmd_help_says_where_a_writer_may_put_its_files():
    result = run_cli("chaos", "run", "--help")
    text = " ".join(result.stdout.replace("│", " ").split())
    for words in ("LevelCode store root", "store/", ".logician/sessions/sessions/", "'unchecked' violation"):
        assert words in text, words


def test_a_journal_at_the_chaos_root_acked_as_dot_slash_is_checked(tmp_path):
    """``./x.jsonl`` and ``x.jsonl`` name the same file; the root itself may hold journals."""
    script = tmp_path / "acker.py"
    script.write_text(_ACKER.format(relpath="./2026-12-01T00-00-00-unch.jsonl", lines=[META, USER]))
    work = tmp_path / "work"
    report = run(Config(cycles=1, writers=1, seed=1, writer_cmd=f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
                        work=work, min_run=0.4, max_run=0.5))
    assert report.ok and report.acked == 2, report.violations
    assert (work / "run-0001" / "index.json").exists(), "the root was repaired as a store folder (its index rebuilt)"
