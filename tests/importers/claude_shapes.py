"""A deterministic Claude Code tree of odd shapes, and how it grows: the input of the reference
test that pins `import --from claude`'s journals byte for byte (tests/data/claude_import_reference.json).

Odd shapes: branches and rewinds, parents that name nothing or a later line, parentUuid of the
wrong type, cycles, repeated uuids and copied lines, inline sidechains (1.0.x), responses split
over lines (some interleaved, some without a message id), compactions with a logical parent,
titles of every kind (summaries naming this file or another), tool results returning subagents,
lone surrogates, records without a timestamp, a torn last line.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

MTIME = 1_780_000_000  # the files' mtime: the creation time of a transcript that has no timestamp


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _chain(rng: random.Random, n: int, pool: list[str], previous: str | None, msgs: list[str]) -> dict:
    kind = rng.choice(["user", "user", "assistant", "assistant", "assistant", "system", "progress", "attachment"])
    uuid = _uuid(n) if rng.random() > 0.05 else rng.choice(pool)
    if rng.random() < 0.02:
        uuid = "\udc80" + uuid
    parent = rng.choice([previous, previous, previous, None, rng.choice(pool), 5, "dangling"]) if n else None
    record = {"parentUuid": parent, "isSidechain": rng.random() < 0.04, "type": kind, "uuid": uuid,
              "timestamp": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "sessionId": "s", "cwd": "/x/y"}
    if rng.random() < 0.1:
        del record["timestamp"]
    if kind == "assistant":
        block = rng.choice([{"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "", "signature": "s"},
                            {"type": "tool_use", "id": rng.choice(["t1", "t2", "t3"]), "name": "Bash", "input": {}}])
        message = {"id": rng.choice(msgs), "content": [block], "stop_reason": rng.choice([None, None, "tool_use", "end_turn"]),
                   "usage": {"output_tokens": n}, "model": "m"}
        if rng.random() < 0.05:
            del message["id"]
        record["message"] = message
        if rng.random() < 0.8:
            record["requestId"] = rng.choice(["r1", "r2"])
        if rng.random() < 0.03:
            record["isApiErrorMessage"] = True
    elif kind == "user" and rng.random() < 0.5:
        record["message"] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": rng.choice(["t1", "t2", "t3", 7]),
                                                          "content": "ok"}]}
        if rng.random() < 0.2:
            record["toolUseResult"] = {"agentId": rng.choice(["a1", "a2", ""])}
    elif kind == "user":
        record["message"] = {"role": "user", "content": rng.choice(["hello there", "[Request interrupted by user]",
                                                                    "<command-name>x</command-name>", "caf\u00e9"])}
        for flag in ("isMeta", "isCompactSummary"):
            if rng.random() < 0.05:
                record[flag] = True
    elif kind == "system":
        record["subtype"] = rng.choice(["compact_boundary", "turn_duration", None])
        if record["subtype"] == "compact_boundary":
            record["parentUuid"], record["logicalParentUuid"] = None, rng.choice([*pool, None, 3])
        record["content"] = "c"
    return record


def _metadata(rng: random.Random, n: int, pool: list[str]) -> dict:
    kind = rng.choice(["summary", "ai-title", "custom-title", "last-prompt", "file-history-snapshot", "brand-new-type"])
    record: dict = {"type": kind, "sessionId": "s"}
    if kind == "summary":
        record.update(summary=rng.choice(["a", "b", "\ud800x"]), leafUuid=rng.choice([*pool, "elsewhere"]))
    elif kind == "ai-title":
        record["aiTitle"] = rng.choice(["T1", "T2", "T1"])
    elif kind == "custom-title":
        record["customTitle"] = rng.choice(["C1", "C2"])
    if rng.random() < 0.3:
        record["timestamp"] = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    return record


def transcript(rng: random.Random) -> list[dict]:
    count = rng.randint(5, 150)
    pool = [_uuid(rng.randint(0, count + 5)) for _ in range(count)]
    msgs = [f"msg_{k}" for k in range(rng.randint(1, 20))]
    records, previous = [], None
    for n in range(count):
        if rng.random() < 0.1:
            records.append(_metadata(rng, n, pool))
            continue
        record = _chain(rng, n, pool, previous, msgs)
        records.append(record)
        previous = record["uuid"] if rng.random() > 0.1 else previous
    return records


def _dump(rng: random.Random, records: list[dict]) -> bytes:
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    if rng.random() < 0.1:
        lines.append(lines[rng.randrange(len(lines))])  # a copied line
    data = "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")
    if rng.random() < 0.05:
        data += '{"parentUuid":"x","type":"assist'  # being written
    return data.encode()


def build(projects: Path, sessions: int = 40, seed: int = 28) -> None:
    """``sessions`` odd transcripts (some with subagents) under ``projects``."""
    rng = random.Random(seed)
    for i in range(sessions):
        folder = projects / f"-odd{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"{i:08d}-0000-4000-8000-{seed:012d}"
        (folder / f"{sid}.jsonl").write_bytes(_dump(rng, transcript(rng)))
        if rng.random() < 0.2:
            agents = folder / sid / "subagents"
            agents.mkdir(parents=True)
            for agent in rng.sample(["a1", "a2", "a3"], rng.randint(1, 3)):
                (agents / f"agent-{agent}.jsonl").write_bytes(_dump(rng, transcript(rng)))
    settle(projects)


def grow(projects: Path, seed: int = 29) -> None:
    """Append to every transcript what a later session writes: new turns off existing records,
    the rest of a split response, titles; a torn last line gets its newline first."""
    rng = random.Random(seed)
    for path in sorted(projects.rglob("*.jsonl")):
        data = path.read_bytes()
        uuids = []
        for line in data.split(b"\n"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("uuid"), str):
                uuids.append(value["uuid"])
        added = []
        for _ in range(rng.randint(0, 4)):
            kind = rng.choice(["user", "assistant", "ai-title", "custom-title"])
            if kind in ("ai-title", "custom-title"):
                added.append({"type": kind, "aiTitle" if kind == "ai-title" else "customTitle": rng.choice(["N1", "N2"]), "sessionId": "s"})
                continue
            uuid = f"99999999-0000-4000-8000-{rng.randint(0, 10**9):012d}"
            record = {"parentUuid": rng.choice(uuids) if uuids else None, "isSidechain": rng.random() < 0.1, "type": kind,
                      "uuid": uuid, "timestamp": "2026-02-01T00:00:00.000Z", "sessionId": "s"}
            if kind == "assistant":
                record["message"] = {"id": rng.choice(["msg_0", "msg_1", "msg_new"]), "content": [{"type": "text", "text": "more"}],
                                     "stop_reason": rng.choice([None, "end_turn"])}
                record["requestId"] = rng.choice(["r1", "r2"])
            else:
                record["message"] = {"role": "user", "content": "again"}
            uuids.append(uuid)
            added.append(record)
        if added:
            body = data if data.endswith(b"\n") or not data else data + b"\n"
            path.write_bytes(body + b"".join(json.dumps(r).encode() + b"\n" for r in added))
    settle(projects)


def settle(projects: Path) -> None:
    """Give every file the same mtime (a transcript without a timestamp is dated by it)."""
    for path in projects.rglob("*.jsonl"):
        os.utime(path, (MTIME, MTIME))


def digests(store: Path, root: Path) -> dict[str, str]:
    """sha256 of each journal under ``store``, the source root's path in it replaced by ``<root>``."""
    escaped = json.dumps(str(root))[1:-1].encode()
    return {path.relative_to(store).as_posix(): hashlib.sha256(path.read_bytes().replace(escaped, b"<root>")).hexdigest()[:16]
            for path in sorted(store.rglob("*.jsonl"))}


def reference_tree(root: Path, fixtures: Path) -> Path:
    """The reference input: the real fixtures, a regular 3,000-record transcript and the odd shapes."""
    from tests.bench.claude_transcript import write

    shutil.copytree(fixtures, root)
    write(root, 3000)
    build(root / "projects")
    return root


def main() -> None:
    """Write tests/data/claude_import_reference.json with the importer on ``sys.path`` (pin it anew
    only when a change to the journals is intended): ``python -m tests.importers.claude_shapes``."""
    import sys
    import tempfile

    from tests.helpers import run_cli

    fixtures = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/fixtures/claude-code")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        root, store = reference_tree(Path(tmp) / ".claude", fixtures), Path(tmp) / "store"
        for name in ("first", "again"):
            if name == "again":
                grow(root / "projects")
            result = run_cli("import", "--from", "claude", "--source", str(root), "--store", str(store), "--json")
            assert result.exit_code in (0, 4), result.stdout
            out[name] = digests(store, root)
    REFERENCE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{REFERENCE}: {len(out['first'])} journals, then {len(out['again'])}")


REFERENCE = Path(__file__).resolve().parents[1] / "data" / "claude_import_reference.json"

if __name__ == "__main__":
    main()
