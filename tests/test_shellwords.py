"""What levelsess prints as a command to paste reads back, in a real bash, as the very bytes of
each word: any path, UTF-8 or not (a Linux name is bytes), with quotes, backslashes, $, spaces."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit import shellwords

pytestmark = pytest.mark.skipif(not shutil.which("bash") or sys.platform == "win32", reason="needs bash")

_NAMES = st.binary(min_size=1, max_size=24).filter(lambda b: b"\0" not in b) | st.text(min_size=1, max_size=12).filter(
    lambda t: "\0" not in t).map(lambda t: os.fsdecode(t.encode("utf-8", "surrogatepass")) if not any(0xD800 <= ord(c) <= 0xDFFF for c in t) else "x")


def _bash_words(line: str) -> list[bytes]:
    """The words bash makes of ``line``, each as its bytes."""
    script = os.fsencode(line)
    done = subprocess.run([b"bash", b"-c", b'for w in ' + script + b'; do printf "%s\\0" "$w"; done'], capture_output=True, check=True)
    return done.stdout.split(b"\0")[:-1]


@settings(max_examples=60, deadline=None)
@given(names=st.lists(_NAMES.map(lambda n: os.fsdecode(n) if isinstance(n, bytes) else n), min_size=1, max_size=4))
def test_every_word_reads_back_in_bash_as_its_bytes(names):
    assert _bash_words(shellwords.join(names)) == [os.fsencode(name) for name in names]


def test_a_printable_word_is_quoted_as_shlex_quotes_it_and_one_with_a_newline_or_bytes_not_utf8_with_escapes():
    import shlex

    for word in ("plain", "a b", "it's", "ünïcode", "$HOME", ""):
        assert shellwords.quote(word) == shlex.quote(word)
    assert shellwords.quote(os.fsdecode(b"/tmp/st\xffore's")) == "$'/tmp/st\\xffore\\'s'"
    assert shellwords.quote("/tmp/new\nline ü") == "$'/tmp/new\\nline ü'"  # one line, its characters kept


def test_the_next_line_of_a_check_under_a_name_that_is_not_utf8_names_the_store_when_pasted(tmp_path):
    """fsck's "next:" line names the store: pasted into bash it must be the store's own bytes."""
    import re

    from tests.helpers import make_store, run_cli

    if sys.platform == "darwin":
        pytest.skip("needs a file system that takes any bytes in a name")
    store = make_store(Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore")) / "store", sessions=1)
    journal = next(store.rglob("*.jsonl"))
    with open(journal, "ab") as handle:
        handle.write(b'{"kind":"user","t":"2026')  # a torn tail: the check says what to run next
    result = run_cli("fsck", "--store", store)
    line = next(line for line in result.stdout.splitlines() + result.stderr.splitlines() if "levelsess fsck --repair" in line)
    command = re.search(r"`(levelsess fsck --repair [^`]*)`", line).group(1)
    assert _bash_words(command)[-1] == os.fsencode(store)


def test_a_systemd_unit_for_a_store_under_a_name_that_is_not_utf8_names_its_bytes(tmp_path, isolated_home):
    """ExecStart= holds each byte of a name that is not UTF-8 as a C escape: systemd's parser takes it,
    and reads it back as that byte."""
    from tests.helpers import run_cli

    store = Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore 100%"))
    result = run_cli("schedule", "install", "--scheduler", "systemd", "--app", "codex", "--store", store)
    assert result.exit_code == 0, result.stderr
    folder = isolated_home / ".config" / "systemd" / "user"
    service = (folder / "levelsess-keep.service").read_bytes().decode("utf-8")  # a unit file is UTF-8
    assert '"--store" "' + str(tmp_path) + '/st\\xffore 100%%"' in service
    if shutil.which("systemd-analyze"):
        verified = subprocess.run(["systemd-analyze", "verify", str(folder / "levelsess-keep.service")], capture_output=True, text=True)
        assert verified.returncode == 0, verified.stderr
