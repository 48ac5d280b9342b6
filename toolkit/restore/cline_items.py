"""The ``HistoryItem`` Cline, Roo Code or Kilo Code would have written for a task folder
(SOURCES-MORE §4.2, §4.3), read from the folder's own files only: for ``restore --app cline``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..importers.cline.convert import cwd_of
from ..importers.cline.jsonfile import load_json
from ..importers.cline.places import Install
from ..importers.cline.tasks import API, METADATA, UI

UNTITLED = "Untitled Task"


def _readable(path: Path) -> list | None:
    """A task file's array when the tool's JSON.parse would take it whole, else None."""
    loaded = load_json(path)
    if loaded.missing or not loaded.whole or loaded.bom or loaded.replaced or not isinstance(loaded.value, list):
        return None
    return loaded.value


def _number(value: object) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _ts(value: object) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _prompt(ui: list, api: list) -> str | None:
    """The task's prompt: the first ``say:"task"`` text (Cline's own rule: its first message), else the
    ``<task>`` the first API message holds; never text the extension injected."""
    first = ui[0] if ui and isinstance(ui[0], dict) else None
    if first is not None and first.get("say") in ("task", "text") and isinstance(first.get("text"), str) and first["text"].strip():
        return first["text"]
    message = api[0] if api and isinstance(api[0], dict) and api[0].get("role") == "user" else None
    content = message.get("content") if message else None
    texts = [content] if isinstance(content, str) else [b.get("text") for b in content or [] if isinstance(b, dict)
                                                         and b.get("type") == "text" and isinstance(b.get("text"), str)]
    for text in texts:
        start, end = text.find("<task>"), text.rfind("</task>")
        if start != -1 and end > start and text[start + 6:end].strip():
            return text[start + 6:end].strip("\n")
    return None


def _usage(ui: list, api: list) -> dict:
    """Tokens and cost summed as Cline sums them: each ``api_req_started`` (and ``subagent_usage``)
    message's JSON; without a panel file, the API history's ``metrics``."""
    totals = {"tokensIn": 0, "tokensOut": 0, "cacheWrites": 0, "cacheReads": 0, "totalCost": 0}
    names = {"tokensIn": "tokensIn", "tokensOut": "tokensOut", "cacheWrites": "cacheWrites", "cacheReads": "cacheReads", "totalCost": "cost"}
    for message in ui:
        if isinstance(message, dict) and message.get("say") in ("api_req_started", "subagent_usage") and isinstance(message.get("text"), str):
            try:
                info = json.loads(message["text"])
            except ValueError:
                continue
            if isinstance(info, dict):
                for key, name in names.items():
                    totals[key] += _number(info.get(name))
    if not ui:
        for message in api:
            metrics = message.get("metrics") if isinstance(message, dict) else None
            tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
            if isinstance(tokens, dict):
                totals["tokensIn"] += _number(tokens.get("prompt"))
                totals["tokensOut"] += _number(tokens.get("completion"))
                totals["cacheReads"] += _number(tokens.get("cached"))
            if isinstance(metrics, dict):
                totals["totalCost"] += _number(metrics.get("cost"))
    return totals


def _last_ts(folder: Path, ui: list, api: list) -> int | float:
    """Cline's ``ts``: the last panel message that is not a resume prompt; else the API history's last; else the id."""
    for messages, skip in ((ui, True), (api, False)):
        for message in reversed(messages):
            if isinstance(message, dict) and not (skip and message.get("ask") in ("resume_task", "resume_completed_task")):
                if _ts(message.get("ts")) is not None:
                    return message["ts"]
    if folder.name.isdigit() and len(folder.name) <= 16:
        return int(folder.name)
    return int(folder.stat().st_mtime * 1000)


def _model(api: list, folder: Path) -> str | None:
    for message in reversed(api):
        info = message.get("modelInfo") if isinstance(message, dict) else None
        if isinstance(info, dict) and isinstance(info.get("modelId"), str) and info["modelId"]:
            return info["modelId"]
    metadata = load_json(folder / METADATA)
    usage = metadata.value.get("model_usage") if metadata.whole and isinstance(metadata.value, dict) else None
    for entry in reversed(usage if isinstance(usage, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("model_id"), str) and entry["model_id"]:
            return entry["model_id"]
    return None


def folder_size(folder: Path) -> int:
    """The bytes of every file under ``folder`` (Cline's ``getFolderSize``)."""
    total = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def history_item(tool: str, folder: Path) -> tuple[dict | None, str | None]:
    """The entry the tool would have written for the task in ``folder`` (None and why, when its
    files cannot give one)."""
    ui, api = _readable(folder / UI), _readable(folder / API)
    if not ui and not api:
        why = "neither ui_messages.json nor api_conversation_history.json is a whole, non-empty JSON array"
        return None, why
    ui, api = ui or [], api or []
    prompt = _prompt(ui, api)
    cwd = next((c for m in api[:1] if isinstance(m, dict) and (c := cwd_of(m.get("content")))), None)
    item: dict = {"id": folder.name}
    if tool != "cline":
        item["number"] = 1
    item["ts"] = _last_ts(folder, ui, api)
    item["task"] = prompt or UNTITLED
    item.update(_usage(ui, api))
    item["size"] = folder_size(folder)
    if tool == "cline":
        if cwd:
            item["cwdOnTaskInitialization"] = cwd
        model = _model(api, folder)
        if model:
            item["modelId"] = model
    elif cwd:
        item["workspace"] = cwd
    return item, None


def task_folders(install: Install) -> list[Path]:
    """Every task folder (names starting ``_`` or ``.`` are the tools' own files)."""
    try:
        return sorted(p for p in install.tasks.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(("_", ".")))
    except (FileNotFoundError, NotADirectoryError):
        return []
