"""Render a Gemini CLI session for ``show`` and ``export --format md``: the conversation Gemini
would resume (updates applied, rewinds honoured), with what a rewind or a history rewrite took
off the chain shown where it left, marked as such.

Lines are read as Gemini reads them (§1.5): a line that does not parse is skipped, not fatal, so
a damaged session still shows what Gemini would make of it (``fsck`` says what is damaged).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ...lines import Batch, Tail, iter_batches, loads, open_regular
from ...render import _demote, _summary, _text
from .chat import Chain, OffChain, text_of


def iter_lines(path: Path) -> Iterator[object]:
    """Every line of ``path`` that parses, in order (Gemini's reader: the rest is skipped)."""
    with open_regular(path) as handle:
        for item in iter_batches(handle):
            lines = item.lines if type(item) is Batch else [item.data] if type(item) is Tail and item.data else []
            for line in lines:
                try:
                    yield loads(line.lstrip(b"\xef\xbb\xbf").strip())
                except ValueError:
                    continue


def replay(path: Path) -> Chain:
    """The session's chain with whole records, and what left it (a legacy ``.json``: its messages)."""
    chain = Chain(keep_off=True)
    if path.suffix == ".json":
        from .sweep import legacy_session

        value, _problem = legacy_session(path)
        if value is not None:
            chain.meta.update({k: v for k, v in value.items() if k != "messages"})
            chain.replace(value["messages"] if isinstance(value.get("messages"), list) else [])
        return chain
    for obj in iter_lines(path):
        chain.apply(obj)
    return chain


def _message(record: dict) -> str:
    kind = record.get("type")
    when = _text(record.get("timestamp"))
    text = text_of(record.get("content"))
    if kind == "user":
        return f"### You · {when}\n\n{_demote(text)}\n\n"
    if kind == "gemini":
        model = record.get("model")
        parts = [f"### Gemini ({_text(model)}) · {when}" if model else f"### Gemini · {when}"]
        for thought in record.get("thoughts") if isinstance(record.get("thoughts"), list) else []:
            if isinstance(thought, dict):
                parts.append(f"<details><summary>Thought: {_text(thought.get('subject'))}</summary>\n\n"
                             f"{_text(thought.get('description'), 4000)}\n\n</details>")
        if text:
            parts.append(_demote(text))
        for call in record.get("toolCalls") if isinstance(record.get("toolCalls"), list) else []:
            if isinstance(call, dict):
                parts.append(f"> 🔧 **{_text(call.get('displayName') or call.get('name'))}** `{_summary(call.get('args'), 160)}` "
                             f"· {_text(call.get('status'))}")
        return "\n\n".join(parts) + "\n\n"
    return f"_{_text(kind)}: {_summary(text, 400)}_\n\n"


def _off(block: OffChain) -> str:
    body = "".join(_message(r) if isinstance(r, dict) else "" for r in block.values)
    body = "\n".join("> " + line if line else ">" for line in body.rstrip("\n").split("\n"))
    return f"_— off the chain ({len(block.values)} message(s) {block.reason}); Gemini does not resume these —_\n\n{body}\n\n"


def markdown(path: Path, layout, title: object = None) -> Iterator[str]:
    """The session as Markdown, chunk by chunk."""
    chain = replay(path)
    meta = chain.meta
    first = next((text_of(r.get("content")) for r in chain.messages.values() if isinstance(r, dict) and r.get("type") == "user"), "")
    yield f"# {_text(title) or _text(meta.get('summary')) or ' '.join(first.split())[:120] or path.stem}\n\n"
    line = " · ".join(_text(meta.get(k)) for k in ("sessionId", "startTime", "lastUpdated", "kind") if meta.get(k))
    yield f"_{line}_\n\n" if line else "_no metadata line: Gemini cannot load this session_\n\n"
    anchored: dict[str | None, list[OffChain]] = {}
    for block in chain.off:
        anchored.setdefault(block.anchor if block.anchor is None or block.anchor in chain.messages else "", []).append(block)
    for block in anchored.get(None, []):
        yield _off(block)
    for mid, record in chain.messages.items():
        if isinstance(record, dict):
            yield _message(record)
        for block in anchored.get(mid, []):
            yield _off(block)
    for block in anchored.get("", []):
        yield _off(block)
