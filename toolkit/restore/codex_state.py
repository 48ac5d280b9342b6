"""``restore --app codex``: make rollouts that have no ``threads`` row in Codex's state DB
visible in ``codex resume`` again (SOURCES-MORE.md §2; openai/codex #40426, #20165).

Codex lists threads from ``state_5.sqlite``; it fills that table from the rollouts on disk only
in its start-up backfill, and once ``backfill_state`` says ``complete`` it never looks again, so a
rollout copied back (or one whose row was lost) stays hidden.  The fix is the one Codex's own
migrations use to rebuild rows: ``backfill_state`` back to ``pending`` with ``last_watermark``
NULL, and Codex's next start re-scans every rollout.  That one row is all restore changes.

:func:`parity` reads (a private copy of the DB) what ``codex doctor`` reports: rollouts without
a row, rows whose rollout is gone, rows with an empty first message that the picker hides.
:func:`plan` adds the one row change, if any; :func:`apply_state` refuses while Codex is running,
backs the DB group up (:mod:`.dbfile`), writes in one transaction, checks ``PRAGMA
integrity_check``, reads the DB back and puts every byte back when that fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FileChangedError, LevelsessError, PathNotFoundError, UsageError
from ..findings import Finding
from ..layouts.codex import ARCHIVED, SESSIONS, default_roots, is_rollout_name, thread_id
from .. import durable, shellwords
from . import backups, dbfile
from .dbfile import codex_running as running  # noqa: F401 (who uses the DB: below the backups that ask it too)

_STATE = re.compile(r"state_(\d+)\.sqlite")
PENDING = {"status": "pending", "last_watermark": None}


def sqlite_home(home: Path) -> Path:
    """Where Codex keeps its DBs for ``home``: config ``sqlite_home`` > $CODEX_SQLITE_HOME > the home."""
    import tomllib

    try:
        with open(home / "config.toml", "rb") as handle:
            configured = tomllib.load(handle).get("sqlite_home")
    except (OSError, ValueError):
        configured = None
    chosen = configured if isinstance(configured, str) and configured else os.environ.get("CODEX_SQLITE_HOME")
    return Path(os.path.abspath(Path(chosen).expanduser())) if chosen else home


def state_db(home: Path) -> Path | None:
    """The newest ``state_<n>.sqlite`` Codex uses for ``home`` (it deletes other versions at start)."""
    folder = sqlite_home(home)
    found = [(int(m.group(1)), folder / name) for name in (os.listdir(folder) if folder.is_dir() else [])
             if (m := _STATE.fullmatch(name))]
    return max(found)[1] if found else None


def rollouts(home: Path) -> dict[str, str]:
    """Every rollout file under ``sessions/`` and ``archived_sessions/``: real path -> thread id."""
    found = {}
    for top in (SESSIONS, ARCHIVED):
        for folder, _dirs, names in os.walk(home / top):
            for name in names:
                path = Path(folder) / name
                if is_rollout_name(name) and (tid := thread_id(path)):
                    found[os.path.realpath(path)] = tid.lower()
    return found


@dataclass(frozen=True)
class Parity:
    """Rollouts and ``threads`` rows of one Codex home, compared the way ``codex doctor`` does."""

    home: Path
    db: Path | None
    rollouts: int = 0
    missing: tuple[str, ...] = ()  # rollout paths with no row (that id at that path)
    stale: tuple[str, ...] = ()  # rows' rollout paths that are gone
    empty: tuple[str, ...] = ()  # thread ids whose first message is empty: the picker hides them
    backfill: dict | None = None  # backfill_state row 1: status, last_watermark
    fingerprint: str = field(default="", repr=False)  # every other byte of content, for the verify
    journal_mode: str = ""

    def to_json(self) -> dict:
        return {"home": str(self.home), "db": str(self.db) if self.db else None, "rollouts": self.rollouts,
                "missing": list(self.missing), "stale": list(self.stale), "empty_first_message": list(self.empty),
                "backfill_state": self.backfill}


def parity(home: Path) -> Parity:
    """Compare the rollouts on disk with the DB's ``threads`` rows; reads a copy of the DB only."""
    home = Path(os.path.abspath(home.expanduser()))
    if not home.is_dir():
        raise PathNotFoundError(f"{home} (a Codex home)", hint="give the folder holding sessions/, e.g. --source ~/.codex")
    files = rollouts(home)
    db = state_db(home)
    if db is None:
        return Parity(home, None, len(files), tuple(sorted(files)))
    try:
        with dbfile.reading(db) as connection:
            return _compare(home, db, files, connection)
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{db} cannot be read as Codex's state DB: {exc}", hint="Codex repairs a broken state DB "
                         "itself at its next start (it moves it aside and rebuilds it from the rollouts)") from exc


def _compare(home: Path, db: Path, files: dict[str, str], connection: sqlite3.Connection) -> Parity:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(threads)")}
    if not {"id", "rollout_path"} <= columns:
        raise UsageError(f"{db} has no threads table with id and rollout_path: not a Codex state DB levelsess knows")
    shown = "preview" if "preview" in columns else "first_user_message" if "first_user_message" in columns else None
    rows = connection.execute(f"SELECT id, rollout_path{', ' + shown if shown else ''} FROM threads").fetchall()
    have = {(os.path.realpath(path), str(tid).lower()) for tid, path, *_ in rows}
    missing = tuple(sorted(path for path, tid in files.items() if (path, tid) not in have))
    stale = tuple(sorted(path for _tid, path, *_ in rows if not os.path.exists(path)))
    empty = tuple(sorted(tid for tid, _path, *text in rows if shown and not text[0]))
    backfill = connection.execute("SELECT status, last_watermark FROM backfill_state WHERE id = 1").fetchone()
    mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
    return Parity(home, db, len(files), missing, stale, empty,
                  {"status": backfill[0], "last_watermark": backfill[1]} if backfill else None,
                  fingerprint(connection), mode)


def fingerprint(connection: sqlite3.Connection) -> str:
    """A digest of the schema and every row of every table, but backfill_state's status and
    watermark: what restore must leave exactly as it was."""
    digest = hashlib.sha256()
    tables = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    digest.update(repr(connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()).encode())
    for name, sql in tables:
        if (sql or "").upper().startswith("CREATE VIRTUAL"):
            continue  # its content is in its shadow tables, which are tables here
        cursor = connection.execute(f'SELECT * FROM "{name.replace(chr(34), chr(34) * 2)}"')
        names = [c[0] for c in cursor.description]
        rows = []
        for row in cursor:
            if name == "backfill_state":
                row = tuple(None if col in PENDING else value for col, value in zip(names, row))
            rows.append(repr(row))
        digest.update(repr((name, names, sorted(rows))).encode())
    return digest.hexdigest()


# -- plan and apply ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatePlan:
    parity: Parity
    change: dict | None  # {"table", "row", "before", "after"} or None: nothing to write
    note: str  # why there is nothing to do, or what the change does
    files: dict = field(default_factory=dict, repr=False)  # the DB group's state when planned

    @property
    def command(self) -> str:
        return command(self.parity.home)

    def to_json(self) -> dict:
        return {"app": "codex", "db": str(self.parity.db) if self.parity.db else None, "parity": self.parity.to_json(),
                "change": self.change, "note": self.note}


@dataclass(frozen=True)
class StateResult:
    plan: StatePlan
    applied: bool
    findings: tuple[Finding, ...]
    exit_code: int
    stamp: str | None = None
    folder: Path | None = None
    written: bool = False
    undone: bool = False

    def to_json(self) -> dict:
        return {"version": 1, "applied": self.applied, "stamp": self.stamp, "backup": str(self.folder) if self.folder else None,
                **self.plan.to_json(), "written": [str(self.plan.parity.db)] if self.written else [],
                "undone": self.undone, "findings": [f.to_json() for f in self.findings], "exit": self.exit_code}


def command(home: Path) -> str:
    return f"levelsess restore --app codex --source {shellwords.quote(str(home))}"


def plan(home: Path | None = None) -> StatePlan:
    """What making ``home``'s rollouts visible needs: the one backfill_state change, or nothing."""
    found = parity(home if home is not None else default_roots()[0])
    if found.db is None:
        note = ("no state DB: Codex builds it from every rollout at its next start" if found.rollouts else "no state DB and no rollouts")
        return StatePlan(found, None, note)
    if not found.missing:
        return StatePlan(found, None, f"every rollout ({found.rollouts}) has its threads row")
    if found.backfill is None:
        return StatePlan(found, None, "backfill_state has no row: Codex writes it as pending and re-scans every rollout at its next start")
    if found.backfill == PENDING:
        return StatePlan(found, None, f"backfill_state is already pending from the start: Codex re-scans every rollout "
                         f"({len(found.missing)} without a row) at its next start")
    change = {"table": "backfill_state", "row": {"id": 1}, "before": found.backfill, "after": dict(PENDING)}
    return StatePlan(found, change, f"{len(found.missing)} rollout(s) have no threads row: Codex re-scans every rollout "
                     "at its next start and writes them", dbfile.state(found.db))


def apply_state(found: StatePlan) -> StateResult:
    """Back up, write the one row in one transaction, check, read back; undo on failure (exit 8)."""
    if found.change is None:
        return StateResult(found, True, (), 0)
    db = found.parity.db
    who = running(found.parity.home, db)
    if who is not None:
        return StateResult(found, True, (_in_use(db, who),), 4)
    run = _start(found)
    if isinstance(run, Finding):
        return StateResult(found, True, (run,), 4)
    problem = _write(db, found)
    entry = run.manifest["replaced"][0]
    for item in entry["files"]:  # what the group holds now is restore's: undo may put it back
        item["after"], item["written"] = dbfile.file_state(Path(item["path"])), True
    run.save()
    if problem is None:
        problem = _verify(found)
    if problem is None:
        run.mark("applied", written=[str(db)])
        return StateResult(found, True, (), 0, run.stamp, run.folder, True)
    undone = backups.undo(run.stamp)
    code = 8 if problem.code == "restore-verify-failed" else 4  # in-use, or changed since the plan: nothing was written
    return StateResult(found, True, (problem, *undone.findings), code, run.stamp, run.folder, False, undone=True)


def _start(found: StatePlan):
    """The run's folder: the DB group backed up byte-exact, and the manifest, before the DB is opened;
    a finding (and no folder) when the DB changed since the plan."""
    stamp, folder = backups._new_folder()
    db = found.parity.db
    try:
        files = dbfile.back_up(db, folder, found.files)
    except BaseException as exc:
        durable.remove(folder, tree=True)  # it holds no run: nothing was written
        if not isinstance(exc, FileChangedError):
            raise
        return Finding("restore-conflict", "error", str(db), None, None, f"{exc}: run restore again")
    session = f"codex:{found.parity.home}"
    entry = {"key": "db0", "app": "codex", "home": str(found.parity.home), "row": found.change, "files": files}
    run = backups.Run(stamp, folder, {"version": 1, "stamp": stamp, "state": "planned", "app": "codex",
                                      "sessions": [{"id": session, "app": "codex", "next": NEXT}],
                                      "created": [], "changed": [], "replaced": [entry], "dirs": []})
    run.save()
    return run


def _in_use(db: Path, who: str) -> Finding:
    return Finding("in-use", "warning", str(db), None, None, f"not changed while Codex is running on it: {who}; "
                   "quit Codex and run restore again")


def _write(db: Path, found: StatePlan) -> Finding | None:
    """The one UPDATE, in one transaction that first checks the row is what the plan saw."""
    who = running(found.parity.home, db)
    if who is not None:
        return _in_use(db, who)
    try:
        connection = sqlite3.connect(db, isolation_level=None, timeout=0)
    except sqlite3.Error as exc:
        return Finding("restore-verify-failed", "error", str(db), None, None, f"cannot open {db}: {exc}; nothing changed")
    try:
        connection.execute("BEGIN IMMEDIATE")
        row = connection.execute("SELECT status, last_watermark FROM backfill_state WHERE id = 1").fetchone()
        if row is None or {"status": row[0], "last_watermark": row[1]} != found.change["before"]:
            connection.execute("ROLLBACK")
            return Finding("restore-conflict", "error", str(db), None, None,
                           "backfill_state changed since restore planned (Codex ran?); nothing changed: run restore again")
        changed = connection.execute("UPDATE backfill_state SET status = 'pending', last_watermark = NULL WHERE id = 1").rowcount
        if changed != 1:
            connection.execute("ROLLBACK")
            return Finding("restore-verify-failed", "error", str(db), None, None, f"the update changed {changed} rows, not 1")
        connection.execute("COMMIT")
        check = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.OperationalError as exc:
        from ..importers.sqlite import is_locked

        if is_locked(exc):
            return _in_use(db, f"the database is locked ({exc})")
        return Finding("restore-verify-failed", "error", str(db), None, None, f"the write failed: {exc}")
    except sqlite3.Error as exc:
        return Finding("restore-verify-failed", "error", str(db), None, None, f"the write failed: {exc}")
    finally:
        connection.close()
    if check != [("ok",)]:
        return Finding("restore-verify-failed", "error", str(db), None, None,
                       f"PRAGMA integrity_check after the write: {'; '.join(str(r[0]) for r in check[:5])}")
    return None


def _verify(found: StatePlan) -> Finding | None:
    """Read the DB back (a copy): integrity ok, backfill pending from the start, the same journal
    mode, and every other row and the schema exactly as before."""
    try:
        with dbfile.reading(found.parity.db) as connection:
            check = connection.execute("PRAGMA integrity_check").fetchall()
            row = connection.execute("SELECT status, last_watermark FROM backfill_state WHERE id = 1").fetchone()
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            same = fingerprint(connection) == found.parity.fingerprint
    except (sqlite3.Error, LevelsessError, OSError) as exc:
        problem = f"it cannot be read back ({exc})"
    else:
        problem = (f"integrity_check says {check[0][0]}" if check != [("ok",)] else
                   f"backfill_state reads {row}, not pending with no watermark" if row != ("pending", None) else
                   f"its journal mode is {mode}, not {found.parity.journal_mode}" if mode != found.parity.journal_mode else
                   "rows other than backfill_state's changed" if not same else None)
    if problem is None:
        return None
    return Finding("restore-verify-failed", "error", str(found.parity.db), None, None,
                   f"after the write {problem}; every byte of the DB was put back")


# -- restore --app codex (toolkit.restore.APP_RESTORES) -------------------------------------------

NEXT = "start Codex: its start-up re-scans every rollout and writes the missing rows; then `codex resume` lists them"


def run_app(source: Path | None, maps: list[str], *, apply: bool) -> StateResult:
    """``restore --app codex [--source CODEX_HOME]``: plan, and apply when ``apply``."""
    if maps:
        raise UsageError("--map goes with --app vscode; --app codex takes --source CODEX_HOME only")
    found = plan(source)
    return apply_state(found) if apply else StateResult(found, False, (), 4 if found.change else 0)


def summary(result: StateResult) -> str:
    found = result.plan.parity
    counts = (f"{found.rollouts} rollout(s) in {found.home}: {len(found.missing)} without a threads row, {len(found.stale)} "
              f"row(s) whose rollout is gone, {len(found.empty)} with an empty first message (the picker hides them)")
    lead = ("restore undone" if result.undone else "backfill_state set to pending" if result.written else
            "would set backfill_state to pending" if result.plan.change else result.plan.note)
    return f"{lead}; {counts}  [exit {result.exit_code}]"


def rows(result: StateResult) -> list[tuple[str, str, str]]:
    """(file, action, what): the one row change, and each rollout it brings back into the list."""
    change = result.plan.change
    if change is None:
        return []
    before = change["before"]
    out = [(f"{result.plan.parity.db}#backfill_state", "change row", f"id 1: status {before['status']!r} -> 'pending', "
            f"last_watermark {before['last_watermark']!r} -> NULL; nothing else in the DB")]
    return out + [(path, "no threads row", "Codex writes it at its next start") for path in result.plan.parity.missing]
