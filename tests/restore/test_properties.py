"""The restore rule over every shape of existing file: for a kept Claude Code transcript and a kept
Codex rollout, and any byte prefix of the source (cut anywhere, mid-line included; or no file at
all), restore makes the file byte-identical to the source; for anything else (a prefix followed by
bytes the source does not have) it refuses, unless the file already holds the whole source; in no
case does it remove or change a byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.restore.kit import CLAUDE, CODEX, copy_home, do_import, restore

if CLAUDE is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)

SMALL_CLAUDE = Path("projects/-loru-rnwdo-kwobudct-tkoccuw/55604662-cf2a-4331-851a-ec234028f8ca.jsonl")
SMALL_CODEX = Path("archived_sessions/rollout-2026-03-31T21-32-15-019d4719-5460-7b10-bdb3-4728ca6f3192.jsonl")


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """Both sources imported once into one store: (store, {app: (session id, path under its root, bytes)})."""
    base = tmp_path_factory.mktemp("kept")
    store = base / "store"
    claude = copy_home(CLAUDE, base / ".claude")
    codex = copy_home(CODEX, base / ".codex")
    do_import("claude", claude / SMALL_CLAUDE, store)
    do_import("codex", codex / SMALL_CODEX, store)
    return store, {"claude": (SMALL_CLAUDE.stem, SMALL_CLAUDE, (claude / SMALL_CLAUDE).read_bytes()),
                   "codex": (SMALL_CODEX.stem[-36:], SMALL_CODEX, (codex / SMALL_CODEX).read_bytes())}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(app=st.sampled_from(["claude", "codex"]),
       cut=st.one_of(st.integers(min_value=-1, max_value=10**9), st.tuples(st.just("line"), st.integers(min_value=0, max_value=10**6))),
       extra=st.one_of(st.just(b""), st.binary(min_size=1, max_size=12)))
def test_any_prefix_becomes_the_source_and_no_byte_is_ever_removed(kept, tmp_path_factory, app, cut, extra):
    store, sources = kept
    sid, rel, source = sources[app]
    to = tmp_path_factory.mktemp("to")
    target = to / rel
    target.parent.mkdir(parents=True)
    if isinstance(cut, tuple):  # ("line", k): the end of some whole line (or the very start)
        ends = [0] + [i + 1 for i, byte in enumerate(source) if byte == 0x0A]
        cut = ends[cut[1] % len(ends)]
    before = None
    if cut >= 0:  # -1: no file at all
        before = source[:cut % (len(source) + 1)] + extra
        target.write_bytes(before)
    result = restore(sid, "--store", store, "--to", to, "--yes")
    after = target.read_bytes() if target.exists() else None
    if before is None or source.startswith(before):
        assert result.exit_code == 0, result.stdout
        assert after == source
    elif before.startswith(source):  # every kept byte is there, and more: nothing to give back
        assert result.exit_code == 0 and after == before
    else:
        assert result.exit_code == 4 and [f["code"] for f in result.json["findings"]] == ["restore-conflict"]
        assert after == before, "a file holding other bytes is left exactly as it was"
    assert before is None or after.startswith(before), "restore never removes or changes a byte"
