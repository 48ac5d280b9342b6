"""``levelsess restore --app cline``: make Cline, Roo Code and Kilo Code list the tasks they have
on disk again (SOURCES-MORE §4.3–4.5; issue 26).

- **Cline classic** lists ``state/taskHistory.json``.  Restore writes it again: every element it
  holds stays as it is, byte for byte and in its order (a file cut mid-write keeps every whole
  element before the cut; the original is in the backup), and a ``HistoryItem`` is added for each
  task folder (any id, not only digits) with a readable ``ui_messages.json`` or
  ``api_conversation_history.json`` and no entry: ``ts`` and ``task`` by Cline's own rule
  (the last message that is not a resume; the text of the first ``say:"task"``, whole, else the
  ``<task>`` the API history holds, never injected text), tokens and cost summed from the
  ``api_req_started`` messages, ``size`` the folder's bytes, ``cwdOnTaskInitialization`` and
  ``modelId`` when the files prove them.  No ``ulid``: Cline makes one when the task is opened.
  Entries whose folder is gone are kept (what Cline does; the folder may come back from a backup
  or a sync) and named in a warning.  While the editor's memento still holds the list (Cline
  has not moved it into the file yet), restore refuses: Cline's migration appends the memento to
  the file without removing duplicates.
- **Roo Code / Kilo Code (a Roo fork)** list each ``tasks/<id>/history_item.json`` (``_index.json``
  is a cache Roo's reconcile rebuilds at start, on a change in ``tasks/`` and every 5 minutes: it
  adds a folder only when that file reads).  Restore creates the file for each task folder that
  lacks one, never overwrites one, and leaves ``_index.json`` to Roo (writing it too would race
  Roo's own debounced writes and gains nothing: reconcile adds the folders).

The contract is the one of :mod:`.vscode`: refused while the editor runs on those files (a
process holding one open to write, or a VS Code family process whose user data folder is this
one); every file changed copied byte-exact into the run's backup folder with the manifest before
the first write; every write through :mod:`toolkit.durable`; the result read back by the tool's
rules (:func:`read_list`) and the whole run undone when it does not pass.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .. import durable, shellwords
from ..encode import dumps
from ..errors import FileChangedError, LevelsessError
from ..findings import Finding
from ..importers.cline.jsonfile import BOM, load_json
from ..importers.cline.places import Install, detect, resolve
from ..importers.cline.tasks import INDEX_FILE, ITEM, _memento
from .cline_items import _ts, history_item, task_folders
from .cline_live import running
from .steps import AppResult, file_digest, missing_dirs

APP = "cline"
TOOLS = {"cline": "Cline", "roo": "Roo Code", "kilo": "Kilo Code"}
NEXT = ("reload the editor window (Command Palette: Developer: Reload Window), then open the extension's task history: "
        "every task is listed again (Roo Code and Kilo Code pick the new history_item.json files up at start)")


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListRewrite:
    """Cline's ``taskHistory.json``: its bytes now (None: no file) and the bytes it will hold."""

    path: Path
    before: bytes | None
    after: bytes = field(repr=False)
    kept: int  # elements kept as they are
    added: tuple[dict, ...]
    salvaged: bool = False  # the file was cut or damaged: only its whole elements are kept

    def to_json(self) -> dict:
        return {"path": str(self.path), "action": "change" if self.before is not None else "create", "kept": self.kept,
                "added": [{"id": e["id"], "task": e["task"], "ts": e["ts"]} for e in self.added], "salvaged": self.salvaged,
                "bytes": len(self.after)}


@dataclass(frozen=True)
class ItemCreate:
    """Roo's ``tasks/<id>/history_item.json`` for a folder that has none."""

    path: Path
    item: dict
    data: bytes = field(repr=False)

    def to_json(self) -> dict:
        return {"path": str(self.path), "action": "create", "id": self.item["id"], "task": self.item["task"], "bytes": len(self.data)}


@dataclass
class InstallPlan:
    install: Install
    tasks: int = 0  # task folders on disk
    listed: int = 0  # of those, how many the tool lists now
    rewrite: ListRewrite | None = None
    items: list[ItemCreate] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)  # entries whose folder is gone (kept)

    @property
    def writes(self) -> bool:
        return self.rewrite is not None or bool(self.items)

    def files(self) -> list[Path]:
        return ([self.rewrite.path] if self.rewrite else []) + [i.path for i in self.items]

    def to_json(self) -> dict:
        return {"tool": self.install.tool, "folder": str(self.install.folder), "tasks": self.tasks, "listed": self.listed,
                "list": self.rewrite.to_json() if self.rewrite else None, "items": [i.to_json() for i in self.items],
                "listed_without_folder": self.gone}


@dataclass
class ClinePlan:
    installs: list[InstallPlan] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        return any(p.writes for p in self.installs)

    @property
    def exit_code(self) -> int:
        return 4 if self.writes or any(f.severity == "error" for f in self.findings) else 0

    def to_json(self) -> dict:
        return {"installs": [p.to_json() for p in self.installs]}


class ClineResult(AppResult):
    app = APP


# -- Cline's list --------------------------------------------------------------------------------


@dataclass
class Elements:
    """The elements of a JSON array as the file spells them: each one's exact text and value."""

    texts: list[str] = field(default_factory=list)
    values: list = field(default_factory=list)
    whole: bool = True
    problem: str | None = None


def read_elements(data: bytes) -> Elements:
    """Split the array ``data`` holds into its elements' exact texts; a cut file gives every whole
    element before the cut (``whole`` False).  Not an array, or not UTF-8: a ``problem``."""
    found = Elements()
    if data.startswith(BOM):
        data, found.whole = data[len(BOM):], False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.problem = f"is not valid UTF-8 (offset {exc.start})"
        return found
    decoder, pos = json.JSONDecoder(), len(text) - len(text.lstrip())
    if not text.strip():  # a rewrite cut before its first byte: nothing of it is left
        found.whole = False
        return found
    if not text.startswith("[", pos):
        found.problem = "is not a JSON array"
        return found
    pos += 1
    while True:
        pos += len(text[pos:]) - len(text[pos:].lstrip())
        if text.startswith("]", pos) and not found.texts:
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            found.whole = False
            return found
        found.texts.append(text[pos:end])
        found.values.append(value)
        pos = end + len(text[end:]) - len(text[end:].lstrip())
        if text.startswith(",", pos):
            pos += 1
            continue
        if not text.startswith("]", pos):
            found.whole = False
            return found
        break
    if text[pos + 1:].strip():
        found.whole = False
    return found


def valid_entry(entry: object) -> bool:
    """What Cline's history view shows: an object with a string id, a ts and a task (``item.ts && item.task``)."""
    return (isinstance(entry, dict) and isinstance(entry.get("id"), str) and bool(entry["id"])
            and _ts(entry.get("ts")) is not None and isinstance(entry.get("task"), str) and bool(entry["task"]))


def _plan_cline(install: Install, plan: ClinePlan, found: InstallPlan, folders: list[Path]) -> None:
    path = install.folder.joinpath(*INDEX_FILE)
    memento = _memento(install, plan.findings.append)
    if memento:
        plan.findings.append(Finding("restore-refused", "error", str(install.vscdb), None, None,
                                     f"Cline still keeps its task list in the editor's memento ({len(memento)} entries): its next start "
                                     "moves them into state/taskHistory.json without removing duplicates, so restore writes nothing "
                                     "now; start Cline once, quit the editor, and run restore again"))
        return
    if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
        plan.findings.append(Finding("restore-conflict", "error", str(path), None, None,
                                     "is a symlink or not a regular file; restore never writes through one"))
        return
    before = path.read_bytes() if path.exists() else None
    elements = read_elements(before) if before is not None else Elements()
    if elements.problem:
        plan.findings.append(Finding("restore-conflict", "error", str(path), None, None,
                                     f"{elements.problem}: restore cannot keep its entries as they are, so it writes nothing; "
                                     "move the file aside to let restore write a new list"))
        return
    names = {f.name for f in folders}
    ids = {e["id"] for e in elements.values if isinstance(e, dict) and isinstance(e.get("id"), str)}
    found.listed = len(names & {e["id"] for e in elements.values if valid_entry(e)})
    found.gone = sorted(i for i in ids if i not in names and not (install.tasks / i).is_dir())
    if found.gone:
        plan.findings.append(Finding("listed-without-folder", "warning", str(path), None, None,
                                     f"{len(found.gone)} entr(ies) name a task folder that is gone ({', '.join(found.gone[:3])}"
                                     f"{'…' if len(found.gone) > 3 else ''}); kept as they are (Cline keeps them too; the folder may "
                                     "come back from a backup or a sync): delete them in Cline's history if they are not wanted"))
    for entry in elements.values:
        if isinstance(entry, dict) and entry.get("id") in names and not valid_entry(entry):
            plan.findings.append(Finding("restore-refused", "error", str(install.tasks / entry["id"]), None, None,
                                         "its entry in taskHistory.json has no ts or task, so Cline hides it; restore keeps entries "
                                         "as they are: delete that entry by hand (the backup keeps it) and run restore again"))
    added = []
    for folder in folders:
        if folder.name in ids:
            continue
        item, why = history_item("cline", folder)
        if item is None:
            plan.findings.append(Finding("source-skipped", "warning", str(folder), None, None, f"not listed: {why}; Cline cannot open "
                                         "it either (`levelsess import --from cline` keeps what it holds)"))
            continue
        added.append(item)
    added.sort(key=lambda e: (e["ts"], e["id"]))
    salvaged = before is not None and not elements.whole
    if salvaged:
        plan.findings.append(Finding("index-corrupt", "warning", str(path), None, None,
                                     f"is cut or damaged (Cline would rebuild it with its own reconstruct, which keeps no digit-less id, "
                                     f"no cwd and no model): its {len(elements.texts)} whole entr(ies) are kept as they are, the bytes "
                                     "after them hold no whole entry; the original stays in the backup"))
    if not added and not salvaged:
        return
    after = ("[" + ",".join(elements.texts + [dumps(e).decode("utf-8") for e in added]) + "]").encode("utf-8")
    found.rewrite = ListRewrite(path, before, after, len(elements.texts), tuple(added), salvaged)


# -- Roo's list ----------------------------------------------------------------------------------


def _plan_roo(install: Install, plan: ClinePlan, found: InstallPlan, folders: list[Path]) -> None:
    for folder in folders:
        target = folder / ITEM
        if os.path.lexists(target):
            loaded = load_json(target)
            if loaded.whole and not loaded.bom and isinstance(loaded.value, dict) and loaded.value.get("id"):
                found.listed += 1
            else:
                plan.findings.append(Finding("restore-conflict", "warning", str(target), None, None,
                                             f"{TOOLS[install.tool]} cannot read it, so it does not list the task; restore never "
                                             "overwrites it: move it aside and run restore again"))
            continue
        item, why = history_item(install.tool, folder)
        if item is None:
            plan.findings.append(Finding("source-skipped", "warning", str(folder), None, None, f"not listed: {why}"))
            continue
        found.items.append(ItemCreate(target, item, dumps(item)))


def plan_install(source: Path, plan: ClinePlan) -> None:
    install = resolve(source)
    folders = task_folders(install)
    found = InstallPlan(install, tasks=len(folders))
    (_plan_cline if install.tool == "cline" else _plan_roo)(install, plan, found, folders)
    plan.installs.append(found)


def plan_cline(source: Path | None) -> ClinePlan:
    """What making every task folder listed needs, for ``source`` (default: every install found)."""
    plan = ClinePlan()
    for folder in [source] if source is not None else detect():
        plan_install(folder, plan)
    return plan


# -- apply ---------------------------------------------------------------------------------------


def restore_cline(plan: ClinePlan, *, apply: bool) -> ClineResult:
    findings = list(plan.findings)
    if not apply or not plan.writes:
        code = plan.exit_code if not apply else (4 if any(f.severity == "error" for f in findings) else 0)
        return ClineResult(plan, False if not apply else True, tuple(findings), code)
    held = [_in_use(p, who) for p in plan.installs if p.writes and (who := running(p)) is not None]
    if held:
        return ClineResult(plan, True, tuple(findings + held), 4)
    from . import backups

    roots = [p.install.folder for p in plan.installs]
    with durable.confined(durable.Confinement.of(roots, (backups.restore_root(),))):
        return _apply(plan, backups, findings)


def _in_use(found: InstallPlan, who: str) -> Finding:
    return Finding("in-use", "error", str(found.install.folder), None, None,
                   f"{TOOLS[found.install.tool]} is running on it ({who}): nothing written; quit the editor (every window) "
                   "and run restore again")


def _apply(plan: ClinePlan, backups, findings: list[Finding]) -> ClineResult:
    try:
        run = _start(plan, backups)
    except FileChangedError as exc:
        return ClineResult(plan, True, tuple(findings + [Finding("restore-conflict", "error", str(exc), None, None,
                                                                 f"{exc}: run restore again")]), 4)
    held = [_in_use(p, who) for p in plan.installs if p.writes and (who := running(p)) is not None]
    if held:  # checked again now that the backup is made, right before the first write
        backups.undo(run.stamp)
        return ClineResult(plan, True, tuple(findings + held), 4, run.stamp, run.folder, undone=True)
    try:
        for found in plan.installs:
            for item in found.items:
                with durable.atomic_writer(item.path, exclusive=True) as out:
                    out.write(item.data)
            if found.rewrite is not None:
                _write_list(found.rewrite)
                _record(run, str(found.rewrite.path))
    except FileExistsError as exc:
        undone = backups.undo(run.stamp)
        problem = Finding("restore-conflict", "error", str(exc.filename or ""), None, None,
                          "appeared since restore planned (the tool wrote it?); the whole restore was undone: run it again")
        return ClineResult(plan, True, tuple(findings + [problem] + list(undone.findings)), 4, run.stamp, run.folder, undone=True)
    except (LevelsessError, OSError) as exc:
        undone = backups.undo(run.stamp)
        code = 4 if isinstance(exc, FileChangedError) else 8
        problem = Finding("restore-conflict" if code == 4 else "restore-failed", "error", str(plan.installs[0].install.folder), None, None,
                          f"a write failed ({exc}); the whole restore was undone")
        return ClineResult(plan, True, tuple(findings + [problem] + list(undone.findings)), code, run.stamp, run.folder, undone=True)
    problems = verify(plan)
    if problems:
        undone = backups.undo(run.stamp)
        return ClineResult(plan, True, tuple(findings + problems + list(undone.findings)), 8, run.stamp, run.folder, undone=True)
    run.mark("applied", written=[str(p) for found in plan.installs for p in found.files()])
    return ClineResult(plan, True, tuple(findings), 4 if any(f.severity == "error" for f in findings) else 0, run.stamp, run.folder)


def _start(plan: ClinePlan, backups):
    """The run's folder: a byte-exact copy of the list it rewrites, and the manifest, before the first write."""
    stamp, folder = backups._new_folder()
    try:
        replaced, created, dirs = [], [], []
        for n, found in enumerate(plan.installs):
            change = found.rewrite
            if change is not None:
                entry = {"path": str(change.path), "backup": None, "before": None, "after": None}
                if change.before is not None:
                    size, digest = file_digest(change.path)
                    if (size, digest) != (len(change.before), _sha(change.before)):
                        raise FileChangedError(f"{change.path} changed since restore planned; nothing was written")
                    entry["backup"] = f"backup/{n}-{change.path.name}"
                    entry["before"] = {"size": size, "sha256": digest}
                    entry["mode"] = stat.S_IMODE(os.stat(change.path).st_mode)
                    backups._copy(change.path, folder / entry["backup"], size, digest)
                else:
                    dirs += [str(d) for d in missing_dirs(change.path.parent) if str(d) not in dirs]
                replaced.append({"key": f"list{n}", "app": APP, "folder": str(found.install.folder), "files": [entry]})
            created += [{"path": str(i.path), "layout": None, "size": len(i.data), "sha256": _sha(i.data),
                         "temp": str(durable.temp_name(i.path)), "session": i.item["id"]} for i in found.items]
        run = backups.Run(stamp, folder, {"version": 1, "stamp": stamp, "state": "planned", "app": APP,
                                          "sessions": [{"id": f"{p.install.tool}:{p.install.folder}", "app": APP, "next": NEXT}
                                                       for p in plan.installs if p.writes],
                                          "created": created, "changed": [], "replaced": replaced, "dirs": dirs})
        run.save()
        return run
    except BaseException:
        durable.remove(folder, tree=True)
        raise


def _record(run, path: str) -> None:
    """What the list holds after the write, so undo knows the bytes are restore's."""
    for entry in run.manifest["replaced"]:
        for item in entry["files"]:
            if item["path"] == path:
                item["after"] = dict(zip(("size", "sha256"), file_digest(Path(path))))
                item["written"] = True
    run.save()


def _write_list(change: ListRewrite) -> None:
    """Replace the list atomically, only while it still holds what the plan read (or is still absent)."""
    def unchanged(_temp: Path) -> None:
        now = change.path.read_bytes() if change.path.exists() else None
        if now != change.before:
            raise FileChangedError(f"{change.path} changed since restore planned (Cline ran?)")

    durable.ensure_dir(change.path.parent)
    mode = os.stat(change.path).st_mode if change.before is not None else None
    with durable.atomic_writer(change.path, before_replace=unchanged, mode=mode) as out:
        out.write(change.after)


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# -- reading the result back by the tools' rules --------------------------------------------------


def read_list(install: Install) -> dict[str, dict] | None:
    """What the tool lists, by its own rules: Cline ``JSON.parse`` of ``taskHistory.json`` (None when it
    throws or is no array) and each entry it shows; Roo each folder whose ``history_item.json`` parses
    with an ``id``."""
    if install.tool == "cline":
        try:
            value = json.loads(install.folder.joinpath(*INDEX_FILE).read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(value, list):
            return None
        return {e["id"]: e for e in reversed(value) if valid_entry(e)}  # the first one of an id wins (Array.find)
    shown = {}
    for folder in task_folders(install):
        try:
            item = json.loads((folder / ITEM).read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(item, dict) and item.get("id"):
            shown[folder.name] = item
    return shown


def verify(plan: ClinePlan) -> list[Finding]:
    """Read every changed list back: it parses, the entries it held are the same texts in the same
    order, every added task is listed with its folder there, and every file holds the bytes written."""
    problems = []
    for found in plan.installs:
        if not found.writes:
            continue
        listed = read_list(found.install)
        wanted = ([e["id"] for e in found.rewrite.added] if found.rewrite else []) + [i.item["id"] for i in found.items]
        missing = [i for i in wanted if listed is None or i not in listed or not (found.install.tasks / i).is_dir()]
        why = None
        if listed is None:
            why = "the task list does not parse as a JSON array"
        elif missing:
            why = f"{len(missing)} task(s) are still not listed ({', '.join(missing[:3])})"
        elif found.rewrite is not None:
            data = found.rewrite.path.read_bytes()
            kept = read_elements(found.rewrite.before).texts if found.rewrite.before is not None else []
            if data != found.rewrite.after or read_elements(data).texts[:len(kept)] != kept:
                why = "the list read back is not the one written (its kept entries differ)"
        for item in found.items:
            if why is None and file_digest(item.path) != (len(item.data), _sha(item.data)):
                why = f"{item.path} does not hold the bytes written"
        if why is not None:
            problems.append(Finding("restore-verify-failed", "error", str(found.install.folder), None, None,
                                    f"after the write {why}; the whole restore was undone"))
    return problems


# -- restore --app cline (toolkit.restore.APP_RESTORES) ------------------------------------------


def run_app(source: Path | None, maps: list[str], *, apply: bool) -> ClineResult:
    """``restore --app cline [--source GLOBAL_STORAGE_DIR]``: plan, and apply when ``apply``."""
    if maps:
        from ..errors import UsageError

        raise UsageError("--map goes with --app vscode; --app cline takes --source DIR only")
    return restore_cline(plan_cline(source), apply=apply)


def command(folder: Path) -> str:
    return f"levelsess restore --app cline --source {shellwords.quote(str(folder))}"


def summary(result: ClineResult) -> str:
    plan = result.plan
    added = sum(len(p.rewrite.added) if p.rewrite else 0 for p in plan.installs) + sum(len(p.items) for p in plan.installs)
    tasks = sum(p.tasks for p in plan.installs)
    listed = sum(p.listed for p in plan.installs)
    done = result.applied and result.stamp and not result.undone
    lead = ("restore undone" if result.undone else f"{'listed' if done else 'would list'} {added} more task(s)" if added
            else "every task folder is listed" if not any(f.severity == "error" for f in result.findings) else "nothing written")
    return (f"{lead}; {tasks} task folder(s) in {len(plan.installs)} install(s), {listed} listed before"
            f"  [exit {result.exit_code}]")


def rows(result: ClineResult) -> list[tuple[str, str, str]]:
    """(file, action, what) for every file the plan writes and every entry it adds."""
    out = []
    for found in result.plan.installs:
        change = found.rewrite
        if change is not None:
            what = f"keep {change.kept} entr(ies) as they are, add {len(change.added)}" + (" (cut file: whole entries kept)" if change.salvaged else "")
            out.append((str(change.path), "change" if change.before is not None else "create", what))
            out += [(f"{change.path}#{e['id']}", "add entry", _short(e["task"])) for e in change.added]
        out += [(str(i.path), "create", _short(i.item["task"])) for i in found.items]
    return out


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:79] + "…"
