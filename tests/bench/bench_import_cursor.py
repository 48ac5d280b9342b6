#!/usr/bin/env python
"""Cursor import benchmark (DESIGN.md §5, §8; SOURCES.md §2.7) - a standalone script, not a pytest test.

    python tests/bench/bench_import_cursor.py [--size-mb 1024] [--dir DIR] [--repeat 1] [--settle 90] [--json]

Builds (seeded, so every run makes the same bytes) a synthetic Cursor ``User`` folder in the
modern "split" era (Cursor >= 0.50, SOURCES.md §2.2-§2.5):

  User/globalStorage/state.vscdb   ItemTable + cursorDiskKV (rollback journal, no -wal), holding
      composerData:<cid>           _v 10, ordered fullConversationHeadersOnly, conversationMap {}
      bubbleId:<cid>:<bid>         one row per message, made from the real Dec-2025 bubbles in
                                   shared/fixtures/cursor/bubbles-2025-12.jsonl (same field sets;
                                   bubbleId, text, createdAt, tool result, ... replaced): user
                                   (type 1), assistant text, tool (capabilityType 15) and
                                   thinking (capabilityType 30) bubbles, about 4 KB on average
      ~2% orphan bubble rows       under a composer's prefix, referenced by no header
      checkpointId:<cid>:<id>      one per user bubble (its checkpointId)
      agentKv:blob:<sha256>        filler, 0.3-6 KB each (a tenth of them binary BLOBs)
  User/workspaceStorage/<wsid>/    ~20 workspace DBs (ItemTable composer.composerData heads) +
                                   workspace.json {"folder": "file:///home/bench/project-N"}

At --size-mb 1024 that is the DESIGN §8 / SOURCES §2.7 mix: ~2,000 composers of ~100 bubbles
(~4.2 KB mean), 3 composers of 5,000 bubbles and ~100k agentKv rows (~1.5 KB mean), about 1.1 GB of
values; every count scales linearly with --size-mb (50 makes a quick DB in a second).  The file
itself is ~1.4x --size-mb: 4 KiB SQLite pages hold only one or two 2-4 KB rows each, so about a
quarter of every table leaf page stays unused (as in real Cursor DBs, which use the same page
size); pass --size-mb 720 for a ~1 GB file.  Rows are inserted in random key order in large
transactions.  Then, with the page cache warm,
it measures (best of --repeat):

  bare        the floor any reader pays: SELECT key, value FROM cursorDiskKV streamed
              (fetchmany, values as bytes), orjson.loads of every composerData:* and bubbleId:*
              value, nothing kept; a subprocess like the others (start-up included).  The
              import's time is printed as a ratio to it (DESIGN §8: a figure beside its
              baseline from the same run; issue 27 asks for at most 2x)
  naive       a load-everything reader like the prior tools (saharmor/cursor-chat-view):
              SELECT key, value FROM cursorDiskKV + fetchall(), orjson-parse every composerData
              and bubble row into dicts kept in memory, group by composer, order by headers,
              count user/assistant messages; a subprocess, so wall time and peak RSS are its own
  import      `levelsess import --from cursor --source DIR/User --store EMPTY --json` under
              tests/bench/probe.py's PROBE (wall time, start-up included; VmHWM peak RSS)
  re-import   the same command again on that store: nothing new to find
  written-to  the same again after the DB's mtime moved (Cursor writes its database all day: a
              night's import reads every chat again), twice, the second timed: the first reads
              every journal to find it whole, the nights after it only a changed chat's

and verifies the import: one session per composer (status "created", then "unchanged"), the
records total at least the referenced bubbles that have content, nothing new on the re-import,
and `levelsess fsck --store STORE` exits 0 (warnings such as `oversize` are fine).  If `import`
does not exist yet (exit 16, "No such command"), it says so and reports the naive reader only.
MB is 10**6 bytes, MiB 2**20.

Before the timed runs it measures what creating a file costs here, and waits (up to --settle
seconds) while that is several times a quiet file system's (tests/bench/creates.py: on ext4 without
a journal, for minutes after the last bench's stores were removed): the import creates a journal a
chat, the bare scan none.  The report says what a create cost, and when it was slow anyway.

--dir DIR builds the DB in DIR (DIR/User) and keeps it; a later run with the same --size-mb and
--seed reuses it.  Each run's import store goes to DIR/store-N (a new folder each run; its cache, the
import's memos, to DIR/cache-N: XDG_CACHE_HOME) and they are
removed at the end unless --keep.  Without --dir everything goes to a temp folder under /tmp,
removed at the end unless --keep.  Disk: about 1.5x --size-mb for the DB plus ~1.5x for each run's
imported store.

The file name has no ``test_`` prefix on purpose: pytest does not collect or import it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gc
import hashlib
import json
import math
import os
import platform
import random
import shutil
import sqlite3
import string
import subprocess
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
from creates import SLOW_CREATE_US, settle, slow_note  # noqa: E402 - beside this script too
from probe import PROBE  # noqa: E402 - the probe lives beside this script

GENERATOR_VERSION = 1
MB = 1_000_000
MIB = 1 << 20
MARKER = "bench-cursor.json"
#: shared/ beside the repo (a clone in /work/main, or a worktree one level deeper: the nearest wins)
FIXTURE = next((p / "shared" / "fixtures" / "cursor" / "bubbles-2025-12.jsonl" for p in Path(__file__).resolve().parents[3:]
                if (p / "shared" / "fixtures" / "cursor" / "bubbles-2025-12.jsonl").is_file()),
               Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cursor" / "bubbles-2025-12.jsonl")

# DESIGN §8 at 1024 MB; everything but the workspace count scales linearly with --size-mb
BASE_MB = 1024
COMPOSERS = 2_000
BUBBLES_PER_COMPOSER = (20, 180)  # uniform: mean 100
BIG_COMPOSERS, BIG_BUBBLES = 3, 5_000
AGENT_KV = 100_000
WORKSPACES = 20
ORPHAN_RATE = 0.02
ASSISTANT_KINDS = (("tool", 62), ("thinking", 17), ("text", 21))  # the fixture: 77 / 20 / 21
MODEL = "claude-4-sonnet"
EPOCH_MS = int(datetime(2025, 9, 15, tzinfo=timezone.utc).timestamp() * 1000)  # ISO createdAt era
SPAN_MS = 90 * 86_400_000
TX_BYTES = 128 * MB  # commit every ~128 MB: large transactions

WORDS = (
    "the of and to in is that for it as with on be this by are from at or an function value "
    "return error test file class method request response user session journal record line "
    "parse check repair index cache lock write read buffer stream offset byte json schema "
    "refund payment order invoice customer account token model tool result output input path "
    "config option flag default module package import export async await promise callback "
    "should would could maybe because however therefore instead although unless while until "
    "let me look at the failing test first then fix the handler and rerun the suite "
    "I think the problem is that we never flush before rename so a crash loses the tail"
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
    '{{"compilerOptions": {{"strict": true, "target": "es2022", "paths": {{"@/*": ["src/*"]}}}}}}',
    "  --> src/{n}.rs:42:17 | error[E0502]: cannot borrow `self` as mutable",
    "+    if tail and tail[-1:] != b'\\n':   # diff line",
    "-    os.rename(tmp, path)",
]
ITEMTABLE_GLOBAL = {  # a few harmless UI keys, as any global DB has (never cursorAuth/*)
    "workbench.activity.pinnedViewlets2": '[{"id":"workbench.view.explorer","pinned":true,"visible":true,"order":0}]',
    "workbench.panel.markers.hidden": '[{"id":"workbench.panel.markers.view","isHidden":false}]',
    "interactive.sessions": "[]",
    "colorThemeData": '{"id":"vs-dark vscode-theme-defaults-themes-dark_plus-json","label":"Dark+"}',
    "memento/workbench.editors.files.textFileEditor": '{"textEditorViewState":[]}',
    "telemetry.firstSessionDate": '"Mon, 15 Sep 2025 08:00:00 GMT"',
}


# --- the source DB ------------------------------------------------------------------------


def _text_pool(rng: random.Random, chars: int) -> str:
    """A few MB of mixed prose, code (quotes, backslashes, tabs, newlines) and unicode."""
    parts: list[str] = []
    size = 0
    while size < chars:
        roll = rng.random()
        if roll < 0.55:
            words = rng.choices(WORDS, k=rng.randint(20, 120))
            for i in range(0, len(words), 9):
                if rng.random() < 0.25:
                    words[i] = rng.choice(UNICODE_WORDS)
            piece = " ".join(words).capitalize() + ".\n"
        elif roll < 0.9:
            ident = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12)))
            piece = "```\n" + "\n".join(rng.choice(CODE_LINES).format(n=ident) for _ in range(rng.randint(3, 25))) + "\n```\n"
        else:
            piece = " ".join(rng.choices(UNICODE_WORDS, k=rng.randint(5, 40))) + "\n\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _path_of_longest_string(value, path=()) -> tuple[tuple, int]:
    """(path, length) of the longest string leaf of a parsed JSON value."""
    best: tuple[tuple, int] = ((), -1)
    if isinstance(value, str):
        return path, len(value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found = _path_of_longest_string(child, (*path, key))
        if found[1] > best[1]:
            best = found
    return best


def _lexical(text: str) -> str:
    """Cursor's richText for a plain text: one Lexical paragraph per line (SOURCES §2.5)."""
    paragraphs = [{"children": [{"detail": 0, "format": 0, "mode": "normal", "style": "", "text": line, "type": "text", "version": 1}] if line else [],
                   "direction": "ltr", "format": "", "indent": 0, "type": "paragraph", "version": 1} for line in text.split("\n")]
    return orjson.dumps({"root": {"children": paragraphs, "direction": "ltr", "format": "", "indent": 0, "type": "root", "version": 1}}).decode()


@dataclass
class Plan:
    """One composer: ids, times and the (bubbleId, type, kind, turn) of each header and orphan."""
    cid: str
    name: str
    created: int
    gap: int  # ms between bubbles
    workspace: int
    headers: list[tuple[str, int, str, int]]
    orphans: list[tuple[str, int, str, int, int]]  # + index of the header it shadows
    turns: int
    big: bool = False

    @property
    def updated(self) -> int:
        return self.created + self.gap * (len(self.headers) + 1)


class Generator:
    """Seeded generator of the rows of a split-era Cursor global DB, from real fixture bubbles."""

    def __init__(self, seed: int, fixture: Path) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.pool = _text_pool(self.rng, 4_000_000)
        self.templates: dict[str, list[dict]] = {"user": [], "text": [], "tool": [], "thinking": []}
        self.results: list[tuple[bytes, tuple] | None] = []  # per tool template: parsed result + path of its longest string
        for line in fixture.read_bytes().splitlines():
            if not line.strip():
                continue
            value = orjson.loads(line)["value"]
            bubble = orjson.loads(value) if isinstance(value, (str, bytes)) else value
            cap = bubble.get("capabilityType")
            kind = "user" if bubble.get("type") == 1 else {15: "tool", 30: "thinking"}.get(cap, "text")
            if kind == "tool" and not bubble.get("toolFormerData", {}).get("name"):
                continue
            self.templates[kind].append(bubble)
        missing = [k for k, v in self.templates.items() if not v]
        if missing:
            raise SystemExit(f"{fixture}: no template bubble of kind {missing}")
        self.slots = {id(bubble): slot for slot, bubble in enumerate(self.templates["tool"])}
        for bubble in self.templates["tool"]:
            result = bubble["toolFormerData"].get("result")
            parsed = None
            if isinstance(result, str):
                try:
                    parsed = orjson.loads(result)
                except orjson.JSONDecodeError:
                    parsed = None
            if isinstance(parsed, (dict, list)):
                path, _ = _path_of_longest_string(parsed)
                self.results.append((orjson.dumps(parsed), path) if path else None)
            else:
                self.results.append(None)

    # - plan -

    def uuid4(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def plan(self, n_bubbles: int, workspaces: int, big: bool) -> Plan:
        rng = self.rng
        headers: list[tuple[str, int, str, int]] = []
        turn = 0
        kinds, weights = zip(*ASSISTANT_KINDS)
        while len(headers) < n_bubbles:
            headers.append((self.uuid4(), 1, "user", turn))
            for _ in range(rng.randint(1, 13)):
                headers.append((self.uuid4(), 2, rng.choices(kinds, weights)[0], turn))
            headers.append((self.uuid4(), 2, "final", turn))  # the turn-final text bubble, with tokenCount
            turn += 1
        orphans = [(self.uuid4(), h[1], h[2], h[3], j) for j, h in enumerate(headers) if rng.random() < ORPHAN_RATE]
        name = " ".join(rng.choices(WORDS, k=rng.randint(2, 6))).capitalize()
        created = EPOCH_MS + rng.randrange(SPAN_MS)
        return Plan(self.uuid4(), name, created, rng.randint(2_000, 60_000), rng.randrange(workspaces), headers, orphans, turn, big)

    # - values -

    def text(self, low: int, high: int) -> str:
        n = int(math.exp(self.rng.uniform(math.log(low), math.log(high))))
        start = self.rng.randrange(0, len(self.pool) - n)
        return self.pool[start : start + n]

    def derived(self, *parts: object) -> str:
        """A stable uuid for (seed, parts): request and checkpoint ids shared by several rows."""
        return str(uuid.UUID(bytes=hashlib.md5(repr((self.seed, *parts)).encode()).digest(), version=4))

    def composer_data(self, plan: Plan) -> dict:
        return {"_v": 10, "composerId": plan.cid, "name": plan.name, "createdAt": plan.created, "lastUpdatedAt": plan.updated,
                "status": "completed", "text": "", "richText": "", "hasLoaded": True, "unifiedMode": "agent",
                "fullConversationHeadersOnly": [{"bubbleId": bid, "type": btype} for bid, btype, _, _ in plan.headers],
                "conversationMap": {}, "modelConfig": {"modelName": MODEL, "maxMode": False}}

    def bubble(self, plan: Plan, bid: str, kind: str, turn: int, index: int, project: str) -> dict:
        """A bubble modeled on a random real one of its kind; shallow copy, replaced fields only."""
        rng = self.rng
        at = plan.created + plan.gap * (index + 1) + rng.randrange(plan.gap // 2)
        template = rng.choice(self.templates["text" if kind == "final" else kind])
        out = dict(template)
        out["bubbleId"] = bid
        out["createdAt"] = _iso(at)
        if "serverBubbleId" in out:
            out["serverBubbleId"] = self.uuid4()
        if "usageUuid" in out:
            out["usageUuid"] = self.derived("request", plan.cid, turn)
        out["requestId"] = self.derived("request", plan.cid, turn)
        out["tokenCount"] = ({"inputTokens": rng.randint(2_000, 180_000), "outputTokens": rng.randint(50, 8_000)}
                             if kind == "final" else {"inputTokens": 0, "outputTokens": 0})
        if kind == "user":
            text = self.text(20, 1_200).strip() or "go on"
            out["text"] = text
            out["richText"] = _lexical(text)
            out["checkpointId"] = self.derived("checkpoint", plan.cid, turn)
            out["workspaceUris"] = ["file://" + project]
            out["lastTerminalCwd"] = project
            out["workspaceProjectDir"] = "/home/bench/.cursor/projects/" + project.strip("/").replace("/", "-")
            out["modelInfo"] = {"modelName": MODEL}
            return out
        if rng.random() < 0.25:
            out["timingInfo"] = {"clientStartTime": rng.uniform(1_000, 900_000), "clientRpcSendTime": at - rng.randint(200, 5_000),
                                 "clientSettleTime": at + rng.randint(100, 30_000), "clientEndTime": at + rng.randint(100, 30_000)}
        if kind in ("text", "final"):
            out["text"] = self.text(60, 3_000).strip() or "Done."
        elif kind == "thinking":
            out["text"] = ""
            signature = base64.urlsafe_b64encode(rng.randbytes(rng.randint(600, 1_400))).decode().rstrip("=")
            out["thinking"] = {"text": self.text(60, 1_500) if rng.random() < 0.4 else "", "signature": signature}
            out["thinkingDurationMs"] = rng.randint(200, 30_000)
        else:  # tool
            tool = dict(template["toolFormerData"])
            tool["toolCallId"] = "tool_" + self.uuid4()
            tool["modelCallId"] = self.uuid4()
            shape = self.results[self.slots[id(template)]]
            if shape is not None and tool.get("status") == "completed":
                parsed, path = orjson.loads(shape[0]), shape[1]
                holder = parsed
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = self.text(40, 4_000)
                tool["result"] = orjson.dumps(parsed).decode()
            out["toolFormerData"] = tool
            out["text"] = ""
        return out

    def checkpoint(self, project: str) -> dict:
        rng = self.rng
        files = []
        for _ in range(rng.randint(0, 3)):
            path = f"{project}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
            start = rng.randint(1, 400)
            files.append({"uri": {"$mid": 1, "fsPath": path, "external": "file://" + path, "path": path, "scheme": "file"},
                          "originalModelDiffWrtV0": [{"original": {"startLineNumber": start, "endLineNumberExclusive": start + rng.randint(0, 40)},
                                                      "modified": self.text(20, 400).split("\n")}]})
        return {"files": files, "nonExistentFiles": [], "newlyCreatedFolders": [], "activeInlineDiffs": [],
                "inlineDiffNewlyCreatedResources": {"files": [], "folders": []}}

    def agent_kv(self, n: int) -> tuple[str, str | bytes]:
        rng = self.rng
        key = "agentKv:blob:" + hashlib.sha256(f"{self.seed}:{n}".encode()).hexdigest()
        if rng.random() < 0.1:
            return key, rng.randbytes(int(math.exp(rng.uniform(math.log(300), math.log(5_000)))))
        body = {"role": rng.choice(["assistant", "tool", "user"]), "id": self.uuid4(),
                "content": [{"type": "text", "text": self.text(150, 4_500)}], "providerOptions": {"cursor": {"modelName": MODEL}}}
        return key, orjson.dumps(body).decode()


def scaled(size_mb: int) -> dict:
    f = size_mb / BASE_MB
    return {"composers": max(5, round(COMPOSERS * f)), "big_composers": BIG_COMPOSERS,
            "big_bubbles": max(100, round(BIG_BUBBLES * f)), "agent_kv": max(50, round(AGENT_KV * f)),
            "workspaces": min(WORKSPACES, max(2, round(COMPOSERS * f) // 4))}


def _create_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        PRAGMA journal_mode = OFF;  -- build only (the file is renamed into place when complete); not persistent
        PRAGMA synchronous = OFF;
        PRAGMA cache_size = -262144;
        PRAGMA user_version = 1;
        CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
        CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
    """)
    return conn


def build_source(base: Path, size_mb: int, seed: int, fixture: Path, say) -> dict:
    """Write the synthetic Cursor User folder under ``base`` (or reuse it); return its description."""
    marker = base / MARKER
    user = base / "User"
    fixture_sha = hashlib.sha256(fixture.read_bytes()).hexdigest()[:16]
    wanted = {"generator": GENERATOR_VERSION, "size_mb": size_mb, "seed": seed, "fixture_sha": fixture_sha}
    if marker.exists():
        info = orjson.loads(marker.read_bytes())
        if {k: info.get(k) for k in wanted} == wanted and (user / "globalStorage" / "state.vscdb").is_file():
            say(f"reusing the Cursor DB in {user}")
            return info
        raise SystemExit(f"{base} holds a different benchmark DB ({ {k: info.get(k) for k in wanted} }); pick another --dir")
    if user.exists():
        raise SystemExit(f"{user} exists but holds no benchmark DB; pick another --dir")
    started = time.perf_counter()
    counts = scaled(size_mb)
    gen = Generator(seed, fixture)
    rng = gen.rng
    plans = [gen.plan(rng.randint(*BUBBLES_PER_COMPOSER), counts["workspaces"], False) for _ in range(counts["composers"])]
    plans += [gen.plan(counts["big_bubbles"], counts["workspaces"], True) for _ in range(counts["big_composers"])]
    rng.shuffle(plans)  # the big ones anywhere
    ws_ids = [hashlib.md5(f"{seed}:ws:{w}".encode()).hexdigest() for w in range(counts["workspaces"])]
    projects = [f"/home/bench/project-{w + 1}" for w in range(counts["workspaces"])]

    # every row of cursorDiskKV, as (family, composer, index); shuffled: random key order
    specs: list[tuple[str, int, int]] = []
    for ci, plan in enumerate(plans):
        specs.append(("composerData", ci, 0))
        specs += [("bubble", ci, j) for j in range(len(plan.headers))]
        specs += [("orphan", ci, k) for k in range(len(plan.orphans))]
        specs += [("checkpointId", ci, t) for t in range(plan.turns)]
    specs += [("agentKv", -1, n) for n in range(counts["agent_kv"])]
    rng.shuffle(specs)

    folder = user / "globalStorage"
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "state.vscdb"
    tmp = folder / "state.vscdb.bench-tmp"
    tmp.unlink(missing_ok=True)
    conn = _create_db(tmp)
    conn.executemany("INSERT INTO ItemTable VALUES (?, ?)", list(ITEMTABLE_GLOBAL.items()))
    families: dict[str, Counter] = {f: Counter() for f in ("composerData", "bubbleId", "checkpointId", "agentKv")}
    kinds: Counter = Counter()
    with_content = users = assistants = 0
    batch: list[tuple[str, str | bytes]] = []
    in_tx = written = 0
    step = max(1, len(specs) // 10)
    conn.execute("BEGIN")
    for done, (family, ci, index) in enumerate(specs, 1):
        plan = plans[ci] if ci >= 0 else None
        if family == "composerData":
            key, value = f"composerData:{plan.cid}", orjson.dumps(gen.composer_data(plan)).decode()
        elif family in ("bubble", "orphan"):
            if family == "bubble":
                bid, _, kind, turn = plan.headers[index]
                position = index
            else:
                bid, _, kind, turn, position = plan.orphans[index]
            bubble = gen.bubble(plan, bid, kind, turn, position, projects[plan.workspace])
            key, value = f"bubbleId:{plan.cid}:{bid}", orjson.dumps(bubble).decode()
            kinds[("orphan " if family == "orphan" else "") + kind] += 1
            if family == "bubble":
                has = bool(bubble.get("text")) or bool(bubble.get("toolFormerData", {}).get("name")) or bool((bubble.get("thinking") or {}).get("text"))
                with_content += has
                users += bubble["type"] == 1
                assistants += bubble["type"] == 2
            family = "bubbleId"
        elif family == "checkpointId":
            key = f"checkpointId:{plan.cid}:{gen.derived('checkpoint', plan.cid, index)}"
            value = orjson.dumps(gen.checkpoint(projects[plan.workspace])).decode()
        else:
            key, value = gen.agent_kv(index)
        size = len(value) if isinstance(value, bytes) else len(value.encode())
        families[family]["rows"] += 1
        families[family]["bytes"] += size
        batch.append((key, value))
        in_tx += size
        written += size
        if len(batch) >= 5_000:
            conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", batch)
            batch.clear()
        if in_tx >= TX_BYTES:
            conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", batch)
            batch.clear()
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            in_tx = 0
        if done % step == 0:
            say(f"  {done * 100 // len(specs):3d}%  {done} rows, {written / MB:.0f} MB of values, {time.perf_counter() - started:.0f}s")
    conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", batch)
    conn.execute("COMMIT")
    conn.close()
    os.replace(tmp, db)

    # workspace DBs: heads of their composers (0.43-2.x, SOURCES §2.3) + workspace.json
    for w, wsid in enumerate(ws_ids):
        folder = user / "workspaceStorage" / wsid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workspace.json").write_text(json.dumps({"folder": "file://" + projects[w]}))
        mine = sorted((p for p in plans if p.workspace == w), key=lambda p: -p.updated)
        heads = [{"type": "head", "composerId": p.cid, "name": p.name, "createdAt": p.created, "lastUpdatedAt": p.updated,
                  "unifiedMode": "agent", "forceMode": "edit", "hasUnreadMessages": False, "isArchived": False} for p in mine]
        path = folder / "state.vscdb"
        path.unlink(missing_ok=True)
        conn = _create_db(path)
        rows = {"composer.composerData": {"allComposers": heads, "selectedComposerIds": [p.cid for p in mine[:1]],
                                          "lastFocusedComposerIds": [p.cid for p in mine[:1]], "hasMigratedComposerData": True},
                "aiService.generations": [], "aiService.prompts": [], "interactive.sessions": []}
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO ItemTable VALUES (?, ?)", [(k, json.dumps(v)) for k, v in rows.items()])
        conn.execute("COMMIT")
        conn.close()

    orphans = sum(len(p.orphans) for p in plans)
    referenced = sum(len(p.headers) for p in plans)
    info = {
        **wanted,
        "composers": len(plans), "big_composers": counts["big_composers"], "big_bubbles": counts["big_bubbles"],
        "workspaces": counts["workspaces"],
        "families": {f: dict(c) for f, c in families.items()},
        "bubbles": {"rows": referenced + orphans, "referenced": referenced, "orphans": orphans, "with_content": with_content,
                    "users": users, "assistants": assistants, "by_kind": dict(sorted(kinds.items()))},
        "itemtable_rows": len(ITEMTABLE_GLOBAL),
        "largest_composer_bubbles": max(len(p.headers) for p in plans),
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
    say(f"built {db.stat().st_size / MB:.0f} MB ({len(specs)} cursorDiskKV rows) + {len(ws_ids)} workspace DBs in {info['build_seconds']}s")
    return info


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)


def inspect_db(db: Path, info: dict) -> dict:
    """Count each key family by range (SOURCES §1.1 rule 5) and check against the build record."""
    conn = _ro(db)
    try:
        def count(lo: str, hi: str) -> int:
            return conn.execute("SELECT count(*) FROM cursorDiskKV WHERE key >= ? AND key < ?", (lo, hi)).fetchone()[0]

        found = {"composerData": count("composerData:", "composerData;"), "bubbleId": count("bubbleId:", "bubbleId;"),
                 "checkpointId": count("checkpointId:", "checkpointId;"), "agentKv": count("agentKv:", "agentKv;")}
        total = conn.execute("SELECT count(*) FROM cursorDiskKV").fetchone()[0]
        items = conn.execute("SELECT count(*) FROM ItemTable").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        composer_ids = [k[len("composerData:"):] for (k,) in conn.execute(
            "SELECT key FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'")]
    finally:
        conn.close()
    expected = {f: c["rows"] for f, c in info["families"].items()}
    if found != expected or total != sum(expected.values()) or items != info["itemtable_rows"]:
        raise SystemExit(f"{db}: row counts {found} (total {total}, ItemTable {items}) differ from the build record {expected}; "
                         "remove the folder and rebuild")
    with open(db, "rb") as handle:
        raw = handle.read(100)
    return {"path": str(db), "bytes": db.stat().st_size, "rows": total, "itemtable_rows": items, "journal_mode": journal,
            "file_format": "wal" if raw[18:20] == b"\x02\x02" else "rollback", "wal_file": db.with_name(db.name + "-wal").exists(),
            "composer_ids": composer_ids}


def warm(paths: list[Path]) -> None:
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(16 << 20):
                pass


# --- the naive reader ---------------------------------------------------------------------

#: A load-everything reader in the style of saharmor/cursor-chat-view: one SELECT of the whole
#: table, fetchall(), every composerData and bubble parsed into dicts kept until the end.
#: orjson instead of json: the fastest version of that approach.  Writes its counts and its own
#: peak RSS (VmHWM, as probe.py) as JSON to argv[2].
NAIVE = r"""
import sys, time
started = time.perf_counter()
import sqlite3
from pathlib import Path
import orjson
db, report = Path(sys.argv[1]), sys.argv[2]
conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
rows = conn.execute("SELECT key, value FROM cursorDiskKV").fetchall()
composers, bubbles = {}, {}
for key, value in rows:
    if key.startswith("composerData:"):
        composers[key[13:]] = orjson.loads(value)
    elif key.startswith("bubbleId:"):
        _, cid, bid = key.split(":", 2)
        bubbles.setdefault(cid, {})[bid] = orjson.loads(value) if value is not None else None
users = assistants = referenced = missing = 0
conversations = {}
for cid, data in composers.items():
    mine = bubbles.get(cid, {})
    conversation = []
    for head in data.get("fullConversationHeadersOnly") or []:
        bubble = mine.get(head.get("bubbleId"))
        if bubble is None:
            missing += 1
            continue
        conversation.append(bubble)
        kind = bubble.get("type", head.get("type"))
        users += kind == 1
        assistants += kind == 2
    referenced += len(conversation)
    conversations[cid] = conversation
bubble_rows = sum(len(b) for b in bubbles.values())
seconds = time.perf_counter() - started
peak = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
if not peak:
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = peak if sys.platform == "darwin" else peak * 1024
with open(report, "wb") as out:
    out.write(orjson.dumps({"rows": len(rows), "composers": len(composers), "bubble_rows": bubble_rows, "referenced": referenced,
                            "orphans": bubble_rows - referenced, "missing": missing, "users": users, "assistants": assistants,
                            "seconds_inside": seconds, "peak_rss": peak}))
"""


#: The floor of any reader of the same rows: one streamed pass over cursorDiskKV, each composerData
#: and bubble value parsed with orjson and dropped.  Values as bytes (text_factory, as an importer
#: must: SOURCES §1.2).  Writes its counts and peak RSS (VmHWM) as JSON to argv[2].
BARE = r"""
import sys, time
started = time.perf_counter()
import sqlite3
from pathlib import Path
import orjson
db, report = Path(sys.argv[1]), sys.argv[2]
conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
conn.text_factory = bytes
cursor = conn.execute("SELECT key, value FROM cursorDiskKV")
rows = composers = bubbles = 0
loads = orjson.loads
while batch := cursor.fetchmany(512):
    rows += len(batch)
    for key, value in batch:
        if key.startswith(b"bubbleId:"):
            if value is not None:
                loads(value)
            bubbles += 1
        elif key.startswith(b"composerData:"):
            if value is not None:
                loads(value)
            composers += 1
seconds = time.perf_counter() - started
peak = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
if not peak:
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = peak if sys.platform == "darwin" else peak * 1024
with open(report, "wb") as out:
    out.write(orjson.dumps({"rows": rows, "composers": composers, "bubble_rows": bubbles, "seconds_inside": seconds, "peak_rss": peak}))
"""


@dataclass
class Result:
    name: str
    what: str
    seconds: list[float] = field(default_factory=list)
    rss_mib: float | None = None  # the highest peak over the runs
    exit: int | None = None
    mb_per_s: float | None = None
    bubbles_per_s: float | None = None
    x_bare: float | None = None  # best time / the bare scan's best time, same run

    @property
    def best(self) -> float:
        return min(self.seconds)


def run_reader(script: str, name: str, db: Path) -> tuple[float, dict]:
    """Run a reader script in a subprocess: its wall time and the counts it reports."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / f"{name}.json"
        gc.collect()
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", script, str(db), str(report)], capture_output=True, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"the {name} reader exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')[-2000:]}")
        return wall, orjson.loads(report.read_bytes())


def run_naive(db: Path) -> tuple[float, dict]:
    return run_reader(NAIVE, "naive", db)


def run_bare(db: Path) -> tuple[float, dict]:
    return run_reader(BARE, "bare", db)


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("levelsess")
    if script.exists():
        return [str(script)]
    found = shutil.which("levelsess")
    return [found] if found else [sys.executable, "-m", "toolkit.cli"]


@dataclass
class Run:
    wall: float
    code: int
    rss_mib: float | None
    doc: dict | None
    stderr: str


def run_probed(cli_args: list[str], env: dict | None = None) -> Run:
    """Run ``levelsess CLI_ARGS`` under PROBE: wall time, exit code, VmHWM, the JSON document."""
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as err:
        report = Path(folder) / "rss"
        gc.collect()
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *cli_args], stdout=subprocess.PIPE, stderr=err, check=False,
                              env=env)
        wall = time.perf_counter() - started
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        rss = int(report.read_text()) / MIB if report.exists() and report.read_text().strip() else None
    try:
        doc = orjson.loads(proc.stdout) if proc.stdout.strip() else None
    except orjson.JSONDecodeError:
        doc = None
        stderr += f"\n(stdout is not one JSON document: {proc.stdout[:300]!r})"
    return Run(wall, proc.returncode, rss, doc, stderr)


def import_missing(cli: list[str]) -> str | None:
    """None if `levelsess import --from cursor` exists, else why not."""
    proc = subprocess.run([*cli, "import", "--help"], capture_output=True, text=True, check=False)
    text = proc.stdout + proc.stderr
    if proc.returncode == 16 or "No such command" in text:
        return "`levelsess import` does not exist yet (exit {}: {})".format(proc.returncode, _last_line(text))
    if "cursor" not in text:
        return "`levelsess import --help` does not mention cursor"
    return None


def _last_line(text: str) -> str:
    lines = [line.strip(" │╭╰─") for line in text.strip().splitlines() if line.strip(" │╭╰─")]
    return lines[-1] if lines else ""


@contextlib.contextmanager
def _written_to(db: Path):
    """The database as Cursor leaves it after writing a row no chat is in: its mtime moved (its times
    put back after, so that a later run with --dir finds the DB it built)."""
    info = os.stat(db)
    os.utime(db, ns=(info.st_atime_ns, time.time_ns()))
    try:
        yield
    finally:
        os.utime(db, ns=(info.st_atime_ns, info.st_mtime_ns))


def check_import(doc: dict | None, code: int, status: str, composer_ids: list[str], info: dict, label: str) -> tuple[list[str], dict]:
    """Problems with one import run's JSON document, and a summary of it."""
    problems: list[str] = []
    if doc is None:
        return [f"{label}: no JSON document on stdout"], {}
    if code != 0 or doc.get("exit") != 0:
        codes = Counter(f.get("code") for f in doc.get("findings", []))
        problems.append(f"{label}: exit {code} (document says {doc.get('exit')}); findings {dict(codes.most_common(8))}")
    sessions = doc.get("sessions") or []
    ids = [s.get("id") for s in sessions]
    wanted = {f"cursor-{cid}" for cid in composer_ids}
    if len(sessions) != len(composer_ids) or set(ids) != wanted:
        problems.append(f"{label}: {len(sessions)} sessions ({len(set(ids) & wanted)} matching a composer) for {len(composer_ids)} composers")
    statuses = Counter(s.get("status") for s in sessions)
    if set(statuses) != {status}:
        problems.append(f"{label}: statuses {dict(statuses)}, expected all {status!r}")
    records = sum(s.get("records") or 0 for s in sessions)
    new = sum(s.get("new_records") or 0 for s in sessions) if all("new_records" in s for s in sessions) else None
    if records < info["bubbles"]["with_content"]:
        problems.append(f"{label}: {records} records in all, fewer than the {info['bubbles']['with_content']} referenced bubbles with content")
    if status == "unchanged" and new:
        problems.append(f"{label}: {new} new records on a re-import of an unchanged DB")
    if doc.get("source") not in (None, "cursor"):
        problems.append(f"{label}: source {doc.get('source')!r}")
    summary = {"sessions": len(sessions), "statuses": dict(statuses), "records": records, "new_records": new,
               "orphaned_sessions": sum(bool(s.get("orphaned")) for s in sessions),
               "findings": dict(Counter(f.get("code") for f in doc.get("findings", [])).most_common())}
    return problems, summary


def run_fsck(cli: list[str], store: Path) -> tuple[list[str], dict]:
    started = time.perf_counter()
    proc = subprocess.run([*cli, "fsck", "--store", str(store), "--json"], capture_output=True, check=False)
    wall = time.perf_counter() - started
    try:
        doc = orjson.loads(proc.stdout)
    except orjson.JSONDecodeError:
        doc = {}
    findings = Counter(f"{f.get('code')} ({f.get('severity')})" for f in doc.get("findings", []))
    summary = {"exit": proc.returncode, "seconds": round(wall, 2), "files": doc.get("files"), "records": doc.get("records"),
               "bytes": doc.get("bytes"), "findings": dict(findings.most_common())}
    problems = [] if proc.returncode == 0 else [f"fsck --store {store} exited {proc.returncode}: {dict(findings.most_common(8))} "
                                                f"{_last_line(proc.stderr.decode(errors='replace'))}"]
    return problems, summary


# --- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="DB size in MB (10**6 bytes), default 1024")
    parser.add_argument("--dir", type=Path, help="build (or reuse) the Cursor DB in DIR/User and keep it; each run's import store goes to DIR/store-N")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder / the import store and print where")
    parser.add_argument("--seed", type=int, default=20251215)
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the best time is kept (default 1)")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="the real bubbles used as templates (default: shared/fixtures/cursor/bubbles-2025-12.jsonl)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive reader")
    parser.add_argument("--settle", type=int, default=90, help="seconds to wait at most, before the timed runs, while creating a "
                        "file costs several times a quiet file system's (files removed in the last minutes: the last bench's "
                        "stores); the import creates a journal a chat (default 90)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document (progress goes to stderr)")
    args = parser.parse_args(argv)

    log = sys.stderr if args.json else sys.stdout

    def say(message: str) -> None:
        print(message, file=log, flush=True)

    if not args.fixture.is_file():
        raise SystemExit(f"{args.fixture}: fixture not found (pass --fixture)")
    if args.dir:
        base, temp = args.dir.resolve(), None
        base.mkdir(parents=True, exist_ok=True)
    else:
        temp = base = Path(tempfile.mkdtemp(prefix="levelsess-bench-cursor-", dir="/tmp"))
    store = base / "store"
    stores: list[Path] = []  # each import's (a new folder each run: see below), removed at the end
    built = (base / MARKER).exists()
    free = shutil.disk_usage(base).free
    need = int(args.size_mb * MB * ((0 if built else 1.5) + 1.6 * max(1, args.repeat)))
    if free < need:
        raise SystemExit(f"{base}: {free / MB:.0f} MB free, about {need / MB:.0f} MB needed for --size-mb {args.size_mb}")
    problems: list[str] = []
    try:
        info = build_source(base, args.size_mb, args.seed, args.fixture, say)
        user = base / "User"
        db = user / "globalStorage" / "state.vscdb"
        facts = inspect_db(db, info)
        composer_ids = facts.pop("composer_ids")
        size = facts["bytes"]
        bubble_rows = info["bubbles"]["rows"]
        warm([db, *user.glob("workspaceStorage/*/state.vscdb")])
        say(f"DB: {size / MB:.1f} MB, {facts['rows']} cursorDiskKV rows, page cache warmed")
        cli = cli_command()
        probing = base / f"creates-{os.getpid()}"  # (removed with the stores, at the end)
        stores.append(probing)
        creating, waited = settle(probing, args.settle)  # the last bench's stores removed in the last minutes: let that pass
        say(f"a file created in {creating:.0f} us" + (f" (after {waited} s waiting for it)" if waited else ""))
        results: dict[str, Result] = {}
        bare = results["bare"] = Result("bare", "SELECT key, value FROM cursorDiskKV streamed; orjson.loads each composerData + bubble value, nothing kept")
        bare_counts = None
        for n in range(args.repeat):
            say(f"bare scan + parse, run {n + 1}/{args.repeat} ...")
            wall, bare_counts = run_bare(db)
            bare.seconds.append(wall)
            bare.rss_mib = max(bare.rss_mib or 0, round(bare_counts["peak_rss"] / MIB, 1))
            bare.exit = 0
        if (bare_counts["composers"], bare_counts["bubble_rows"]) != (info["composers"], bubble_rows):
            problems.append(f"the bare scan saw {bare_counts['composers']} composers and {bare_counts['bubble_rows']} bubble rows, "
                            f"the build wrote {info['composers']} and {bubble_rows}")
        naive_counts = None
        if not args.no_naive:
            result = results["naive"] = Result("naive", "SELECT key, value FROM cursorDiskKV; fetchall(); orjson-parse composers + bubbles, all in memory")
            for n in range(args.repeat):
                say(f"naive reader, run {n + 1}/{args.repeat} ...")
                wall, naive_counts = run_naive(db)
                result.seconds.append(wall)
                result.rss_mib = max(result.rss_mib or 0, round(naive_counts["peak_rss"] / MIB, 1))
                result.exit = 0
            b = info["bubbles"]
            seen = {k: naive_counts[k] for k in ("composers", "referenced", "orphans", "users", "assistants", "missing")}
            plan = {"composers": info["composers"], "referenced": b["referenced"], "orphans": b["orphans"], "users": b["users"],
                    "assistants": b["assistants"], "missing": 0}
            if seen != plan:
                problems.append(f"the naive reader disagrees with the build: it saw {seen}, the build wrote {plan}")

        missing = import_missing(cli)
        verified: dict = {}
        if missing:
            say(f"import not measured: {missing}.  The naive reader's figures stand alone until it lands.")
        else:
            first = results["import"] = Result("import", "levelsess import --from cursor --source DIR/User --store EMPTY --json (under probe)")
            again = results["re-import"] = Result("re-import", "the same, again on that store: nothing new")
            touched = results["written-to"] = Result("written-to", "the same after Cursor wrote to the DB, no chat changed (a night's keep)")
            for n in range(args.repeat):
                # a new folder, the last run's kept until the end: an import does not follow the removal of
                # a store's files, whose inodes a file system without a journal will not give again for 30 s
                store, cache = base / f"store-{n}", base / f"cache-{n}"
                for made in (store, cache):  # (the user's cache holds an import's memo of its store's folders:
                    shutil.rmtree(made, ignore_errors=True)  # one of its own, as a first import on a new machine)
                    made.mkdir(parents=True)
                    stores.append(made)
                env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
                os.sync()
                command = ["import", "--from", "cursor", "--source", str(user), "--store", str(store), "--json"]
                say(f"levelsess import, run {n + 1}/{args.repeat} ...")
                run = run_probed(command, env)
                if run.code == 16:
                    missing = f"`levelsess import --from cursor` is a usage error (exit 16: {_last_line(run.stderr)})"
                    say(f"import not measured: {missing}")
                    del results["import"], results["re-import"], results["written-to"]
                    break
                first.seconds.append(run.wall)
                first.exit = run.code
                first.rss_mib = max(first.rss_mib or 0, round(run.rss_mib, 1)) if run.rss_mib else first.rss_mib
                found, verified["import"] = check_import(run.doc, run.code, "created", composer_ids, info, "import")
                if found and run.stderr.strip():
                    found.append(f"import stderr: {run.stderr.strip()[-600:]}")
                problems += found
                say(f"levelsess import again (re-import), run {n + 1}/{args.repeat} ...")
                run = run_probed(command, env)
                again.seconds.append(run.wall)
                again.exit = run.code
                again.rss_mib = max(again.rss_mib or 0, round(run.rss_mib, 1)) if run.rss_mib else again.rss_mib
                found, verified["re-import"] = check_import(run.doc, run.code, "unchanged", composer_ids, info, "re-import")
                problems += found
                # Cursor writes its database all day: each night's import reads every chat again.  The first
                # such import reads every journal too, to find it whole; the nights after it, only a chat's
                # whose bytes changed.  Timed: the second (the DB's times put back after each).
                for night in range(2):
                    say(f"levelsess import after the DB was written to, night {night + 1}, run {n + 1}/{args.repeat} ...")
                    with _written_to(db):
                        run = run_probed(command, env)
                    found, verified["written-to"] = check_import(run.doc, run.code, "unchanged", composer_ids, info, "written-to")
                    problems += found
                touched.seconds.append(run.wall)
                touched.exit = run.code
                touched.rss_mib = max(touched.rss_mib or 0, round(run.rss_mib, 1)) if run.rss_mib else touched.rss_mib
            if "import" in results:
                say("levelsess fsck --store STORE ...")
                found, verified["fsck"] = run_fsck(cli, store)
                problems += found
                verified["store_bytes"] = sum(p.stat().st_size for p in store.rglob("*.jsonl"))
        for result in results.values():
            result.mb_per_s = round(size / MB / result.best, 1)
            result.bubbles_per_s = round(bubble_rows / result.best)
            result.x_bare = round(result.best / bare.best, 2)

        families = {f: {**c, "mean_bytes": round(c["bytes"] / c["rows"]) if c["rows"] else 0} for f, c in info["families"].items()}
        doc = {
            "db": {**facts, "target_mb": args.size_mb, "seed": args.seed, "composers": info["composers"],
                   "big_composers": info["big_composers"], "largest_composer_bubbles": info["largest_composer_bubbles"],
                   "workspaces": info["workspaces"], "families": families, "bubbles": info["bubbles"],
                   "build_seconds": info.get("build_seconds")},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                        "orjson": orjson.__version__, "platform": platform.platform(), "cli": cli},
            "note": f"page cache warm; best of {args.repeat}; wall time of a subprocess (interpreter start-up included); "
                    "MB/s = DB file bytes / time (MB = 10**6); bubbles/s = bubble rows (orphans included) / time; "
                    "peak RSS = VmHWM of that process (MiB)",
            "results": [{**asdict(r), "best": round(r.best, 3), "seconds": [round(s, 3) for s in r.seconds]} for r in results.values()],
            "bare": bare_counts,
            "naive": naive_counts,
            "import_x_bare": results["import"].x_bare if "import" in results else None,
            "create_us": round(creating, 1), "waited_seconds": waited,
            "import": {"available": not missing, "message": missing, "verified": verified or None},
            "problems": problems,
        }
        if args.json:
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            _print_report(doc, list(results.values()))
        if args.keep:
            say(f"kept {base}" + (f" (import store in {store})" if store.exists() else ""))
        return 1 if problems else 0
    finally:
        if temp and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)
        elif not args.keep:
            for made in stores:  # --dir: keep the DB, drop the imported stores
                shutil.rmtree(made, ignore_errors=True)


def _print_report(doc: dict, results: list[Result]) -> None:
    db, machine = doc["db"], doc["machine"]
    b = db["bubbles"]
    print()
    print(f"Cursor global DB: {db['path']}")
    print(f"  {db['bytes'] / MB:.1f} MB ({db['bytes'] / MIB:.1f} MiB), {db['rows']} cursorDiskKV rows + {db['itemtable_rows']} ItemTable rows, "
          f"journal {db['file_format']} ({'a -wal file exists' if db['wal_file'] else 'no -wal'}), seed {db['seed']}, built in {db['build_seconds']}s")
    print(f"  {db['composers']} composers ({db['big_composers']} of {db['largest_composer_bubbles']} bubbles) in {db['workspaces']} workspaces")
    print(f"  {'family':<14} {'rows':>9} {'MB':>9} {'mean KB':>8}")
    for name, fam in db["families"].items():
        print(f"  {name:<14} {fam['rows']:>9} {fam['bytes'] / MB:>9.1f} {fam['mean_bytes'] / 1000:>8.2f}")
    print(f"  bubbles: {b['referenced']} referenced by headers ({b['users']} user, {b['assistants']} assistant; {b['with_content']} with content), "
          f"{b['orphans']} orphan rows ({b['orphans'] / b['rows']:.1%})")
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, SQLite {machine['sqlite']}, orjson {machine['orjson']}, {machine['platform']}")
    print(doc["note"])
    print()
    header = f"{'run':<10} {'seconds':>9} {'x bare':>7} {'MB/s':>8} {'bubbles/s':>10} {'peak RSS MiB':>13}  what"
    print(header)
    print("-" * (len(header) + 70))
    for r in results:
        rss = f"{r.rss_mib:.0f}" if r.rss_mib is not None else "-"
        print(f"{r.name:<10} {r.best:>9.2f} {r.x_bare:>7.2f} {r.mb_per_s:>8.1f} {r.bubbles_per_s:>10} {rss:>13}  {r.what}")
    if not doc["import"]["available"]:
        print(f"{'import':<10} {'-':>9} {'-':>7} {'-':>8} {'-':>10} {'-':>13}  not measured: {doc['import']['message']}")
    if doc["import_x_bare"] is not None:
        print(f"import / bare = {doc['import_x_bare']:.2f} (issue 27: at most 2); a file created in {doc['create_us']:.0f} us"
              + (f" (after {doc['waited_seconds']} s waiting for it)" if doc["waited_seconds"] else ""))
        if doc["create_us"] > SLOW_CREATE_US:
            print(f"  ({slow_note(doc['create_us'])}, and the bare scan is not)")
    naive = doc["naive"]
    if naive:
        print()
        print(f"naive reader saw {naive['composers']} composers, {naive['users']} user + {naive['assistants']} assistant messages, "
              f"{naive['orphans']} orphan bubbles, {naive['missing']} dangling headers ({naive['seconds_inside']:.1f}s inside the process)")
    verified = doc["import"]["verified"]
    if verified:
        for label in ("import", "re-import", "written-to"):
            if label in verified and verified[label]:
                v = verified[label]
                print(f"{label}: {v['sessions']} sessions {v['statuses']}, {v['records']} records ({v['new_records']} new), "
                      f"{v['orphaned_sessions']} orphaned, findings {v['findings'] or 'none'}")
        if "fsck" in verified:
            f = verified["fsck"]
            print(f"fsck --store: exit {f['exit']} in {f['seconds']}s, {f['files']} journals, {(verified.get('store_bytes') or 0) / MB:.1f} MB, "
                  f"findings {f['findings'] or 'none'}")
    print()
    if doc["problems"]:
        print("PROBLEMS:")
        for problem in doc["problems"]:
            print(f"  - {problem}")
    else:
        print("verified: " + ("the naive reader's counts match the build; " if naive else "")
              + ("import checked (sessions, statuses, records, fsck exit 0)" if doc["import"]["available"] else "import not available yet"))


if __name__ == "__main__":
    sys.exit(main())
