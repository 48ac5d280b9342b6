#!/usr/bin/env python
"""VS Code import benchmark (SOURCES.md §3, §4; DESIGN.md §5) - a standalone script, not a pytest test.

    python tests/bench/bench_import_vscode.py [--workspaces 500] [--sessions 5000] [--dir DIR] [--seed N] [--json]

Builds (seeded, so every run makes the same bytes) a synthetic VS Code ``User`` folder
(SOURCES.md §3.1-§3.5):

  User/workspaceStorage/<wsId>/            --workspaces folders, each with
      workspace.json                       {"folder": "file:///DIR/projects/project-N"}; ~10% point at
                                           DIR/projects/gone-N, which does not exist (folder-missing)
      state.vscdb                          ItemTable with chat.ChatSessionStore.index listing ~90% of
                                           the workspace's sessions (+ ~10% of workspaces hold one stale
                                           entry without a file) and a few unrelated UI keys
      chatSessions/<sessionId>.json        about half: a v3 session written whole
      chatSessions/<sessionId>.jsonl       the other half: a mutation log (SOURCES §3.3): one kind-0
                                           line (no requests), then per request a kind-2 push onto
                                           "requests", the response streamed as kind-2 pushes onto
                                           requests[n].response (a growing markdown part is re-sent
                                           with "i" = its index), and kind-1 sets of result/modelState
  User/globalStorage/emptyWindowChatSessions/<id>.json[l]   --empty-window sessions (default
                                           --sessions/100, i.e. ~50), indexed in
  User/globalStorage/state.vscdb           (~90% of them)

--sessions sessions are spread over the workspaces (every workspace gets one, the rest at random:
~10 each by default); each has 1-30 requests whose responses are a few KB of markdown (prose with
unicode, lists, code fences) in 1-4 parts, and ~35% of requests also call 1-3 tools
(``toolInvocationSerialized`` with ``resultDetails`` input/output).  Then, with the page cache warm:

  import        `levelsess import --from vscode --source DIR/User --store EMPTY --json` under
                tests/bench/probe.py's PROBE (wall time, start-up included; VmHWM peak RSS)
  re-import     the same again on that store: every session must be "unchanged", nothing new
  orphans dry   `levelsess import ... --orphans-only --dry-run --json` on another empty store:
                must list exactly the orphaned sessions and write nothing
  fsck          `levelsess fsck --store STORE` must exit 0 (warnings are fine)

and verifies the first run's JSON: one session per built session (id ``vscode-<sessionId>``), all
"created", 2 records (user + assistant) per request, and exactly the built orphans, with their
reasons: every session of a missing-folder workspace (``folder-missing``) and every session not in
its index (``not-indexed``).  sessions/s = sessions found / time; MB/s = bytes of every file under
User (session files, state.vscdb, workspace.json) / time.  MB is 10**6 bytes, MiB 2**20.

--dir DIR builds the tree in DIR (DIR/User, DIR/projects) and keeps it; a later run with the same
--workspaces, --sessions, --empty-window and --seed reuses it.  Stores go to DIR/store and
DIR/store-dry and are removed at the end unless --keep.  Without --dir everything goes to a temp
folder under /tmp, removed at the end unless --keep.

The file name has no ``test_`` prefix on purpose: pytest does not collect or import it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import shutil
import sqlite3
import string
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_import_cursor import cli_command, run_fsck, run_probed, warm  # noqa: E402 - siblings

GENERATOR_VERSION = 1
MB = 1_000_000
MIB = 1 << 20
MARKER = "bench-vscode.json"

ORPHAN_WORKSPACE_RATE = 0.10  # workspace.json points at a folder that does not exist
INDEXED_RATE = 0.90  # sessions listed in their store's index
JSONL_RATE = 0.50  # sessions stored as a mutation log (else a v3 .json)
STALE_ENTRY_RATE = 0.10  # workspaces whose index also lists a session without a file (#283733)
TOOL_RATE = 0.35  # requests that call tools
REQUESTS = (1, 30)  # uniform
RESPONSE_CHARS = (800, 9_000)  # log-uniform total markdown per response
PROMPT_CHARS = (20, 700)
TOOL_OUTPUT_CHARS = (80, 3_000)
ATTACH_RATE = 0.2  # requests with a file attachment (variableData)
EPOCH_MS = int(datetime(2025, 9, 15, tzinfo=timezone.utc).timestamp() * 1000)
SPAN_MS = 120 * 86_400_000
MODELS = ("copilot/gpt-4.1", "copilot/claude-sonnet-4", "copilot/gpt-5-mini", "copilot/gemini-2.5-pro")
TOOLS = (("copilot_readFile", lambda p, r: {"filePath": p, "startLine": r.randint(1, 200), "endLine": r.randint(200, 600)}),
         ("copilot_findTextInFiles", lambda p, r: {"query": r.choice(("TODO", "def scan", "orjson", "refund")), "isRegexp": False}),
         ("copilot_listDirectory", lambda p, r: {"path": p.rsplit("/", 1)[0]}),
         ("run_in_terminal", lambda p, r: {"command": r.choice(("pytest -q", "ruff check .", "git status", "npm test")),
                                           "explanation": "run the checks", "isBackground": False}),
         ("copilot_replaceString", lambda p, r: {"filePath": p, "oldString": "x = 1", "newString": "x = 2"}),
         ("mcp_github_search_issues", lambda p, r: {"q": "repo:o/r is:open label:bug", "perPage": 10}))
AGENT = {"extensionId": {"value": "GitHub.copilot-chat", "_lower": "github.copilot-chat"}, "extensionVersion": "0.31.3",
         "publisherDisplayName": "GitHub", "extensionPublisherId": "GitHub", "extensionDisplayName": "GitHub Copilot Chat",
         "id": "github.copilot.editsAgent", "description": "Edit files in your workspace in agent mode", "when": "config.chat.agent.enabled",
         "metadata": {"themeIcon": {"id": "tools"}, "hasFollowups": False, "supportIssueReporting": False},
         "name": "agent", "fullName": "GitHub Copilot", "isDefault": True, "locations": ["panel"], "modes": ["agent"],
         "slashCommands": [], "disambiguation": []}
ITEMTABLE_WORKSPACE = {  # harmless keys a real workspace DB carries beside the index
    "workbench.explorer.treeViewState": '{"focus":[],"selection":[],"expanded":[]}',
    "memento/workbench.parts.editor": '{"editorpart.state":{"serializedGrid":{"root":{"type":"branch","data":[]}}}}',
    "workbench.panel.chat.numberOfVisibleViews": "1",
    "chat.editing.autosaveDisabled": "[]",
}

WORDS = (
    "the of and to in is that for it as with on be this by are from at or an function value "
    "return error test file class method request response user session journal record line "
    "parse check repair index cache lock write read buffer stream offset byte json schema "
    "refund payment order invoice customer account token model tool result output input path "
    "config option flag default module package import export async await promise callback "
    "should would could maybe because however therefore instead although unless while until "
    "you can fix this by moving the flush before the rename so a crash cannot lose the tail "
    "here is what changed and why the test was failing on the second run"
).split()
UNICODE_WORDS = (
    "café naïve Zürich façade jalapeño straße déjà-vu 日本語 テキスト 変更 関数 中文 字符 修复 错误 "
    "한국어 테스트 Привет мир ошибка файл Ελληνικά κείμενο עברית العربية हिन्दी "
    "🚀 ✅ 🔥 👍 🐛 ⚠️ 📦 ✨ → ≥ ≤ ∑ ∞ — … «quote» “smart”"
).split()
CODE_LINES = [
    'def {n}(self, path: Path, *, strict: bool = False) -> "Scan":',
    '    """Return the scan of {n}; raise CorruptionError on damage."""',
    "    data = handle.read(CHUNK)  # 4 MiB at a time",
    '    if not data.endswith(b"\\n"):',
    "        raise ValueError(f\"{{path}}: bad tail {{data[-60:]!r}}\")",
    "const {n} = async (req, res) => {{ const body = await req.json(); res.send(JSON.stringify(body)); }};",
    "\tfor (let i = 0; i < rows.length; i++) {{ if (rows[i].id === id) return rows[i]; }}",
    "SELECT id, amount FROM refunds WHERE status = 'pending' AND created_at > NOW() - INTERVAL '1 day';",
    "  --> src/{n}.rs:42:17 | error[E0502]: cannot borrow `self` as mutable",
    "+    if tail and tail[-1:] != b'\\n':   # diff line",
]
LANGS = ("python", "ts", "rust", "sql", "diff", "bash", "")


# --- the source tree ------------------------------------------------------------------------


def _sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(6, 28))
    for i in range(0, len(words), 7):
        if rng.random() < 0.3:
            words[i] = rng.choice(UNICODE_WORDS)
        elif rng.random() < 0.15:
            words[i] = f"`{words[i]}`"
        elif rng.random() < 0.1:
            words[i] = f"**{words[i]}**"
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", ":", "?", "!"))


def _markdown_pool(rng: random.Random, chars: int) -> str:
    """A few MB of Copilot-style markdown: prose with unicode, headings, lists, code fences."""
    parts: list[str] = []
    size = 0
    while size < chars:
        roll = rng.random()
        if roll < 0.5:
            piece = " ".join(_sentence(rng) for _ in range(rng.randint(1, 6))) + "\n\n"
        elif roll < 0.62:
            piece = "".join(f"{'-' if rng.random() < 0.7 else f'{n + 1}.'} {_sentence(rng)}\n" for n in range(rng.randint(2, 7))) + "\n"
        elif roll < 0.7:
            piece = f"{'#' * rng.randint(2, 4)} {' '.join(rng.choices(WORDS, k=rng.randint(2, 6))).capitalize()}\n\n"
        elif roll < 0.95:
            ident = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12)))
            body = "\n".join(rng.choice(CODE_LINES).format(n=ident) for _ in range(rng.randint(3, 20)))
            piece = f"```{rng.choice(LANGS)}\n{body}\n```\n\n"
        else:
            piece = " ".join(rng.choices(UNICODE_WORDS, k=rng.randint(5, 30))) + "\n\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


@dataclass
class Planned:
    """One built session: what the import must report for it."""

    sid: str
    store: int  # workspace index, -1 = empty window
    shape: str  # json | jsonl
    requests: int
    indexed: bool
    orphan: list[str]


class Generator:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.pool = _markdown_pool(self.rng, 3_000_000)

    def uuid4(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, low: int, high: int) -> str:
        n = int(math.exp(self.rng.uniform(math.log(low), math.log(high))))
        start = self.rng.randrange(0, len(self.pool) - n)
        return self.pool[start : start + n]

    def prompt(self) -> str:
        return (self.text(*PROMPT_CHARS).strip() or "go on").replace("```", "'''")

    def markdown_part(self, value: str, project: str | None) -> dict:
        part: dict = {"value": value, "supportThemeIcons": False, "supportHtml": False}
        if project:
            part["baseUri"] = {"$mid": 1, "path": project + "/", "scheme": "file"}
        return part

    def tool_part(self, project: str | None) -> dict:
        rng = self.rng
        name, make_args = rng.choice(TOOLS)
        path = f"{project or '/home/bench/scratch'}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        args = make_args(path, rng)
        output = self.text(*TOOL_OUTPUT_CHARS)
        return {"kind": "toolInvocationSerialized",
                "invocationMessage": {"value": f"Running `{name}`", "supportThemeIcons": False, "supportHtml": False, "uris": {}},
                "pastTenseMessage": {"value": f"Ran `{name}`", "supportThemeIcons": False, "supportHtml": False, "uris": {}},
                "isConfirmed": {"type": 1}, "isComplete": True, "source": {"type": "internal", "label": "Built-In"},
                "toolCallId": self.uuid4(), "toolId": name,
                "resultDetails": {"input": json.dumps(args, indent=2), "output": [{"type": "embed", "isText": True, "value": output}],
                                  "isError": rng.random() < 0.04}}

    def request(self, sid: str, ts: int, project: str | None, model: str) -> dict:
        rng = self.rng
        prompt = self.prompt()
        total = int(math.exp(rng.uniform(math.log(RESPONSE_CHARS[0]), math.log(RESPONSE_CHARS[1]))))
        chunks = rng.randint(1, 4)
        tools = rng.randint(1, 3) if rng.random() < TOOL_RATE else 0
        response: list[dict] = []
        for n in range(max(chunks, tools + 1)):
            if n < chunks:
                response.append(self.markdown_part(self.text(max(40, total // chunks // 2), max(80, total // chunks * 2)), project))
            if n < tools:
                response.append(self.tool_part(project))
        first = rng.randint(300, 6_000)
        elapsed = first + rng.randint(1_000, 90_000)
        roll = rng.random()
        state = {"value": 2 if roll < 0.02 else 3 if roll < 0.03 else 1, "completedAt": ts + elapsed}
        rid = "request_" + self.uuid4()
        result: dict = {"timings": {"firstProgress": first, "totalElapsed": elapsed},
                        "metadata": {"modelMessageId": self.uuid4(), "responseId": self.uuid4(), "sessionId": sid, "agentId": AGENT["id"]}}
        if state["value"] == 3:
            result["errorDetails"] = {"message": "Sorry, your request failed. Please try again. Reason: Server error: 503", "responseIsIncomplete": True}
        variables = []
        if project and rng.random() < ATTACH_RATE:
            path = f"{project}/src/{rng.choice(WORDS)}.py"
            variables.append({"kind": "file", "id": f"file://{path}", "name": path.rsplit("/", 1)[1],
                              "value": {"$mid": 1, "fsPath": path, "external": f"file://{path}", "path": path, "scheme": "file"}})
        return {"requestId": rid, "message": {"parts": [{"range": {"start": 0, "endExclusive": len(prompt)},
                                                         "editorRange": {"startLineNumber": 1, "startColumn": 1, "endLineNumber": 1, "endColumn": len(prompt) + 1},
                                                         "text": prompt, "kind": "text"}], "text": prompt},
                "variableData": {"variables": variables}, "response": response, "responseId": "response_" + self.uuid4(),
                "result": result, "followups": [], "isCanceled": state["value"] == 2, "agent": AGENT, "contentReferences": [],
                "codeCitations": [], "timestamp": ts, "modelId": model, "modelState": state, "timeSpentWaiting": ts + first}

    def session(self, sid: str, project: str | None) -> tuple[dict, int]:
        rng = self.rng
        t = EPOCH_MS + rng.randrange(SPAN_MS)
        created = t
        model = rng.choice(MODELS)
        requests = []
        for _ in range(rng.randint(*REQUESTS)):
            t += rng.randint(5_000, 1_800_000)
            requests.append(self.request(sid, t, project, model))
            t = requests[-1]["modelState"]["completedAt"]
        data = {"version": 3, "requesterUsername": "bench", "requesterAvatarIconUri": {"$mid": 1, "path": "/u/1", "scheme": "https", "authority": "avatars.githubusercontent.com"},
                "responderUsername": "GitHub Copilot", "responderAvatarIconUri": {"id": "copilot"}, "initialLocation": "panel",
                "sessionId": sid, "creationDate": created, "lastMessageDate": t, "requests": requests}
        if rng.random() < 0.85:
            data["customTitle"] = " ".join(rng.choices(WORDS, k=rng.randint(2, 7))).capitalize()
        return data, t

    def mutation_log(self, data: dict) -> bytes:
        """The same session as a .jsonl log: kind 0 without requests, then pushes and sets."""
        rng = self.rng
        head = {k: v for k, v in data.items() if k not in ("requests", "customTitle")}
        head["requests"] = []
        out = [{"kind": 0, "v": head}]
        for n, request in enumerate(data["requests"]):
            pending = {k: v for k, v in request.items() if k not in ("response", "result", "modelState", "followups")}
            pending["response"] = []
            pending["modelState"] = {"value": 0}
            out.append({"kind": 2, "k": ["requests"], "v": [pending]})
            at = ["requests", n, "response"]
            length = 0
            for part in request["response"]:
                if part.get("kind") is None:  # markdown grows while streaming: re-sent in place ("i")
                    value = part["value"]
                    cuts = sorted(rng.sample(range(1, len(value)), min(len(value) - 1, rng.randint(0, 2)))) if len(value) > 1 else []
                    for k, cut in enumerate(cuts):
                        entry = {"kind": 2, "k": at, "v": [{**part, "value": value[:cut]}]}
                        if k:
                            entry["i"] = length - 1
                        else:
                            length += 1
                        out.append(entry)
                    final = {"kind": 2, "k": at, "v": [part]}
                    if cuts:
                        final["i"] = length - 1
                    else:
                        length += 1
                    out.append(final)
                else:
                    out.append({"kind": 2, "k": at, "v": [part]})
                    length += 1
            out.append({"kind": 1, "k": ["requests", n, "result"], "v": request["result"]})
            out.append({"kind": 1, "k": ["requests", n, "followups"], "v": request["followups"]})
            out.append({"kind": 1, "k": ["requests", n, "modelState"], "v": request["modelState"]})
            if n == 0 and "customTitle" in data:
                out.append({"kind": 1, "k": ["customTitle"], "v": data["customTitle"]})
        return b"".join(orjson.dumps(o) + b"\n" for o in out)


def _create_db(path: Path, rows: dict[str, str]) -> None:
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("PRAGMA synchronous = OFF; PRAGMA user_version = 1;"
                       "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO ItemTable VALUES (?, ?)", list(rows.items()))
    conn.execute("COMMIT")
    conn.close()


def _index_entry(sid: str, data: dict, last: int) -> dict:
    return {"sessionId": sid, "title": data.get("customTitle") or "New Chat", "lastMessageDate": last,
            "timing": {"startTime": data["creationDate"], "endTime": last}, "initialLocation": "panel",
            "isEmpty": False, "lastResponseState": 1}


def _source_bytes(user: Path) -> dict:
    sizes = Counter()
    for path in user.rglob("*"):
        if path.is_file():
            kind = "session_files" if path.suffix in (".json", ".jsonl") and path.parent.name in ("chatSessions", "emptyWindowChatSessions") \
                else "state_vscdb" if path.name == "state.vscdb" else "other"
            sizes[kind] += path.stat().st_size
            sizes["files"] += 1
    sizes["total"] = sizes["session_files"] + sizes["state_vscdb"] + sizes["other"]
    return dict(sizes)


def build_source(base: Path, workspaces: int, sessions: int, empty_window: int, seed: int, say) -> dict:
    """Write the synthetic VS Code User folder under ``base`` (or reuse it); return its description."""
    marker = base / MARKER
    user = base / "User"
    projects = base / "projects"
    wanted = {"generator": GENERATOR_VERSION, "workspaces": workspaces, "sessions": sessions, "empty_window": empty_window, "seed": seed}
    if marker.exists():
        info = orjson.loads(marker.read_bytes())
        if {k: info.get(k) for k in wanted} == wanted and user.is_dir():
            for w in info["workspace_list"]:  # live targets must exist, orphaned ones must not
                target = Path(w["project"])
                if w["orphaned"] and target.exists():
                    raise SystemExit(f"{target} exists, but the benchmark built it as a missing folder; remove it or pick another --dir")
                if not w["orphaned"]:
                    target.mkdir(parents=True, exist_ok=True)
            say(f"reusing the VS Code tree in {user}")
            return info
        raise SystemExit(f"{base} holds a different benchmark tree ({ {k: info.get(k) for k in wanted} }); pick another --dir")
    if user.exists():
        raise SystemExit(f"{user} exists but holds no benchmark tree; pick another --dir")
    started = time.perf_counter()
    gen = Generator(seed)
    rng = gen.rng
    ws_list = []
    for w in range(workspaces):
        orphaned = rng.random() < ORPHAN_WORKSPACE_RATE
        target = projects / (f"gone-{w + 1}" if orphaned else f"project-{w + 1}")
        if not orphaned:
            target.mkdir(parents=True, exist_ok=True)
        ws_list.append({"id": hashlib.md5(f"{seed}:ws:{w}".encode()).hexdigest(), "project": str(target), "orphaned": orphaned})
    owners = [w % workspaces for w in range(min(sessions, workspaces))] + [rng.randrange(workspaces) for _ in range(sessions - min(sessions, workspaces))]
    rng.shuffle(owners)
    owners += [-1] * empty_window
    planned: list[Planned] = []
    indexes: dict[int, dict] = {w: {} for w in range(-1, workspaces)}
    for w in range(workspaces):
        folder = user / "workspaceStorage" / ws_list[w]["id"]
        (folder / "chatSessions").mkdir(parents=True, exist_ok=True)
        (folder / "workspace.json").write_text(json.dumps({"folder": Path(ws_list[w]["project"]).as_uri()}))
    empty_dir = user / "globalStorage" / "emptyWindowChatSessions"
    empty_dir.mkdir(parents=True, exist_ok=True)
    step = max(1, len(owners) // 10)
    written = 0
    for n, w in enumerate(owners, 1):
        sid = gen.uuid4()
        project = None if w < 0 else ws_list[w]["project"]
        data, last = gen.session(sid, project)
        shape = "jsonl" if rng.random() < JSONL_RATE else "json"
        indexed = rng.random() < INDEXED_RATE
        body = gen.mutation_log(data) if shape == "jsonl" else orjson.dumps(data)
        folder = empty_dir if w < 0 else user / "workspaceStorage" / ws_list[w]["id"] / "chatSessions"
        (folder / f"{sid}.{shape}").write_bytes(body)
        written += len(body)
        if indexed:
            indexes[w][sid] = _index_entry(sid, data, last)
        orphan = (["folder-missing"] if w >= 0 and ws_list[w]["orphaned"] else []) + ([] if indexed else ["not-indexed"])
        planned.append(Planned(sid, w, shape, len(data["requests"]), indexed, sorted(orphan)))
        if n % step == 0:
            say(f"  {n * 100 // len(owners):3d}%  {n} sessions, {written / MB:.0f} MB of session files, {time.perf_counter() - started:.0f}s")
    stale = 0
    for w in range(-1, workspaces):
        entries = indexes[w]
        if w >= 0 and rng.random() < STALE_ENTRY_RATE:  # an entry whose file is gone: nothing to import
            ghost = gen.uuid4()
            entries[ghost] = _index_entry(ghost, {"creationDate": EPOCH_MS, "customTitle": "gone"}, EPOCH_MS + 1)
            stale += 1
        # VS Code keeps the index newest first; its order does not matter to the importer
        ordered = dict(sorted(entries.items(), key=lambda kv: -kv[1]["lastMessageDate"]))
        rows = {"chat.ChatSessionStore.index": json.dumps({"version": 1, "entries": ordered}, ensure_ascii=False)}
        if w >= 0:
            rows.update(ITEMTABLE_WORKSPACE)
            _create_db(user / "workspaceStorage" / ws_list[w]["id"] / "state.vscdb", rows)
        else:
            rows["interactive.sessions"] = "[]"
            _create_db(user / "globalStorage" / "state.vscdb", rows)
    shapes = Counter(p.shape for p in planned)
    info = {
        **wanted,
        "workspace_list": ws_list,
        "sessions_list": [asdict(p) for p in planned],
        "counts": {"sessions": len(planned), "workspace_sessions": sessions, "empty_window_sessions": empty_window,
                   "json": shapes["json"], "jsonl": shapes["jsonl"], "requests": sum(p.requests for p in planned),
                   "orphaned_workspaces": sum(w["orphaned"] for w in ws_list),
                   "orphaned": sum(bool(p.orphan) for p in planned),
                   "folder_missing": sum("folder-missing" in p.orphan for p in planned),
                   "not_indexed": sum("not-indexed" in p.orphan for p in planned),
                   "stale_index_entries": stale},
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    info["bytes"] = _source_bytes(user)
    marker.write_bytes(orjson.dumps(info))
    say(f"built {len(planned)} sessions ({info['bytes']['session_files'] / MB:.0f} MB of session files) in {workspaces} workspaces "
        f"+ the empty-window store in {info['build_seconds']}s")
    return info


# --- measuring and checking -----------------------------------------------------------------


@dataclass
class Result:
    name: str
    what: str
    seconds: list[float] = field(default_factory=list)
    rss_mib: float | None = None  # the highest peak over the runs
    exit: int | None = None
    sessions: int | None = None
    sessions_per_s: float | None = None
    mb_per_s: float | None = None

    @property
    def best(self) -> float:
        return min(self.seconds)


def check_import(doc: dict | None, code: int, status: str, planned: list[dict], label: str, projects: dict[int, str | None]) -> tuple[list[str], dict]:
    """Problems with one import run's JSON document, and a summary of it."""
    if doc is None:
        return [f"{label}: no JSON document on stdout (exit {code})"], {}
    problems: list[str] = []
    if code != 0 or doc.get("exit") != 0:
        codes = Counter(f.get("code") for f in doc.get("findings", []))
        problems.append(f"{label}: exit {code} (document says {doc.get('exit')}); findings {dict(codes.most_common(8))}")
    sessions = doc.get("sessions") or []
    got = {s.get("id"): s for s in sessions}
    want = {f"vscode-{p['sid']}": p for p in planned}
    if len(sessions) != len(got):
        problems.append(f"{label}: {len(sessions) - len(got)} session ids reported twice")
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    if missing or extra:
        problems.append(f"{label}: {len(got)} sessions for {len(want)} built; missing {len(missing)} {missing[:3]}, unexpected {len(extra)} {extra[:3]}")
    statuses = Counter(s.get("status") for s in sessions)
    if set(statuses) - {status}:
        problems.append(f"{label}: statuses {dict(statuses)}, expected all {status!r}")
    wrong_orphan, wrong_records, wrong_project = [], [], []
    for sid, s in got.items():
        p = want.get(sid)
        if p is None:
            continue
        if bool(s.get("orphaned")) != bool(p["orphan"]) or sorted(s.get("orphan") or []) != p["orphan"]:
            wrong_orphan.append(f"{sid}: {s.get('orphan')} (built {p['orphan']})")
        if s.get("records") != 2 * p["requests"]:
            wrong_records.append(f"{sid}: {s.get('records')} records for {p['requests']} requests")
        if s.get("project") != projects[p["store"]]:
            wrong_project.append(f"{sid}: project {s.get('project')!r}, built {projects[p['store']]!r}")
    for what, wrong in (("orphan status", wrong_orphan), ("record count", wrong_records), ("project", wrong_project)):
        if wrong:
            problems.append(f"{label}: {len(wrong)} sessions with the wrong {what}, e.g. {wrong[:2]}")
    orphaned = sum(bool(s.get("orphaned")) for s in sessions)
    built_orphans = sum(bool(p["orphan"]) for p in planned)
    if orphaned != built_orphans:
        problems.append(f"{label}: {orphaned} orphaned sessions reported, {built_orphans} built")
    new = sum(s.get("new_records") or 0 for s in sessions)
    if status == "unchanged" and new:
        problems.append(f"{label}: {new} new records on a re-import of an unchanged tree")
    if doc.get("source") not in (None, "vscode"):
        problems.append(f"{label}: source {doc.get('source')!r}")
    reasons = Counter(r for s in sessions for r in s.get("orphan") or [])
    summary = {"sessions": len(sessions), "statuses": dict(statuses), "records": sum(s.get("records") or 0 for s in sessions),
               "new_records": new, "orphaned_sessions": orphaned, "orphan_reasons": dict(reasons),
               "findings": dict(Counter(f.get("code") for f in doc.get("findings", [])).most_common())}
    return problems, summary


def _measure(result: Result, run, sessions: int) -> None:
    result.seconds.append(run.wall)
    result.exit = run.code
    if run.rss_mib:
        result.rss_mib = max(result.rss_mib or 0, round(run.rss_mib, 1))
    result.sessions = sessions


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspaces", type=int, default=500, help="workspaceStorage folders (default 500)")
    parser.add_argument("--sessions", type=int, default=5_000, help="sessions spread over the workspaces (default 5000)")
    parser.add_argument("--empty-window", type=int, default=None, help="empty-window sessions (default: --sessions / 100)")
    parser.add_argument("--dir", type=Path, help="build (or reuse) the tree in DIR/User and keep it; stores go to DIR/store, DIR/store-dry")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder / the import stores and print where")
    parser.add_argument("--seed", type=int, default=20251215)
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the best time is kept (default 1)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document (progress goes to stderr)")
    args = parser.parse_args(argv)
    if args.workspaces < 1 or args.sessions < 0:
        parser.error("--workspaces must be at least 1 and --sessions at least 0")
    empty_window = args.empty_window if args.empty_window is not None else max(1, round(args.sessions / 100))

    log = sys.stderr if args.json else sys.stdout

    def say(message: str) -> None:
        print(message, file=log, flush=True)

    if args.dir:
        base, temp = args.dir.resolve(), None
        base.mkdir(parents=True, exist_ok=True)
    else:
        temp = base = Path(tempfile.mkdtemp(prefix="levelsess-bench-vscode-", dir="/tmp"))
    store, dry_store = base / "store", base / "store-dry"
    problems: list[str] = []
    try:
        info = build_source(base, args.workspaces, args.sessions, empty_window, args.seed, say)
        user = base / "User"
        planned = info["sessions_list"]
        projects: dict[int, str | None] = {-1: None, **{w: ws["project"] for w, ws in enumerate(info["workspace_list"])}}
        size = info["bytes"]["total"]
        warm([p for p in user.rglob("*") if p.is_file()])
        say(f"tree: {len(planned)} sessions, {size / MB:.1f} MB in {info['bytes']['files']} files, page cache warmed")
        cli = cli_command()
        base_cmd = ["import", "--from", "vscode", "--source", str(user)]
        results = {
            "import": Result("import", "levelsess import --from vscode --source DIR/User --store EMPTY --json (under probe)"),
            "re-import": Result("re-import", "the same, again on that store: every session unchanged"),
            "orphans-dry": Result("orphans-dry", "import ... --orphans-only --dry-run --json, on another empty store"),
        }
        verified: dict = {}
        orphans = [p for p in planned if p["orphan"]]
        for n in range(args.repeat):
            _fresh(store)
            os.sync()
            say(f"levelsess import, run {n + 1}/{args.repeat} ...")
            run = run_probed([*base_cmd, "--store", str(store), "--json"])
            _measure(results["import"], run, len(planned))
            found, verified["import"] = check_import(run.doc, run.code, "created", planned, "import", projects)
            if found and run.stderr.strip():
                found.append(f"import stderr: {run.stderr.strip()[-600:]}")
            problems += found
            say(f"levelsess import again (re-import), run {n + 1}/{args.repeat} ...")
            run = run_probed([*base_cmd, "--store", str(store), "--json"])
            _measure(results["re-import"], run, len(planned))
            found, verified["re-import"] = check_import(run.doc, run.code, "unchanged", planned, "re-import", projects)
            problems += found
            say(f"levelsess import --orphans-only --dry-run, run {n + 1}/{args.repeat} ...")
            _fresh(dry_store)
            run = run_probed([*base_cmd, "--store", str(dry_store), "--orphans-only", "--dry-run", "--json"])
            _measure(results["orphans-dry"], run, len(orphans))
            found, verified["orphans-dry"] = check_import(run.doc, run.code, "created", orphans, "orphans-only dry run", projects)
            if run.doc is not None and run.doc.get("dry_run") is not True:
                found.append("orphans-only dry run: the document does not say dry_run")
            left = [p for p in dry_store.rglob("*")]
            if left:
                found.append(f"orphans-only dry run wrote {len(left)} paths into its store, e.g. {left[0]}")
            problems += found
        say("levelsess fsck --store STORE ...")
        found, verified["fsck"] = run_fsck(cli, store)
        problems += found
        journals = list(store.rglob("*.jsonl"))
        verified["store_bytes"] = sum(p.stat().st_size for p in journals)
        verified["store_journals"] = len(journals)
        for result in results.values():
            if result.seconds:
                result.sessions_per_s = round(result.sessions / result.best, 1)
                result.mb_per_s = round(size / MB / result.best, 1)

        doc = {
            "tree": {"path": str(user), "seed": args.seed, "workspaces": args.workspaces, **info["counts"], "bytes": info["bytes"],
                     "build_seconds": info.get("build_seconds")},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                        "orjson": orjson.__version__, "platform": platform.platform(), "cli": cli},
            "note": f"page cache warm; best of {args.repeat}; wall time of a subprocess (interpreter start-up included); "
                    "MB/s = bytes of every file under User / time (MB = 10**6); sessions/s = sessions the run reports / time "
                    "(orphans only for the dry run); peak RSS = VmHWM of that process (MiB)",
            "results": [{**asdict(r), "best": round(r.best, 3) if r.seconds else None, "seconds": [round(s, 3) for s in r.seconds]}
                        for r in results.values()],
            "verified": verified,
            "problems": problems,
        }
        if args.json:
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            _print_report(doc, list(results.values()))
        if args.keep:
            say(f"kept {base} (import store in {store})")
        return 1 if problems else 0
    finally:
        if temp and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)
        elif not args.keep:  # --dir: keep the tree, drop the stores
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(dry_store, ignore_errors=True)


def _print_report(doc: dict, results: list[Result]) -> None:
    tree, machine, b = doc["tree"], doc["machine"], doc["tree"]["bytes"]
    print()
    print(f"VS Code User tree: {tree['path']}")
    print(f"  {tree['sessions']} sessions ({tree['workspace_sessions']} in {tree['workspaces']} workspaces, "
          f"{tree['empty_window_sessions']} empty-window): {tree['json']} .json, {tree['jsonl']} .jsonl; {tree['requests']} requests; "
          f"seed {tree['seed']}, built in {tree['build_seconds']}s")
    print(f"  {b['total'] / MB:.1f} MB in {b['files']} files: session files {b['session_files'] / MB:.1f} MB, "
          f"state.vscdb {b['state_vscdb'] / MB:.1f} MB, other {b['other'] / MB:.2f} MB")
    print(f"  orphaned by construction: {tree['orphaned']} sessions ({tree['folder_missing']} in {tree['orphaned_workspaces']} "
          f"missing-folder workspaces, {tree['not_indexed']} not indexed); {tree['stale_index_entries']} index entries without a file")
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, SQLite {machine['sqlite']}, orjson {machine['orjson']}, {machine['platform']}")
    print(doc["note"])
    print()
    header = f"{'run':<12} {'seconds':>9} {'sessions/s':>11} {'MB/s':>8} {'peak RSS MiB':>13}  what"
    print(header)
    print("-" * (len(header) + 70))
    for r in results:
        if not r.seconds:
            continue
        rss = f"{r.rss_mib:.0f}" if r.rss_mib is not None else "-"
        print(f"{r.name:<12} {r.best:>9.2f} {r.sessions_per_s:>11.1f} {r.mb_per_s:>8.1f} {rss:>13}  {r.what}")
    verified = doc["verified"]
    print()
    for label in ("import", "re-import", "orphans-dry"):
        v = verified.get(label)
        if v:
            print(f"{label}: {v['sessions']} sessions {v['statuses']}, {v['records']} records ({v['new_records']} new), "
                  f"{v['orphaned_sessions']} orphaned {v['orphan_reasons']}, findings {v['findings'] or 'none'}")
    f = verified.get("fsck")
    if f:
        print(f"fsck --store: exit {f['exit']} in {f['seconds']}s, {verified['store_journals']} journals, "
              f"{verified['store_bytes'] / MB:.1f} MB ({verified['store_bytes'] / max(1, b['session_files']):.2f}x the session files), "
              f"findings {f['findings'] or 'none'}")
    print()
    if doc["problems"]:
        print("PROBLEMS:")
        for problem in doc["problems"]:
            print(f"  - {problem}")
    else:
        print("verified: ids, statuses, records (2 per request), orphan sets and reasons, projects, re-import unchanged, "
              "dry run wrote nothing, fsck exit 0")


if __name__ == "__main__":
    sys.exit(main())
