"""What one chaos cycle verifies, after the kills (and the power cut), before and after
``fsck --repair`` of every journal under the chaos folder (see :mod:`chaos.harness`)."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from toolkit.fsck import check_folders, plan_repair
from toolkit.locks import LockState, inspect_lock
from toolkit.reindex import reindex

from .scope import discover_chaos, file_sizes, journals

if TYPE_CHECKING:
    from .harness import Harness

TAIL_CODES = {"torn-tail", "unterminated-tail"}
ACK_STAGES = {  # when ACKed records are checked: the violation kind, and the words for the moment
    "after-kill": ("lost", "after the kill"),
    "after-power-cut": ("lost", "after LazyFS's power cut (every unsynced byte dropped)"),
    "after-repair": ("repair-removed-acked", "after fsck --repair"),
}


def _record_ok(data: bytes, end: int, digest: str) -> bool:
    if end < 1 or end > len(data) or data[end - 1] != 10:
        return False
    start = data.rfind(b"\n", 0, end - 1) + 1
    return hashlib.sha256(data[start : end - 1]).hexdigest() == digest


class CycleCheck:
    """The checks of one cycle, on what the kills (and the power cut) left; the violations go
    to ``found`` and the counts to the harness's report."""

    def __init__(self, harness: Harness, number: int) -> None:
        self.h, self.number, self.report = harness, number, harness.report
        self.folder = harness.folder
        self.bad_files: set[str] = set()
        self.missing: set[tuple[int, str]] = set()
        self.found: list[dict] = []

    def violation(self, kind: str, path: str | None, detail: str) -> None:
        self.found.append({"cycle": self.number, "kind": kind, "path": path, "detail": detail})

    def check_acks(self, stage: str, only: set[str] | None = None) -> None:
        """Every ACKed record (of the files in ``only``, if given) is whole at its offset."""
        kind, when = ACK_STAGES[stage]
        for relpath, acks in self.h.acks.items():
            if only is not None and relpath not in only:
                continue
            try:
                data = (self.folder / relpath).read_bytes()
            except OSError:
                data = b""
            missing = {(end, digest) for end, digest in acks if not _record_ok(data, end, digest)} - self.missing
            if missing:
                self.bad_files.add(relpath)
                self.missing |= missing
                self.report.lost += len(missing)
                more = "more " if stage == "after-repair" else ""
                self.violation(kind, relpath, f"{len(missing)} {more}ACKed record(s) missing or changed {when}, first ending at {min(missing)[0]}")

    def check_locks(self) -> None:
        for lock in self.folder.rglob("*.jsonl.lock"):
            info = inspect_lock(lock)
            if info is not None and info.state is not LockState.STALE:
                self.violation("lock-not-stale", str(lock.relative_to(self.folder)), f"a killed writer's lock was judged {info.state.value}: {info.reason}")

    def check_indexes(self) -> None:
        for index in self.folder.rglob("index.json"):
            try:
                document = orjson.loads(index.read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                self.violation("cache-torn", str(index.relative_to(self.folder)), f"index.json is not whole JSON: {exc}")
                continue
            sessions = document.get("sessions", []) if isinstance(document, dict) else document
            for entry in sessions if isinstance(sessions, list) else []:
                journal = index.parent / f"{entry.get('id') if isinstance(entry, dict) else None}.jsonl"
                if not journal.exists():  # an id that names no file here (not the file's name): nothing to compare
                    continue
                size = journal.stat().st_size
                if isinstance(entry.get("bytes"), int) and entry["bytes"] > size:
                    self.violation("index-ahead", str(index.relative_to(self.folder)),
                                   f"index lists {entry['bytes']} bytes for {journal.name}, which holds {size}")

    def power_loss(self, rng: random.Random, before: dict[Path, tuple[int, int]]) -> None:
        """Cut each journal back to a random offset at or past its last ACKed end and past what
        it held when the cycle began (``before``: size and mtime); maybe zero-fill the cut.

        What a journal held before the cycle's writers started is what the previous cycle left
        and checked: durable long since, and possibly counted by a cache since (a repair brings
        meta.json up to a whole record the killed writer fsynced but had not ACKed yet).  A
        power cut now cannot take it; cutting it would report the cache, not a writer."""
        for journal in journals(self.folder):
            relpath = str(journal.relative_to(self.folder))
            acked = max((end for end, _ in self.h.acks.get(relpath, [])), default=0)
            floor = max(acked, before.get(journal, (0, 0))[0])
            size = journal.stat().st_size
            if size <= floor:
                continue
            cut = rng.randint(floor, size)
            with open(journal, "r+b") as handle:
                handle.truncate(cut)
                if cut > floor and rng.random() < 0.5:
                    handle.seek(floor)
                    handle.write(b"\0" * (cut - floor))

    def fsck_and_repair(self) -> None:
        folders, refused = discover_chaos(self.folder)
        report = check_folders(folders, force=False)
        self.check_scope(report, refused)
        for finding in report.findings:
            relpath = os.path.relpath(finding.path, self.folder)
            if finding.code == "meta-ahead":
                self.violation("meta-ahead", relpath, finding.message)
            elif finding.code == "locked":
                self.violation("lock-not-stale", relpath, finding.message)
            elif finding.code == "unknown-format":
                continue  # not a journal levelsess knows: ``unchecked`` if a writer ACKed it
            elif finding.code == "unreadable":  # an operational problem (a dangling link, EIO), never corruption
                self.violation("unreadable", relpath, finding.message)
            elif finding.severity == "error" and finding.code not in TAIL_CODES and relpath not in self.bad_files:
                if self.h.config.shared_file and self.h.config.no_lock:  # real damage: writers without the lock
                    self.violation("corruption", relpath, f"{finding.code} at line {finding.line}: {finding.message}")
                else:
                    self.report.false_corruption += 1
                    self.violation("false-corruption", relpath, f"{finding.code} at line {finding.line}: {finding.message}")
        before = file_sizes(self.folder)
        sizes = {journal: before[journal] for journal in journals(self.folder) if journal in before}
        if self.found:
            self.h.keep_reproducer(self)
        result = plan_repair(report, force=False).execute()
        failed = [f for f in result.findings if f.code == "repair-failed"]
        if failed:
            self.violation("repair-failed", os.path.relpath(failed[0].path, self.folder), "; ".join(f.message for f in failed))
        after = file_sizes(self.folder)
        for journal, before in sizes.items():
            self.report.trimmed_bytes += max(0, before - after.get(journal, 0))
        drift = reindex(discover_chaos(self.folder)[0], check_only=True)
        for finding in drift.findings:
            if finding.code not in ("future-version", "unknown-format"):
                self.violation("cache-drift", os.path.relpath(finding.path, self.folder), f"after fsck --repair: {finding.message}")

    def check_scope(self, report, refused: dict[Path, str]) -> None:
        """Every ACKed file that exists must have been checked as a journal of a known layout."""
        checked, foreign, skipped = set(), {}, set()
        for folder in report.folders:
            for session in folder.sessions:
                relpath = os.path.relpath(session.journal, self.folder)
                if session.skipped:
                    skipped.add(relpath)  # a live lock: reported as lock-not-stale
                elif session.scan is not None and not session.scan.identified:
                    foreign[relpath] = session.scan.foreign or "another format"
                elif session.scan is not None:
                    checked.add(relpath)
        refused_rel = {os.path.relpath(path, self.folder): why for path, why in refused.items()}
        for relpath in sorted(self.h.acks):
            if relpath in checked or relpath in skipped or not os.path.lexists(self.folder / relpath):
                continue  # checked, or reported already (a missing file's ACKs are lost)
            if relpath in foreign:
                why = f"fsck calls it unknown-format (it looks like {foreign[relpath]})"
            elif str(Path(relpath).parent) in refused_rel:
                why = f"its folder is not a store: {refused_rel[str(Path(relpath).parent)]}"
            else:
                why = "no layout keeps a journal there"
            self.violation("unchecked", relpath, f"{len(self.h.acks[relpath])} ACKed record(s) in a file the harness cannot check: {why}; "
                           "a writer's journals must be LevelCode or Logician journals where those layouts keep them "
                           "(see `levelsess chaos run --help`, --writer-cmd)")
