"""A value of any JSON shape where a known one belongs stops no command.

Found by fuzzing each source with one value of one line replaced: a Codex line whose
``payload.type`` was a list or an object made its whole session "could not be converted
(TypeError: unhashable type)", a Claude Code ``stop_reason`` and a Copilot CLI ``toolCallId``
did the same, and `fsck`, `show` and `export` of a file whose line had such a ``type`` raised a
traceback.  A line whose values are of shapes levelsess does not know is read as what it is (a
record of a kind it does not know, kept with its bytes, or a line that became no record,
counted): the rest of its session is imported all the same.

Under the test suite an importer's last-resort catch-all raises instead of skipping the session
(:func:`toolkit.importers.base.unconverted`): each example here must convert.  The exhaustive tests
give every place two levels deep of every kind of line of each format's sources and journals, and
every place its readers look at, each of five odd values in turn; the drawn ones put an odd value
at any depth of a drawn line.  Then the source is imported, checked, listed and shown, and what was
written shown, exported and planned for restore.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    FIXTURES = Path("/work/shared/fixtures")

#: Values of every JSON shape, and the strings the formats give meanings to (a kind in the wrong place).
ODD = st.one_of(
    st.sampled_from([["x"], {"a": 1}, [], {}, [{"type": "text"}], {"type": ["x"]}, 7, -1, 1.5, 10**30, True, None, "",
                     "user", "assistant", "meta", "event", "message", "event_msg", "response_item", "session_meta",
                     "function_call", "exec_command_end", "tool_use", "tool_result", "text", "gemini", "summary"]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "id", "kind"]), inner,
                                                                              max_size=3), max_leaves=6))


def _places(*paths: str) -> tuple[tuple, ...]:
    """Each dotted path as its steps: a key, or a list's item by its index (``message.content.0.id``)."""
    return tuple(tuple(int(step) if step.isdigit() else step for step in path.split(".")) for path in paths)


#: Per format, the places its readers branch on (``payload.type``: the key ``type`` of the object under ``payload``).
CODEX_PLACES = _places("type", "timestamp", "payload", "payload.type", "payload.role", "payload.call_id", "payload.content",
                       "payload.message", "payload.id", "payload.output", "payload.arguments", "payload.name", "payload.summary",
                       "payload.exit_code", "payload.model", "payload.cwd", "payload.item", "payload.text", "payload.phase",
                       "payload.forked_from_id", "payload.source", "payload.images", "payload.reason", "payload.encrypted_content",
                       "payload.content.0.type", "payload.content.0.text", "payload.summary.0.type", "payload.summary.0.text")
CLAUDE_PLACES = _places("type", "uuid", "parentUuid", "sessionId", "timestamp", "message", "message.role", "message.content",
                        "message.id", "message.model", "message.stop_reason", "message.usage", "isSidechain", "toolUseResult",
                        "requestId", "subtype", "logicalParentUuid", "summary", "leafUuid", "cwd", "customTitle", "aiTitle",
                        "isMeta", "content", "agentId", "version", "gitBranch", "isCompactSummary",
                        # a content block's own keys (a tool call's id in a list raised out of every check: unhashable)
                        "message.content.0.type", "message.content.0.id", "message.content.0.tool_use_id",
                        "message.content.0.text", "message.content.0.content", "message.content.0.name",
                        "message.content.1.type", "message.content.1.id", "message.content.1.tool_use_id")
GEMINI_PLACES = _places("type", "id", "timestamp", "content", "sessionId", "projectHash", "kind", "toolCalls", "thoughts",
                        "tokens", "model", "$set", "$rewindTo", "startTime", "lastUpdated", "displayContent",
                        "toolCalls.0.id", "toolCalls.0.name", "toolCalls.0.status", "toolCalls.0.result", "toolCalls.0.args",
                        "content.0.text", "thoughts.0.subject", "thoughts.0.description")
COPILOT_PLACES = _places("type", "data", "id", "timestamp", "parentId", "data.toolCallId", "data.content", "data.toolName",
                         "data.arguments", "data.context", "data.selectedModel", "data.newModel", "data.result", "data.toolRequests",
                         "data.message", "data.startTime", "data.success", "data.toolRequests.0.toolCallId",
                         "data.toolRequests.0.name", "data.toolRequests.0.arguments", "data.toolRequests.0.type")
JOURNAL_PLACES = _places("kind", "type", "t", "seq", "content", "model", "title", "role", "raw", "at", "v", "id", "project",
                         "source", "createdAt", "toolResult", "injected", "replaces", "added", "messages", "briefing",
                         "coversThrough", "sourceKey", "source.app", "source.path")

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow, HealthCheck.data_too_large])


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in ``value`` a value sits (an object's keys, a list's first three items), at any depth."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += _paths(item, prefix + (index,))
    return found


def _shape(value: object) -> str:
    """A line's kind: its keys at the top and what its ``type``, ``kind`` and ``payload.type`` say."""
    if not isinstance(value, dict):
        return type(value).__name__
    payload = value.get("payload")
    return repr((sorted(value), value.get("type"), value.get("kind"), payload.get("type") if isinstance(payload, dict) else None))


def _holder(value: object, path: tuple) -> dict | None:
    """The object that holds (or would hold) the value at ``path``, when every step to it is an object."""
    for key in path[:-1]:
        if isinstance(key, int):
            value = value[key] if isinstance(value, list) and key < len(value) else None
        else:
            value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else None


def _replaced(value: object, path: tuple, new: object) -> object:
    """``value`` with ``new`` at ``path`` (its last key added when absent)."""
    if not path:
        return new
    value[path[0]] = new if len(path) == 1 else _replaced(value[path[0]], path[1:], new)
    return value


def _mutate(data, tree: Path, keys: tuple[tuple[str, ...], ...] = ()) -> Path:
    """One line of one of ``tree``'s JSONL files, with one of its values replaced by an odd one: the file
    changed.  ``keys``: the places the format's readers look at (a key's path), one of which, there or
    added to an object that is there, takes the odd value half the time."""
    files = sorted(p for p in tree.rglob("*.jsonl"))
    path = data.draw(st.sampled_from(files), label="file")
    lines = path.read_bytes().split(b"\n")
    parsed = []
    for n, line in enumerate(lines):
        try:
            parsed.append((n, json.loads(line)))
        except ValueError:
            continue
    shapes: dict[str, list] = {}  # (a rare kind of line is drawn as often as a common one)
    for n, value in parsed:
        shapes.setdefault(_shape(value), []).append((n, value))
    group = data.draw(st.sampled_from(sorted(shapes)), label="kind of line")
    n, value = data.draw(st.sampled_from(shapes[group]), label="line")
    places = _paths(value)[1:] or [()]
    top = [p for p in places if len(p) == 1]  # (half the time a key at the top: what readers branch on first)
    named = [k for k in keys if _holder(value, k) is not None]
    present = [k for k in named if k[-1] in _holder(value, k)]
    if named and data.draw(st.booleans(), label="a named place"):
        where = data.draw(st.sampled_from(present if present and data.draw(st.booleans(), label="one it has") else named),
                          label="place")
        _holder(value, where).setdefault(where[-1], None)
    else:
        where = data.draw(st.sampled_from(top if top and data.draw(st.booleans(), label="at the top") else places), label="path")
    new = data.draw(ODD, label="value")
    lines[n] = json.dumps(_replaced(value, where, new)).encode()
    path.write_bytes(b"\n".join(lines))
    return path


def _every_command(app: str, source: Path, changed: Path, work: Path) -> None:
    """Import ``source`` (its catch-all raising), check it and the ``changed`` file, list and show them, and
    show and export what was written: none raises."""
    store = work / "store"
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json")
    assert result.exit_code in (0, 1, 4), result.stdout[-2000:] + result.stderr[-2000:]
    for args in (("fsck", source), ("fsck", changed), ("ls", source), ("show", changed), ("ls", store)):
        run_cli(*args)
    for journal in sorted(store.rglob("*.jsonl"))[:4]:
        run_cli("show", journal)
        run_cli("export", journal, "--format", "md", "-o", work / f"{journal.stem}.md")


#: The odd values every place takes in turn (the exhaustive tests): a list, an object, a number, null, a boolean.
FEW = [["x"], {"a": 1}, 7, None, True]


def _places_of(value: object, named: tuple[tuple[str, ...], ...]) -> list[tuple]:
    """The places of ``value`` two levels deep (an object's keys, a list's first item), and the
    format's named places whose object is there (added when absent)."""
    found = [p for p in _paths(value)[1:] if len(p) <= 2 and (len(p) < 2 or not isinstance(p[1], int) or p[1] == 0)]
    return found + [k for k in named if k not in found and _holder(value, k) is not None]


def _mutants(line: bytes, seen: set, odd: object, named: tuple[tuple[str, ...], ...]) -> list[bytes]:
    """When ``line`` is the first of its kind (``seen``: the kinds met so far), a copy of it for each of
    its places, that place taking ``odd``; else none."""
    try:
        value = json.loads(line)
    except ValueError:
        return []
    if _shape(value) in seen:
        return []
    seen.add(_shape(value))
    return [json.dumps(_replaced(copy.deepcopy(value), where, odd)).encode() for where in _places_of(value, named)
            if where == () or isinstance(_holder(value, where) if len(where) > 1 else value, dict)]


def _with_mutants(tree: Path, odd: object, named: tuple[tuple[str, ...], ...]) -> int:
    """Each JSONL file of ``tree`` with, after the first line of each kind it holds, one copy of that
    line for each of its places, that place taking ``odd`` (the files changed in place); how many copies."""
    made = 0
    for path in sorted(tree.rglob("*.jsonl")):
        out, seen = [], set()
        for line in path.read_bytes().split(b"\n"):
            copies = _mutants(line, seen, odd, named)
            out += [line, *copies]
            made += len(copies)
        path.write_bytes(b"\n".join(out))
    return made


def _last_line_mutants(tree: Path, odd: object, named: tuple[tuple[str, ...], ...]) -> int:
    """For the first line of each kind in ``tree`` (once in the tree) and each of its places, a file of
    its own beside it (its name the original's and ``-m<n>``): the original file's first line, then the
    line with ``odd`` at that place, last, where what a reader judges at a file's end meets it (the last
    message, its tool calls, the resumed path).  How many files."""
    made, seen = 0, set()
    for path in sorted(tree.rglob("*.jsonl")):
        lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
        for n, line in enumerate(lines):
            for mutant in _mutants(line, seen, odd, named):
                made += 1
                path.with_name(f"{path.stem}-m{made}.jsonl").write_bytes(b"\n".join(([lines[0]] if n else []) + [mutant]) + b"\n")
    return made


def _each_example(pristine: Path, name: str, tmp_path: Path):
    """A fresh copy of ``pristine`` for one example, under ``tmp_path``."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    shutil.copytree(pristine, work / name)
    return work, work / name


def _copied(files: list[Path], root: Path, into: Path) -> None:
    """Copy ``files`` (under ``root``) to the same places under ``into``: the small real sources of a format."""
    for path in files:
        target = into / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)


@pytest.fixture(scope="module")
def codex_tree(tmp_path_factory) -> Path:
    from tests.importers import codex_shapes

    home = tmp_path_factory.mktemp("codex") / ".codex"
    _copied(sorted((FIXTURES / "codex").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_size)[:2], FIXTURES / "codex", home)
    codex_shapes.build(home, rollouts=4, seed=31)
    return home


@pytest.fixture(scope="module")
def claude_tree(tmp_path_factory) -> Path:
    from tests.importers import claude_shapes

    projects = tmp_path_factory.mktemp("claude") / "projects"
    fixtures = FIXTURES / "claude-code" / "projects"
    _copied([p for p in fixtures.glob("*/*.jsonl") if p.stat().st_size < 50_000], fixtures, projects)
    claude_shapes.build(projects, sessions=4, seed=31)
    return projects


@pytest.fixture(scope="module")
def gemini_tree(tmp_path_factory) -> Path:
    from tests.layouts.gemini import SID, every_kind, gemini, gemini_home, line, meta, name, user

    sub = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    subagent = b"".join(map(line, [meta(sub, kind="subagent"), user("s1", "look at the repo"), gemini("s2", "done")]))
    return gemini_home(tmp_path_factory.mktemp("gemini"), {name(): every_kind(), f"{SID}/{sub}.jsonl": subagent})


@pytest.fixture(scope="module")
def copilot_tree(tmp_path_factory) -> Path:
    from tests.importers.test_copilot import copilot_session

    home = tmp_path_factory.mktemp("copilot") / ".copilot"
    cwd = home.parent / "proj"
    cwd.mkdir()
    copilot_session(home, "0d7f5c3a-9b1e-4c2d-8e6f-1a2b3c4d5e6f", cwd)
    return home


FORMATS = {"codex": ("codex_tree", ".codex", CODEX_PLACES), "claude": ("claude_tree", "projects", CLAUDE_PLACES),
           "gemini": ("gemini_tree", ".gemini", GEMINI_PLACES), "copilot": ("copilot_tree", ".copilot", COPILOT_PLACES)}
#: The formats, those built from shared/fixtures skipped where it is not beside the checkout.
APPS = [pytest.param(app, marks=pytest.mark.skipif(app in ("codex", "claude") and not FIXTURES.is_dir(),
                                                   reason="shared/fixtures is not beside the checkout")) for app in sorted(FORMATS)]


@pytest.mark.parametrize("app", APPS)
@SETTINGS
@given(data=st.data())
def test_a_source_with_an_odd_value_still_imports(app, data, request, tmp_path):
    fixture, name, named = FORMATS[app]
    work, tree = _each_example(request.getfixturevalue(fixture), name, tmp_path)
    changed = _mutate(data, tree, named)
    _every_command(app, tree, changed, work)


@pytest.fixture(scope="module")
def journals(tmp_path_factory, codex_tree, claude_tree) -> Path:
    """A store of the journals the Codex and Claude Code trees import into: every kind of record an importer writes."""
    store = tmp_path_factory.mktemp("journals") / "store"
    for app, source in (("codex", codex_tree), ("claude", claude_tree)):
        run_cli("import", "--from", app, "--source", source, "--store", store)
    return store


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the checkout")
@SETTINGS
@given(data=st.data())
def test_a_journal_with_an_odd_value_is_checked_shown_and_exported(data, journals, tmp_path):
    work, store = _each_example(journals, "store", tmp_path)
    journal = _mutate(data, store, JOURNAL_PLACES)
    for args in (("fsck", journal), ("fsck", store), ("ls", store), ("show", journal), ("reindex", "--check", store),
                 ("restore", journal.stem, "--store", store, "--to", work / "to"),
                 ("export", journal, "--format", "md", "-o", work / "out.md"), ("export", journal, "--format", "json", "-o", work / "out.json")):
        run_cli(*args)


@pytest.mark.parametrize("odd", FEW, ids=lambda odd: type(odd).__name__)
@pytest.mark.parametrize("app", APPS)
def test_every_place_of_every_kind_of_line_takes_an_odd_value(app, odd, request, tmp_path):
    """Not drawn at random: every kind of line of each format's sources, each of its places two
    levels deep and each place its readers look at, takes each odd value in turn (a copy of the line
    for each place, beside it); the sources still import, check, list and show."""
    fixture, name, named = FORMATS[app]
    work, tree = _each_example(request.getfixturevalue(fixture), name, tmp_path)
    assert _with_mutants(tree, odd, named) > 20
    for path in sorted(tree.rglob("*.jsonl")):
        _every_command(app, tree, path, work) if path == min(tree.rglob("*.jsonl")) else (run_cli("fsck", path), run_cli("show", path))


@pytest.mark.parametrize("odd", FEW, ids=lambda odd: type(odd).__name__)
@pytest.mark.parametrize("app", [app for app in APPS if app.values[0] != "copilot"])
def test_every_place_of_every_kind_of_line_takes_an_odd_value_at_the_end_of_a_file(app, odd, request, tmp_path):
    """The same places, each odd value the last line of a file of its own (after the file's first line):
    what a check and a listing judge once a file is read meets it there.  A Claude Code ``tool_use`` id that
    was a list, in the last message, raised out of ``fsck``, ``ls`` and ``show``; the test beside the line
    never made it the last.  (Copilot CLI's events have no check of their own.)"""
    fixture, name, named = FORMATS[app]
    work, tree = _each_example(request.getfixturevalue(fixture), name, tmp_path)
    assert _last_line_mutants(tree, odd, named) > 20
    for args in (("fsck", tree, "--json"), ("ls", tree)):
        result = run_cli(*args)
        assert result.exit_code in (0, 1, 4), result.stdout[-2000:] + result.stderr[-2000:]


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the checkout")
@pytest.mark.parametrize("odd", FEW, ids=lambda odd: type(odd).__name__)
def test_every_place_of_every_kind_of_journal_record_takes_an_odd_value(odd, journals, tmp_path):
    work, store = _each_example(journals, "store", tmp_path)
    assert _with_mutants(store, odd, JOURNAL_PLACES) > 20
    run_cli("fsck", store)
    run_cli("ls", store)
    run_cli("reindex", "--check", store)
    for n, journal in enumerate(sorted(store.rglob("*.jsonl"), key=lambda path: -path.stat().st_size)):
        run_cli("show", journal)
        if n < 4:  # (the largest, with the most kinds of record: these commands read what show reads)
            run_cli("restore", journal.stem, "--store", store, "--to", work / "to")
            run_cli("export", journal, "--format", "md", "-o", work / "out.md")
    for journal in [min(store.rglob("claude-*.jsonl")), min(store.rglob("codex-*.jsonl"))]:  # the meta record itself
        data = journal.read_bytes()
        head, rest = data.split(b"\n", 1)
        meta = json.loads(head)
        for where in _places_of(meta, JOURNAL_PLACES):
            journal.write_bytes(json.dumps(_replaced(copy.deepcopy(meta), where, odd)).encode() + b"\n" + rest)
            for args in (("show", journal), ("restore", journal.stem, "--store", store, "--to", work / "to"), ("ls", journal.parent)):
                run_cli(*args)
        journal.write_bytes(data)


@pytest.mark.parametrize("odd", FEW, ids=lambda odd: type(odd).__name__)
def test_every_first_record_with_an_odd_value_is_identified_or_not(odd, codex_tree, claude_tree, gemini_tree, copilot_tree, journals):
    """What names a file's format from its first record (``fsck``'s, ``show``'s, an import's sniff) and
    each layout's reading of a first record never raise, whatever shape a value takes."""
    from toolkit.identify import sniff
    from toolkit.layouts.registry import every

    layouts = list(every())
    for tree in (codex_tree, claude_tree, gemini_tree, copilot_tree, journals):
        for path in sorted(tree.rglob("*.jsonl"))[:12]:
            for line in path.read_bytes().split(b"\n")[:40]:
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                for where in _places_of(value, CODEX_PLACES + CLAUDE_PLACES + GEMINI_PLACES + COPILOT_PLACES + JOURNAL_PLACES):
                    held = _holder(value, where) if len(where) > 1 else value
                    if not isinstance(held, dict):
                        continue
                    mutant = _replaced(copy.deepcopy(value), where, odd)
                    found = sniff(mutant)
                    for layout in layouts:
                        layout.identify(mutant, found)
