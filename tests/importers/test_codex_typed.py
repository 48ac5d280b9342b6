"""What the user typed vs what Codex or an IDE added, in Codex rollouts (issue 23): the context
the VS Code extension writes before a prompt (``# Context from my IDE setup:`` … ``## My request
for Codex:``), ``@`` file mentions (``# Files mentioned by the user:``) and injected messages
(``<environment_context>``, ``<user_instructions>``, ``# AGENTS.md instructions``) are added; the
request is the prompt and the title in ls, show and import.  A child rollout whose parent id is
nested (``source.subagent.thread_spawn.parent_thread_id``) marks its replay of the parent inherited."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli
from tests.layouts.codex import BIG, FIXTURES, SMALL, envelope, lines_of, new_turn
from toolkit.layouts.codex_seen import typed_prompt, typed_start

if not FIXTURES.is_dir():
    pytest.skip(f"{FIXTURES} is not here", allow_module_level=True)

SETTINGS = settings(max_examples=80, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\x00", exclude_categories=("Cs",)), max_size=30)
REQUEST = st.lists(_LINE, min_size=1, max_size=4).map("\n".join).filter(lambda t: t.strip() and not t.lstrip().startswith(("<", "#")))
HEADS = ["# Context from my IDE setup:", "# Files mentioned by the user:"]
SECTIONS = st.lists(st.tuples(st.sampled_from(["## Active file: src/app.py", "## Open tabs:", "## app.py: /home/ada/app.py",
                                               "## Active selection of the file:"]),
                              st.lists(_LINE.map(lambda t: "- " + t), max_size=3)), max_size=3)
INJECTED = ["<environment_context>\n  <cwd>/home/ada/app</cwd>\n</environment_context>",
            "<user_instructions>\n\nbe terse\n\n</user_instructions>",
            "# AGENTS.md instructions for /home/ada/app\n\n<INSTRUCTIONS>\nrun the tests\n</INSTRUCTIONS>"]


def _context(head: str, sections: list, request: str) -> tuple[str, str]:
    body = "".join(f"\n{title}\n" + "".join(f"{item}\n" for item in items) for title, items in sections)
    context = f"{head}\n{body}\n## My request for Codex:\n"
    return context + request, context


@SETTINGS
@given(head=st.sampled_from(HEADS), sections=SECTIONS, request=REQUEST)
def test_the_request_after_an_ide_context_is_what_was_typed(head, sections, request):
    text, context = _context(head, sections, request)
    assert typed_start(text) == len(context) and typed_prompt(text) == request
    assert typed_prompt(context) is None, "a context with no request is all added"
    assert typed_prompt(request) == request, "a plain prompt is all typed"


@pytest.mark.parametrize("text", INJECTED)
def test_injected_messages_are_never_typed(text):
    assert typed_prompt(text) is None and typed_prompt("\n  " + text) is None


# -- a real rollout, as the VS Code extension writes it -------------------------------------------

#: The anonymised fixture keeps the shape of the extension's context, not its words: the first
#: heading (7 4 2 3 5 letters) is "Context from my IDE setup", the request heading (2 7 3 5) is
#: "My request for Codex"; put back, the rollout reads as the extension wrote it.
_HEAD = re.compile(r"^# \S{7} \S{4} \S{2} \S{3} \S{5}:\n")
_MARK = re.compile(r"\n## \S{2} \S{7} \S{3} \S{5}:\n")


def _unmasked(text: str) -> str:
    if not _HEAD.match(text) or not _MARK.search(text):
        return text
    text = _HEAD.sub("# Context from my IDE setup:\n", text, count=1)
    return _MARK.sub("\n## My request for Codex:\n", text, count=1)


def _ide_rollout(tmp_path: Path) -> tuple[Path, list[str]]:
    """The big fixture with the extension's words put back; the requests a person typed, in order."""
    out, requests = [], []
    for line in lines_of((FIXTURES / BIG).read_bytes()):
        record = json.loads(line)
        payload = record["payload"]
        if record["type"] == "event_msg" and payload.get("type") == "user_message":
            payload["message"] = _unmasked(payload["message"])
            requests.append(payload["message"].split("## My request for Codex:\n", 1)[-1])
        elif record["type"] == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            for block in payload["content"]:
                if block.get("type") == "input_text":
                    block["text"] = _unmasked(block["text"])
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    path = tmp_path / ".codex" / BIG
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in out), encoding="utf-8")
    return path, requests


def test_a_vscode_rollout_lists_shows_and_imports_the_requests_as_its_prompts(tmp_path):
    path, requests = _ide_rollout(tmp_path)
    title = " ".join(requests[0].split())[:120]
    assert sum(r.startswith("# Context") for r in requests) == 0 and len(requests) == 46
    (row,) = run_cli("ls", "--json", path).json["sessions"]
    assert (row["title"], row["turns"]) == (title, 46)
    shown = run_cli("show", path).stdout
    turn1 = shown[shown.index("## Turn 1 "):shown.index("## Turn 2 ")]
    assert turn1.index("_(added by the tool)_") < turn1.index("# Context from my IDE setup:") < turn1.index("### You")
    assert shown.count("## Turn ") == 46 and shown.startswith(f"# {title}\n")

    store = tmp_path / "store"
    assert run_cli("import", "--from", "codex", "--source", tmp_path / ".codex", "--store", store, "-q").exit_code == 0
    (journal,) = store.rglob("*.jsonl")
    meta, *records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    prompts = [r for r in records if r["kind"] == "user" and not r.get("toolResult")]
    assert meta["title"] == title
    assert [r["content"][1]["text"] for r in prompts] == requests, "the request is the typed block"
    assert all(r["added"] == [0] and r["content"][0]["text"].startswith("# Context from my IDE setup:") for r in prompts)
    originals = [json.loads(line)["payload"]["message"] for line in path.read_text(encoding="utf-8").splitlines()
                 if json.loads(line)["type"] == "event_msg" and json.loads(line)["payload"].get("type") == "user_message"]
    assert ["".join(b["text"] for b in r["content"]) for r in prompts] == originals, "the two blocks are the text exactly"
    (stored,) = run_cli("ls", "--json", "--store", store).json["sessions"]
    assert (stored["title"], stored["turns"]) == (title, 46)
    again = run_cli("show", "--store", store, stored["id"]).stdout
    assert again.count("## Turn ") == 46 and again.count("_(added by the tool)_") == 46


def test_the_real_rollouts_keep_their_turns_and_no_title_is_injected(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / ".codex")
    rows = run_cli("ls", "--json", tmp_path / ".codex").json["sessions"]
    assert sorted(r["turns"] for r in rows) == [1, 1, 46]
    assert all(r["title"] and not re.match(r"\s*(<|# AGENTS\.md)", r["title"]) for r in rows)


def test_a_prompt_of_only_injected_text_is_no_turn_and_never_the_title(tmp_path):
    first = json.loads(lines_of((FIXTURES / SMALL).read_bytes())[0])
    lines = [json.dumps(first).encode()]
    for text in INJECTED:
        lines += new_turn("2026-04-01T04:00:00.000Z", text, "noted")
    lines += new_turn("2026-04-01T04:01:00.000Z", "the real question", "the answer")
    path = tmp_path / ".codex" / SMALL
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    (row,) = run_cli("ls", "--json", path).json["sessions"]
    assert (row["title"], row["turns"]) == ("the real question", 1)
    assert run_cli("import", "--from", "codex", "--source", tmp_path / ".codex", "--store", tmp_path / "store", "-q").exit_code == 0
    (stored,) = run_cli("ls", "--json", "--store", tmp_path / "store").json["sessions"]
    assert (stored["title"], stored["turns"]) == ("the real question", 1)
    shown = run_cli("show", "--store", tmp_path / "store", stored["id"]).stdout
    assert shown.count("## Turn ") == 1 and shown.count("_(added by the tool") == 3


# -- a spawned child that replays its parent, its parent id nested ---------------------------------


@pytest.mark.parametrize("shape", ["forked_from_id", "nested"])
def test_a_child_s_replay_of_its_parent_is_inherited_whatever_names_the_parent(tmp_path, shape):
    parent = json.loads(lines_of((FIXTURES / SMALL).read_bytes())[0])["payload"]
    child_id = "019d9999-0000-7000-8000-000000000002"
    meta = {"id": child_id, **{k: v for k, v in parent.items() if k != "id"}}
    if shape == "forked_from_id":
        meta = {"id": child_id, "forked_from_id": parent["id"], **{k: v for k, v in meta.items() if k != "id"}}
    else:
        meta["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent["id"], "depth": 1, "agent_path": None,
                                                        "agent_nickname": "Scout", "agent_role": "explorer"}}}
    t = "2026-04-03T10:00:00.000Z"
    lines = [envelope(t, "session_meta", meta), envelope(t, "session_meta", parent),
             envelope(t, "event_msg", {"type": "task_started", "turn_id": "p1"}),
             envelope(t, "event_msg", {"type": "user_message", "message": "the parent's question", "images": []}),
             envelope(t, "event_msg", {"type": "agent_message", "message": "the parent's answer", "phase": None}),
             *new_turn("2026-04-03T10:00:05.000Z", "the child's own question", "the child's answer")]
    path = tmp_path / ".codex" / "sessions" / "2026" / "04" / "03" / f"rollout-2026-04-03T04-00-00-{child_id}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    (row,) = run_cli("ls", "--json", path).json["sessions"]
    assert (row["title"], row["turns"]) == ("the child's own question", 1), "the parent's turn is not the child's"
    shown = run_cli("show", path).stdout
    assert shown.index("replayed from the parent thread") < shown.index("the parent's question") \
        < shown.index("this thread's own work starts here") < shown.index("### You\n\nthe child's own question")
    assert parent["id"] in shown.split("\n\n")[1], "the header names the parent"
    store = tmp_path / "store"
    assert run_cli("import", "--from", "codex", "--source", tmp_path / ".codex", "--store", store, "-q").exit_code == 0
    (journal,) = store.rglob("*.jsonl")
    meta_record, *records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert meta_record["source"]["parent"] == parent["id"] and meta_record["title"] == "the child's own question"
    users = [(r["content"], r.get("inherited", False)) for r in records if r["kind"] == "user"]
    assert users == [("the parent's question", True), ("the child's own question", False)]
    (stored,) = run_cli("ls", "--json", "--store", store).json["sessions"]
    assert stored["turns"] == 1
