"""Golden cases for every row of DESIGN.md §2.4 (plus the §2.2/§2.3 caches), both layouts.

Each folder under ``tests/data/golden/`` is one case, discovered automatically; see
``tests/data/golden/README.md`` for the format.  For every case this test:

1. builds the files in ``tmp_path`` (``files`` from case.json, then ``input/``, then
   ``symlinks``, ``generate`` and ``mtimes``), optionally runs ``levelsess reindex`` first;
2. ``fsck --json TARGET``: exit code and the multiset of (code, line, offset) must match, and
   the check must not change, touch or create anything;
3. ``fsck --repair --json TARGET``: exit code, repaired / unrepaired codes, and every file must
   end up exactly as ``changed`` says (all other files byte- and mtime-identical, no new files
   except what ``changed`` names and the recovery files); bytes trimmed from a journal must
   be saved, exactly, in one ``<name>.<stamp>.tail`` under ``recovered_dir``;
4. a second ``fsck --repair`` must change nothing at all and exit like the final check;
5. a final ``fsck --json TARGET`` must match ``after``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tests.helpers import run_cli, snapshot

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden"
KEYS = {"layout", "description", "target", "reindex_first", "recovered_dir", "files", "symlinks", "generate",
        "mtimes", "check", "repair", "after", "xfail"}


def _load(folder: Path) -> dict:
    return json.loads((folder / "case.json").read_text(encoding="utf-8"))


def _cases():
    params = []
    for folder in sorted(p for p in GOLDEN.iterdir() if (p / "case.json").is_file()):
        spec = _load(folder)
        marks = []
        if "xfail" in spec:
            xfail = spec["xfail"]
            marks.append(pytest.mark.xfail(reason=xfail["reason"], strict=xfail.get("strict", True)))
        params.append(pytest.param(folder, id=folder.name, marks=marks))
    return params


CASES = _cases()


def test_golden_cases_exist_and_are_well_formed():
    assert len(CASES) >= 40
    for param in CASES:
        folder = param.values[0]
        spec = _load(folder)
        assert set(spec) <= KEYS, (folder.name, set(spec) - KEYS)
        assert spec["layout"] in ("levelcode", "logician"), folder.name
        assert spec["description"] and spec["target"], folder.name
        for section in ("check", "repair", "after"):
            assert "exit" in spec[section], (folder.name, section)
        if "xfail" in spec:
            assert spec["xfail"]["reason"].startswith("BUG: ") and spec["xfail"].get("strict", True) is True, folder.name


# --- building a case ------------------------------------------------------------------------


def _build(folder: Path, spec: dict, root: Path) -> None:
    for rel, content in spec.get("files", {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
    if (folder / "input").is_dir():
        shutil.copytree(folder / "input", root, dirs_exist_ok=True, symlinks=True)
    for rel, target in spec.get("symlinks", {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
    oversize = spec.get("generate", {}).get("oversize")
    if oversize:
        _pad(root / oversize["path"], oversize["size"], oversize["record"])
    for rel, seconds in spec.get("mtimes", {}).items():
        os.utime(root / rel, (seconds, seconds), follow_symlinks=False)


def _pad(path: Path, size: int, record: dict) -> None:
    """Append one record whose "$PAD" string is sized so the file ends up exactly ``size`` bytes."""
    data = path.read_bytes()
    template = orjson.dumps(record)
    assert template.count(b"$PAD") == 1
    pad = size - len(data) - (len(template) - len(b"$PAD")) - 1
    assert pad > 0
    with open(path, "ab") as handle:
        handle.write(template.replace(b"$PAD", b"x" * pad) + b"\n")
    assert path.stat().st_size == size


#: Not part of a case: snapshots still prove a check never writes them and a second repair never rewrites them.
VOUCHED = re.compile(r"(^|/)\.levelsess/verified/[^/]+\.json$")


def _tree(root: Path) -> dict[str, bytes | tuple[str, str]]:
    """Every file (not folder) under ``root``: its bytes, or ("symlink", target) for a link."""
    out: dict[str, bytes | tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [n for n in dirnames if (Path(dirpath) / n).is_symlink()]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if VOUCHED.search(rel):  # levelsess's own note of the index it wrote (toolkit/verified.py)
                continue
            out[rel] = ("symlink", os.readlink(path)) if path.is_symlink() else path.read_bytes()
    return out


def _substitute(value, root: Path):
    if isinstance(value, str):
        return value.replace("$ROOT", str(root))
    if isinstance(value, list):
        return [_substitute(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, root) for k, v in value.items()}
    return value


# --- comparing ------------------------------------------------------------------------------


def _findings_key(findings) -> Counter:
    return Counter((f["code"], f.get("line"), f.get("offset")) for f in findings)


def _fsck(root: Path, target: str, *extra: str):
    result = run_cli("fsck", *extra, "--json", str(root / target))
    try:
        doc = result.json
    except orjson.JSONDecodeError as exc:
        raise AssertionError(f"fsck {' '.join(extra)} did not print JSON (exit {result.exit_code}):\n"
                             f"{result.stdout}\n{result.stderr}") from exc
    assert doc["exit"] == result.exit_code
    return result.exit_code, doc


def _describe(doc: dict) -> str:
    return "\n".join(f"  {f['code']} line={f['line']} offset={f['offset']} repaired={f['repaired']}: {f['message']}"
                     for f in doc["findings"]) or "  (no findings)"


def _expected_after_repair(spec: dict, before: dict, root: Path) -> dict:
    """Return {relpath: expected bytes | ("symlink", target) | ("json", value, ignore)}."""
    expected = dict(before)
    for rel, change in spec["repair"].get("changed", {}).items():
        if change is None:
            assert rel in before, f"changed[{rel!r}] is null (unchanged) but the case has no such file"
        elif isinstance(change, str):
            expected[rel] = change.encode("utf-8")
        elif "truncate" in change:
            expected[rel] = before[rel][: change["truncate"]]
        elif "append" in change:
            expected[rel] = before[rel] + change["append"].encode("utf-8")
        elif "json" in change:
            expected[rel] = ("json", _substitute(change["json"], root), tuple(change.get("ignore", ())))
        else:
            raise AssertionError(f"unknown change for {rel}: {change!r}")
    return expected


def _check_json(rel: str, actual: bytes, value, ignore: tuple[str, ...]) -> None:
    got = orjson.loads(actual)
    if ignore:
        assert isinstance(got, dict), f"{rel}: expected a JSON object, got {got!r}"
        for key in ignore:
            assert key in got, f"{rel}: {key!r} missing"
        got = {k: v for k, v in got.items() if k not in ignore}
        value = {k: v for k, v in value.items() if k not in ignore}
    assert got == value, f"{rel} after repair:\n{json.dumps(got, indent=2)}\nexpected:\n{json.dumps(value, indent=2)}"


# --- the test -------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", CASES)
def test_golden(folder: Path, tmp_path: Path):
    spec = _load(folder)
    root = tmp_path / "case"
    root.mkdir()
    _build(folder, spec, root)
    target = spec["target"]
    recovered_dir = spec.get("recovered_dir")

    if spec.get("reindex_first"):
        result = run_cli("reindex", str(root / target))
        assert result.exit_code == 0, f"reindex before the check failed:\n{result.stdout}\n{result.stderr}"

    # 1. check: findings and exit, and read-only
    before_snap = snapshot(root)
    before = _tree(root)
    code, doc = _fsck(root, target)
    want = spec["check"]
    assert (code, _findings_key(doc["findings"])) == (want["exit"], _findings_key(want["findings"])), \
        f"check of {target}:\n{_describe(doc)}"
    if "records" in want:
        assert doc["records"] == want["records"], "records read by the check"
    assert snapshot(root) == before_snap, "a check without --repair changed, touched or created something"

    # 2. repair
    code, doc = _fsck(root, target, "--repair")
    want = spec["repair"]
    repaired = sorted(f["code"] for f in doc["findings"] if f["repaired"])
    unrepaired = sorted(f["code"] for f in doc["findings"] if not f["repaired"])
    assert (code, repaired, unrepaired) == (want["exit"], sorted(want["repaired"]), sorted(want["unrepaired"])), \
        f"repair of {target}:\n{_describe(doc)}"
    after = _tree(root)
    after_snap = snapshot(root)
    expected = _expected_after_repair(spec, before, root)
    trimmed: dict[str, bytes] = {}
    for rel, exp in expected.items():
        assert rel in after, f"{rel} disappeared during repair"
        if isinstance(exp, tuple) and exp[0] == "json":
            _check_json(rel, after[rel], exp[1], exp[2])
            continue
        assert after[rel] == exp, f"{rel} after repair is not as expected"
        if rel in before and exp == before[rel]:
            assert after_snap[rel] == before_snap[rel], f"{rel} kept its bytes but was rewritten (mtime changed)"
        elif isinstance(exp, bytes) and isinstance(before.get(rel), bytes) and before[rel].startswith(exp):
            trimmed[rel] = before[rel][len(exp):]
    extra = sorted(set(after) - set(expected))
    tails = [rel for rel in extra if recovered_dir and rel.startswith(recovered_dir + "/") and rel.endswith(".tail")]
    replaced_dir = recovered_dir and recovered_dir.rsplit("/", 1)[0] + "/replaced/"
    replaced = [rel for rel in extra if replaced_dir and rel.startswith(replaced_dir)]  # a replaced meta.json's bytes
    for rel in replaced:
        cache = next(r for r in before if r.endswith("/" + Path(rel).name.split(".20")[0]))
        assert after[rel] == before[cache], f"{rel} does not hold the bytes {cache} had"
    tails += replaced
    tails_to_match = [t for t in tails if t not in replaced]
    assert sorted(set(extra) - set(tails)) == [], "repair left files nobody asked for"
    for rel, removed in trimmed.items():
        name = Path(rel).name
        saved = [t for t in tails_to_match if re.fullmatch(re.escape(name) + r"\.\d{8}T\d{6}(\.\d+)?Z\.tail", Path(t).name)]
        assert len(saved) == 1, f"expected one recovery file for {rel} under {recovered_dir}, found {tails}"
        assert Path(saved[0]).parent.name == Path(rel).parent.name, "a recovery file's folder names its session's folder"
        assert after[saved[0]] == removed, f"{saved[0]} does not hold exactly the bytes trimmed from {rel}"
        tails_to_match.remove(saved[0])
    assert tails_to_match == [], f"recovery files for nothing that was trimmed: {tails_to_match}"

    # 3. a second repair writes nothing
    code2, doc2 = _fsck(root, target, "--repair")
    assert snapshot(root) == after_snap, f"a second --repair changed something:\n{_describe(doc2)}"

    # 4. the final check
    code, doc = _fsck(root, target)
    want = spec["after"]
    assert (code, sorted(f["code"] for f in doc["findings"])) == (want["exit"], sorted(want["codes"])), \
        f"check after repair:\n{_describe(doc)}"
    assert code2 == want["exit"], f"a second --repair should find nothing left to correct:\n{_describe(doc2)}"
