"""`doctor --bundle`: the support bundle holds no user, host or project name unless --include-paths.

The class: a home whose user name and project folder names are random strings (and this machine's
real host name, in a lock's owner), holding a LevelCode store with a damaged journal, a Logician
workspace, Claude Code and Codex installs.  Every byte of every file in the bundle is searched for
each name: none is there; with --include-paths they are.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import socket
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import logician_session, meta, run_cli, session_records, write_journal
from toolkit.anonymise import Anonymiser
from toolkit.stores import slug

SHARED = Path(__file__).resolve().parents[1].parent.parent / "shared" / "fixtures"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/fixtures")

# no a-f or digits (sha256 hex), no x (masks), no e and a q, z or a Greek or Cyrillic letter (never
# in a word levelsess prints: "nightl" is in "nightly"): a name found in the bundle leaked
NAME = st.text(st.sampled_from("ghijklmnopqrstuvwyzéøåñжлдλπ"), min_size=6, max_size=10).filter(
    lambda name: any(c in "qzжлдλπ" for c in name))


def _home(root: Path, user: str, projects: list[str], monkeypatch) -> Path:
    home = root / user
    home.mkdir(parents=True)
    for name, value in (("HOME", home), ("USER", user), ("LOGNAME", user), ("XDG_CONFIG_HOME", home / ".config"),
                        ("XDG_DATA_HOME", home / ".local" / "share")):
        monkeypatch.setenv(name, str(value))
    first = home / "code" / projects[0]
    store = home / ".levelcode" / "sessions"
    sid = "2026-11-30T09-00-00-a1b2"
    records = session_records(sid)
    records[0] = {**meta(sid), "project": str(first), "title": f"{projects[0]} on {socket.gethostname()} by {user}"}
    journal = write_journal(store / slug(str(first)) / f"{sid}.jsonl", records)
    with open(journal, "ab") as handle:  # a torn tail naming the project: the region is copied
        handle.write(f'{{"kind":"user","content":"{first} {user}'.encode())
    lines = [json.dumps(r).encode() for r in records]
    other = write_journal(store / slug(str(first)) / "2026-11-30T09-00-01-c3d4.jsonl",  # invalid-json mid-file
                          b"\n".join(lines[:2] + [b"\x00\x00{not json " + projects[0].encode()] + lines[2:]) + b"\n")
    (other.parent / f"{other.name}.lock").write_text(json.dumps({"pid": 999999, "host": socket.gethostname(),
                                                                 "startedAt": 1.0, "acquiredAt": 1.0}))
    logician_session(home / projects[1], entries=[{"id": "e1", "parentId": "gone", "cwd": str(home / projects[1])}])
    shutil.copytree(SHARED / "claude-code" / "projects", home / ".claude" / "projects")
    project = home / ".claude" / "projects" / slug(str(first))
    project.mkdir()
    (project / "0b0e9a9c-2d2b-4b7e-9b7a-0e0e0e0e0e0e.jsonl").write_text(
        json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "cwd": str(first), "sessionId": "s",
                    "message": {"role": "user", "content": f"in {first}"}}) + "\n")
    shutil.copytree(SHARED / "codex", home / ".codex")
    return home


def _bundle(path: Path) -> bytes:
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as archive:
        assert sorted(archive.namelist()) == ["about.json", "doctor.json", "files.json", "findings.json"]
        return b"\n".join(archive.read(name) for name in archive.namelist())


class TestBundleNames:
    @settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(names=st.lists(NAME, min_size=3, max_size=3, unique_by=str.lower))
    def test_no_user_host_or_project_name_unless_include_paths(self, names, tmp_path_factory, monkeypatch):
        user, projects = names[0], names[1:]
        root = tmp_path_factory.mktemp("b")
        with monkeypatch.context() as patch:
            home = _home(root / "users", user, projects, patch)
            bundle = root / "support.zip"
            result = run_cli("doctor", "--bundle", bundle, home)
            assert result.exit_code == 0, result.stderr
            blob = _bundle(bundle)
            secrets = [user, *projects, socket.gethostname()]
            for secret in secrets:
                for form in {secret, secret.upper(), secret.lower()}:
                    assert form.encode() not in blob, f"{form!r} is in the bundle"
            assert b'"~/.levelcode/sessions/<p' in blob and b"~/.claude/projects/<p" in blob  # the shape stays
            full = root / "full.zip"
            assert run_cli("doctor", "--bundle", full, "--include-paths", home).exit_code == 0
            everything = _bundle(full)
            for secret in (user, projects[1], socket.gethostname()):  # the first project's folder is a slug (non-ASCII: hashed)
                assert secret.encode() in everything, f"{secret!r} is missing with --include-paths"

    def test_the_same_path_is_the_same_placeholder_throughout(self, tmp_path, monkeypatch):
        home = _home(tmp_path / "users", "quokkaz", ["wombatz", "numbatz"], monkeypatch)
        bundle = tmp_path / "support.zip"
        run_cli("doctor", "--bundle", bundle, home)
        with zipfile.ZipFile(bundle) as archive:
            doctor = json.loads(archive.read("doctor.json"))
            files = json.loads(archive.read("files.json"))
            findings = json.loads(archive.read("findings.json"))
        store = next(s["path"] for s in doctor["stores"] if s["kind"] == "levelcode")
        assert store == "~/.levelcode/sessions"
        ours = [f["path"] for f in files if f["path"].startswith(store)]
        folders = {Path(p).parent for p in ours}
        assert len(ours) == 2 and len(folders) == 1 and next(iter(folders)).name.startswith("<p")
        assert {Path(p).name for p in ours} == {"2026-11-30T09-00-00-a1b2.jsonl", "2026-11-30T09-00-01-c3d4.jsonl"}
        torn = next(f for f in findings if f["code"] == "torn-tail")
        assert Path(torn["path"]).parent == next(iter(folders))
        locked = next(f for f in files if "lock" in f)
        assert locked["lock"]["host"] == "<host>" and locked["lock"]["pid"] == 999999

    def test_include_paths_needs_a_bundle(self):
        result = run_cli("doctor", "--include-paths")
        assert result.exit_code == 16 and "--include-paths only applies to --bundle" in result.stderr


class TestAnonymiser:
    @given(name=NAME, case=st.sampled_from([str.upper, str.lower, str.title]))
    def test_a_name_is_replaced_in_every_form_a_tool_writes_it(self, name, case):
        anonymiser = Anonymiser("/home/u", ["u"], ["h"])
        path = f"/home/u/code/{name} app/x"
        anonymiser.learn({"path": path})
        slugged = re.sub(r"[^A-Za-z0-9]", "-", path)  # Claude Code's project folder for it
        texts = [path, f"slug {slugged} here", f"file:///home/u/code/{quote(name)}%20app", f"said {case(name)} app"]
        for text in anonymiser.apply(texts):
            assert name.lower() not in text.lower(), text

    def test_tool_folders_and_session_ids_are_kept(self):
        anonymiser = Anonymiser("/home/ada", ["ada"], ["box"])
        path = "/home/ada/.claude/projects/-home-ada-app/0b0e9a9c-2d2b-4b7e-9b7a-0e0e0e0e0e0e.jsonl"
        anonymiser.learn([path, "/home/ada/.codex/sessions/2025/05/07/rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"])
        assert anonymiser.apply(path) == "~/.claude/projects/<p1>/0b0e9a9c-2d2b-4b7e-9b7a-0e0e0e0e0e0e.jsonl"
        assert anonymiser.apply("/home/ada/.codex/sessions/2025/05/07/x") == "~/.codex/sessions/2025/05/07/x"
        assert anonymiser.apply(r'{"xxxx":"xx\x00\x00') == r'{"xxxx":"xx\x00\x00', "a masked region keeps its shape"


@pytest.mark.parametrize("flag", ["--include-paths", "--include-content"])
def test_help_says_what_the_bundle_holds(flag):
    text = " ".join(run_cli("doctor", "--help").stdout.split())
    for piece in ("about.json", "doctor.json", "findings.json", "files.json", "<user>", "<host>", flag):
        assert piece in text.replace("│", "").replace(" ", "") or piece in text


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="needs a file system that takes any bytes in a name")
def test_a_store_under_a_folder_name_that_is_not_utf8_bundles_with_and_without_paths(tmp_path):
    """A folder's name on Linux is bytes: the bundle names it escaped with --include-paths, and
    hides it behind a placeholder without (its URL-quoted form, %FF, failed and the bundle died)."""
    import os

    from tests.helpers import make_store

    odd = Path(os.fsdecode(bytes(tmp_path) + b"/wombat\xffzz"))
    store = make_store(odd / "store", sessions=1)
    hidden, shown = tmp_path / "support.zip", tmp_path / "full.zip"
    assert run_cli("doctor", "--store", store, "--bundle", hidden).exit_code in (0, 4)
    assert run_cli("doctor", "--store", store, "--bundle", shown, "--include-paths").exit_code in (0, 4)
    blob, everything = _bundle(hidden), _bundle(shown)
    assert b"wombat" not in blob and b"\\udcff" not in blob
    assert b"wombat\\udcffzz" in everything
