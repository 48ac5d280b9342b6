"""The user's cache folder worked out without platformdirs is platformdirs' answer, whatever the
environment says (toolkit/places.py): an import cache or a check cache looked for anywhere else
would be a cold cache, every night."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from toolkit import places

VALUES = st.one_of(st.none(), st.sampled_from(["", " ", "/", "//", "relative/cache", "~/cache", "/tmp/x/", "/a b/#c",
                                               "/home/ada", "/home/ada/", "/h/./x/../y", "./x"]))


def _both(monkeypatch, xdg: str | None, home: str | None) -> tuple[str, str]:
    import platformdirs

    for name, value in (("XDG_CACHE_HOME", xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    try:
        expected = platformdirs.user_cache_dir("levelsess", appauthor=False)
    except RuntimeError as exc:  # no usable home: platformdirs says so, and so do we (the same error)
        with pytest.raises(RuntimeError):
            places.user_cache_dir()
        return str(exc), str(exc)
    return places.user_cache_dir(), expected


@settings(max_examples=150)
@given(xdg=VALUES, home=VALUES)
def test_the_cache_folder_is_platformdirs_one_for_every_xdg_and_home(xdg, home):
    with pytest.MonkeyPatch.context() as monkeypatch:
        ours, theirs = _both(monkeypatch, xdg, home)
    assert ours == theirs


def test_the_cache_folder_is_platformdirs_one_in_a_fresh_process_with_the_machine_s_own_environment():
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME",)}
    code = ("import platformdirs, toolkit.places as p; "
            "print(p.user_cache_dir() == platformdirs.user_cache_dir('levelsess', appauthor=False))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_an_import_that_finds_nothing_new_does_not_load_platformdirs(tmp_path):
    code = ("import sys, toolkit.importers.unchanged as u, toolkit.fsck.incremental as i; "
            "u.cache_path(__import__('pathlib').Path('s'), 'claude', __import__('pathlib').Path('t'), None, False, False); "
            "i.cache_dir(); print('platformdirs' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == ("True" if not sys.platform.startswith("linux") else "False")
