"""Typed errors and the finding-code registry.

Every problem levelsess can report has a stable finding code (DESIGN.md §2.4) and an
exception class.  Each class's docstring is its message template; ``exit_code`` is the
e2fsck-style bit it contributes (DESIGN.md §3).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

EXIT_OK = 0
EXIT_CORRECTED = 1
EXIT_UNCORRECTED = 4
EXIT_OPERATIONAL = 8
EXIT_USAGE = 16
EXIT_INTERRUPTED = 32


class LevelsessError(Exception):
    """levelsess failed: {detail}"""

    exit_code: ClassVar[int] = EXIT_OPERATIONAL
    hint: ClassVar[str] = ""
    #: True when the next write would fail the same way (a failed fsync, a full disk, a read-only
    #: file system): a run stops at once instead of failing every item after it.
    stops_run: ClassVar[bool] = False

    def __init__(self, detail: str = "", *, hint: str | None = None) -> None:
        self.detail = detail
        if hint is not None:
            self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        template = (type(self).__doc__ or "{detail}").strip().splitlines()[0]
        return template.format(detail=self.detail)

    def __reduce__(self):
        """Pickled as it was made, its fields and its message (a forked worker's error, sent to the
        parent): an exception is rebuilt from its message by default, which made the message again
        from the one made (`not a journal: not a journal: ...`) and lost its own hint."""
        return _unpickled, (type(self), self.args, dict(self.__dict__))


def _unpickled(cls: type[LevelsessError], args: tuple, fields: dict) -> LevelsessError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(fields)
    return error


# --- usage and operational errors --------------------------------------------------------


class UsageError(LevelsessError):
    """{detail}"""

    exit_code = EXIT_USAGE
    hint = "see `levelsess COMMAND --help`"


class OperationalError(LevelsessError):
    """{detail}"""

    exit_code = EXIT_OPERATIONAL


class PathNotFoundError(OperationalError):
    """no such file or folder: {detail}"""

    hint = "check the path, or pass --store to point at your session store"


class SourceMissingError(OperationalError):
    """{detail}"""

    hint = "check --source, or leave it out to read every install `levelsess doctor` finds"


class NotAStoreError(OperationalError):
    """not a levelsess store, project folder, Logician workspace or journal: {detail}"""

    hint = "pass a store root, a project folder, a .logician workspace or a .jsonl journal"


class NotASourceError(OperationalError):
    """not an editor's chat history: {detail}"""

    hint = ("pass --source one of the places named above (each --from reads its own tool's); leave --source out "
            "to read every install `levelsess doctor` finds")


class NotAJournalError(OperationalError):
    """not a journal: {detail}"""

    hint = "move it out of the store if it does not belong there; levelsess leaves it alone"


class UnknownFormatError(OperationalError):
    """{detail}"""

    hint = "levelsess reads LevelCode, Logician, Claude Code, Codex CLI and Gemini CLI journals; it wrote nothing to these files"


class UnreadableError(OperationalError):
    """cannot read {detail}"""

    hint = "check the file (a symlink loop? a failing disk?), or move it out of the store"


class PermissionDeniedError(OperationalError):
    """permission denied: {detail}"""

    hint = "run as the user who owns the sessions, or fix the permissions"


class DurabilityError(OperationalError):
    """a write could not be made durable: {detail}"""

    hint = "nothing was reported as done; free disk space or fix the device, then rerun"
    stops_run = True


# The machine's limits (DESIGN §4): the message is one line, what happened and the next step, so
# a finding that carries it (an import's one session) says it all; nothing is left half-made.


class LimitError(OperationalError):
    """{detail}"""


class DiskFullError(LimitError):
    """disk full: {detail}"""

    stops_run = True


class QuotaExceededError(DiskFullError):
    """disk quota exceeded: {detail}"""


class ReadOnlyError(LimitError):
    """read-only file system: {detail}"""

    stops_run = True


class NameTooLongError(LimitError):
    """name too long for the file system: {detail}"""


class FileTooLargeError(LimitError):
    """file too large for the file system: {detail}"""


class FileChangedError(OperationalError):
    """{detail}"""

    hint = "another process is writing it; rerun when the writer has stopped"

    @classmethod
    def read_again(cls, path: object, exc: OSError) -> FileChangedError:
        """A source an import read once and could not read again for a later pass (removed, replaced
        or made unreadable meanwhile: a tool's cleanup during a nightly import).  That session's finding,
        never an OSError: raised while its journal is being written, one would be taken for the disk's."""
        return cls(f"{path} could not be read again while it was being imported ({exc.strerror or exc}): "
                   "removed or replaced meanwhile; import again",
                   hint="the next import reads the source as it is then")


class FileInUseError(FileChangedError):
    """{detail}"""

    hint = "another process has it open; close it (quit the tool writing it), then rerun"


class LockBusyError(OperationalError):
    """session is held by another process: {detail}"""

    hint = "close the editor that owns it, or rerun with --force if you are sure"


class SchedulerError(OperationalError):
    """the scheduler failed: {detail}"""

    hint = "nothing else was changed; fix the scheduler (or pass --scheduler), then rerun"


class SalvageRefusedError(LevelsessError):
    """salvage refused: {detail}"""

    exit_code = EXIT_UNCORRECTED
    hint = "the journal was left exactly as it was; it needs a person (see `levelsess fsck -v`)"


class RelinkRefusedError(SalvageRefusedError):
    """relink refused: {detail}"""


class SymlinkedFolderError(LevelsessError):
    """{detail}: levelsess never writes through a symlinked folder inside a store or a tool's tree"""

    exit_code = EXIT_UNCORRECTED
    hint = "replace the symlink with the folder it points to, or run levelsess on that folder directly"

    def __init__(self, detail: str = "", *, hint: str | None = None, link: str | None = None, target: str | None = None) -> None:
        self.link, self.target = link, target
        super().__init__(detail, hint=hint)


class Interrupted(LevelsessError):
    """interrupted: {detail}"""

    exit_code = EXIT_INTERRUPTED
    hint = "the last step finished cleanly; rerun the command to continue"


# --- corruption and refusals -------------------------------------------------------------


class CorruptionError(LevelsessError):
    """{path}:{line}: byte {offset}: {detail}"""

    exit_code = EXIT_UNCORRECTED
    code: ClassVar[str] = "corruption"
    hint = "this needs a person: inspect the line it names (`levelsess fsck -v` shows an excerpt)"

    def __init__(
        self,
        detail: str = "",
        *,
        path: str = "?",
        line: int | None = None,
        offset: int | None = None,
        excerpt: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path, self.line, self.offset, self.excerpt = path, line, offset, excerpt
        super().__init__(detail, hint=hint)

    def render(self) -> str:
        return f"{self.path}:{self.line or '-'}: byte {self.offset if self.offset is not None else '-'}: {self.code}: {self.detail}"


class InvalidJsonError(CorruptionError):
    """a terminated line is not valid UTF-8 JSON"""

    code = "invalid-json"
    hint = "this needs a person: inspect the line, or `levelsess fsck --salvage --yes` rebuilds the journal from its whole records"


class InvalidRecordError(CorruptionError):
    """a line is JSON but not a record (not an object, or no kind / id)"""

    code = "invalid-record"
    hint = "this needs a person: inspect the line and fix or move it by hand (salvage never removes a line that parses)"


class InvalidVersionError(CorruptionError):
    """the meta record's "v" is not a positive whole number"""

    code = "invalid-version"
    hint = "this needs a person: fix the meta line's \"v\" by hand (salvage cannot: the line is a whole record)"


class MissingMetaError(CorruptionError):
    """the first record is not the meta record"""

    code = "missing-meta"


class DuplicateMetaError(CorruptionError):
    """a second meta record appears after the first"""

    code = "duplicate-meta"


class SeqGapError(CorruptionError):
    """a v2 record's seq skips or goes back"""

    code = "seq-gap"


class SeqDuplicateError(CorruptionError):
    """a v2 record repeats the previous seq"""

    code = "seq-duplicate"


class SeqConflictError(CorruptionError):
    """a v1 record already has a top-level "seq" field, so it cannot be numbered for v2"""

    code = "seq-conflict"
    hint = "rename that field by hand (it is the record at the line shown), then rerun `levelsess migrate`"


class NoDowngradeError(CorruptionError):
    """the journal is already at a newer version than --to asks for"""

    code = "no-downgrade"
    hint = "levelsess only migrates up; drop --to or pick a version at least as new"


class SplicedRecordsError(CorruptionError):
    """two records run together on one line"""

    code = "spliced-records"
    hint = "this needs a person: inspect the line, or `levelsess fsck --salvage --yes` rebuilds the journal from its whole records"


class NulPaddingError(CorruptionError):
    """a run of NUL bytes sits before a later line"""

    code = "nul-padding"
    hint = "this needs a person: inspect the line, or `levelsess fsck --salvage --yes` rebuilds the journal from its whole records"


class DanglingParentError(CorruptionError):
    """a record's parent (Logician parentId, Claude Code parentUuid) names no record of the journal"""

    code = "dangling-parent"
    hint = "Claude Code: `levelsess fsck --relink --yes` relinks it to the nearest earlier message; Logician: fix the id by hand"


class DuplicateUuidError(CorruptionError):
    """a uuid appears twice in one Claude Code transcript"""

    code = "duplicate-uuid"


class BrokenChainError(CorruptionError):
    """resume cannot reach every message of the conversation: the parentUuid chain breaks"""

    code = "broken-chain"
    hint = "`levelsess fsck --relink --yes` makes the chain whole again (in a new journal; the original is quarantined)"


class DuplicateIdError(CorruptionError):
    """an entry id appears twice in one journal"""

    code = "duplicate-id"


class MetaAheadError(CorruptionError):
    """meta.json counts more entries than the journal holds (meta advanced before the append)"""

    code = "meta-ahead"
    hint = "a writer advanced meta.json before its append was durable; `levelsess fsck --repair` reconciles it"


class SchemaViolationError(CorruptionError):
    """a record does not match its JSON schema"""

    code = "schema-violation"


class UnknownFormatFileError(CorruptionError):
    """the file is not a journal of a layout levelsess knows"""

    code = "unknown-format"
    hint = "levelsess reads LevelCode, Logician, Claude Code, Codex CLI and Gemini CLI journals; it leaves this file alone"


class TooDeepError(CorruptionError):
    """a line is nested deeper, or holds a longer number, than levelsess can parse"""

    code = "too-deep"
    hint = "this needs a person: the line may be a whole record, so levelsess neither cuts it nor salvages the file"


class RecordTooLargeError(CorruptionError):
    """a line is longer than levelsess holds in memory to parse: it may be a whole record, so it is left as it is"""

    code = "record-too-large"
    hint = ("this needs a person: the record is too large for levelsess to parse here, so nothing is cut and neither "
            "--repair nor --salvage touches the file; read or split that line with a tool that streams it")


class CrLineEndingsError(CorruptionError):
    """records are separated by CR alone (old-Mac line endings)"""

    code = "cr-line-endings"
    hint = "`levelsess fsck --salvage --yes` rewrites them one record per line (the original is kept)"


class TornTailError(CorruptionError):
    """the final record is incomplete"""

    code = "torn-tail"
    hint = "run `levelsess fsck --repair` to save and trim it"


class UnterminatedTailError(CorruptionError):
    """the final record is complete but has no newline"""

    code = "unterminated-tail"
    hint = "run `levelsess fsck --repair` to terminate it"


class FutureVersionError(CorruptionError):
    """the journal was written by a newer levelsess schema"""

    code = "future-version"
    hint = "upgrade levelsess; this version leaves the file untouched"


# --- finding codes -----------------------------------------------------------------------


class CodeInfo(NamedTuple):
    """What a finding code means: default severity, whether repair fixes it, its error class."""

    severity: str  # "error" | "warning"
    repair: str  # what --repair does, "" for nothing
    error: type[LevelsessError] | None = None


CODES: dict[str, CodeInfo] = {
    # journal tail (§2.4): errors a repair corrects
    "unterminated-tail": CodeInfo("error", "append a newline", UnterminatedTailError),
    "torn-tail": CodeInfo("error", "save the tail bytes, truncate to the last newline", TornTailError),
    # journal body: uncorrectable
    "invalid-json": CodeInfo("error", "", InvalidJsonError),
    "invalid-record": CodeInfo("error", "", InvalidRecordError),
    "missing-meta": CodeInfo("error", "", MissingMetaError),
    "invalid-version": CodeInfo("error", "", InvalidVersionError),
    "duplicate-meta": CodeInfo("error", "", DuplicateMetaError),
    "future-version": CodeInfo("error", "", FutureVersionError),
    "seq-gap": CodeInfo("error", "", SeqGapError),
    "seq-duplicate": CodeInfo("error", "", SeqDuplicateError),
    "spliced-records": CodeInfo("error", "", SplicedRecordsError),
    "cr-line-endings": CodeInfo("error", "", CrLineEndingsError),
    "too-deep": CodeInfo("error", "", TooDeepError),
    "record-too-large": CodeInfo("error", "", RecordTooLargeError),
    "unknown-format": CodeInfo("error", "", UnknownFormatFileError),
    "nul-padding": CodeInfo("error", "", NulPaddingError),
    "dangling-parent": CodeInfo("error", "", DanglingParentError),
    "duplicate-id": CodeInfo("error", "", DuplicateIdError),
    "duplicate-uuid": CodeInfo("warning", "", DuplicateUuidError),
    "broken-chain": CodeInfo("error", "", BrokenChainError),
    "schema-violation": CodeInfo("error", "", SchemaViolationError),
    # journal warnings
    "empty-journal": CodeInfo("warning", ""),
    "oversize": CodeInfo("warning", ""),
    "bom": CodeInfo("warning", ""),
    "crlf": CodeInfo("warning", ""),
    "blank-line": CodeInfo("warning", ""),
    "unknown-kind": CodeInfo("warning", ""),
    "parent-elsewhere": CodeInfo("warning", ""),
    "dangling-tool-use": CodeInfo("warning", ""),
    "nul-in-content": CodeInfo("warning", ""),
    "symlink": CodeInfo("warning", ""),
    "sweep-due": CodeInfo("warning", ""),
    "symlinked-folder": CodeInfo("warning", "", SymlinkedFolderError),
    "not-a-journal": CodeInfo("warning", "", NotAJournalError),
    # caches: warnings that a repair rebuilds
    "missing-index": CodeInfo("warning", "rebuild index.json"),
    "corrupt-index": CodeInfo("warning", "rebuild index.json"),
    "stale-index": CodeInfo("warning", "rebuild index.json"),
    "missing-meta-json": CodeInfo("warning", "rebuild meta.json"),
    "corrupt-meta": CodeInfo("warning", "rebuild meta.json"),
    "stale-meta": CodeInfo("warning", "rebuild meta.json"),
    "meta-ahead": CodeInfo("error", "rebuild meta.json", MetaAheadError),
    # locks (§2.5)
    "stale-lock": CodeInfo("warning", "remove the lock"),
    "locked": CodeInfo("warning", ""),
    "in-use": CodeInfo("warning", ""),
    "lock-no-heartbeat": CodeInfo("warning", ""),
    # operational
    "unreadable": CodeInfo("error", "", PermissionDeniedError),
    "repair-failed": CodeInfo("error", "", DurabilityError),
    "write-failed": CodeInfo("error", "", LimitError),
    "salvage-refused": CodeInfo("error", "", SalvageRefusedError),
    "relink-refused": CodeInfo("error", "", RelinkRefusedError),
    "leftover-temp": CodeInfo("warning", "remove the temporary file"),
    "changed-during-repair": CodeInfo("warning", "", FileChangedError),
    # importers (§5): problems in the source, reported with the source key; the rest imports
    "source-unreadable": CodeInfo("error", ""),
    "missing-bubble": CodeInfo("warning", ""),
    "source-skipped": CodeInfo("warning", ""),
    "source-torn": CodeInfo("warning", ""),
    "source-joined": CodeInfo("warning", ""),
    "source-diverged": CodeInfo("warning", ""),
    "trashed": CodeInfo("warning", ""),
    # restore (principle 10): what it would not write back, and why
    "restore-conflict": CodeInfo("error", ""),
    "restore-unproven": CodeInfo("error", ""),
    "restore-verify-failed": CodeInfo("error", ""),
    "undo-refused": CodeInfo("error", ""),
    "restore-refused": CodeInfo("error", ""),
    "listed-without-folder": CodeInfo("warning", ""),
    "index-corrupt": CodeInfo("warning", "keep its whole entries"),
    # migrate refusals (§6)
    "seq-conflict": CodeInfo("error", "", SeqConflictError),
    "no-downgrade": CodeInfo("error", "", NoDowngradeError),
}

#: Codes that mean the tool could not do its job (exit bit 8), not that the data is bad.
OPERATIONAL = frozenset({"unreadable", "repair-failed", "write-failed"})
#: Codes that say what a repair could not do for a file; like OPERATIONAL, never "needs a person" data.
REFUSALS = frozenset({"salvage-refused", "relink-refused"})
#: Graph damage that `fsck --relink` mends (Claude Code): a dangling parentUuid, and the break it makes.
RELINKABLE = frozenset({"dangling-parent", "broken-chain"})
#: Codes of sessions that were not checked or not repaired because a writer holds or changed them:
#: the run is not clean (exit 4).
SKIPPED = frozenset({"locked", "in-use", "changed-during-repair"})


def exit_code_for(findings) -> int:
    """Return the §3 bits for findings: 4 for unrepaired errors and for skipped sessions (a session
    a live writer held was not checked, so the run is not clean), 8 for operational ones, 1 for repairs."""
    code = EXIT_OK
    for finding in findings:
        if finding.repaired:
            code |= 1
        elif finding.code in OPERATIONAL:
            code |= EXIT_OPERATIONAL
        elif finding.severity == "error" or finding.code in SKIPPED:
            code |= EXIT_UNCORRECTED
    return code


#: Codes whose only fix is a person (or --salvage): a file carrying one is never modified.
UNCORRECTABLE = frozenset(
    code for code, info in CODES.items()
    if info.severity == "error" and not info.repair and code not in OPERATIONAL | REFUSALS)
#: Line-level damage that `fsck --salvage` can cut around.  Never a line that may be a whole
#: record: one that parses but is not a record (invalid-record), one too deep (too-deep) or too
#: large (record-too-large) to parse here; a journal holding one is left for a person.
SALVAGEABLE = frozenset({"invalid-json", "spliced-records", "nul-padding", "torn-tail", "blank-line", "cr-line-endings"})


def error_for(code: str) -> type[LevelsessError]:
    """Return the exception class that represents finding ``code``."""
    info = CODES.get(code)
    return info.error if info and info.error else CorruptionError
