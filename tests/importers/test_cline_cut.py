"""import --from cline, property: Cline and Roo rewrite a task's JSON files whole, not atomically
(SOURCES-MORE §4.4), so a crash can leave any of them cut at any byte.  For any cut of any of
them, every element before the cut is a record, anything lost is counted under ``skipped`` and
named in an error finding on that file, nothing raises, and the sources stay byte-identical."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli
from tests.importers.cline_data import api_history, cline_storage, compact, ui_messages
from tests.importers.test_cline import TID, by_id, carried, hashes, journal
from toolkit.importers import spill
from toolkit.importers.cline import jsonfile

FILES = ("api_conversation_history.json", "ui_messages.json", "task_metadata.json", "taskHistory.json")


def _ends(elements: list) -> list[int]:
    """Where each element of a compact JSON array ends (as the fixtures write them)."""
    ends, pos = [], 1
    for element in elements:
        pos += len(compact(element))
        ends.append(pos)
        pos += 1
    return ends


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.sampled_from(FILES), fraction=st.floats(min_value=0, max_value=1), by_element=st.booleans())
@example(which="ui_messages.json", fraction=0.0, by_element=False)
@example(which="api_conversation_history.json", fraction=1.0, by_element=True)
@example(which="api_conversation_history.json", fraction=0.5, by_element=True)
@example(which="task_metadata.json", fraction=0.5, by_element=False)
def test_any_cut_of_any_task_file_keeps_every_whole_element_and_counts_the_rest(which, fraction, by_element):
    """``by_element``: as a long task's files are read (element by element, records in a temporary database)."""
    limits = jsonfile.WHOLE_BYTES, spill.RECORD_BYTES_IN_MEMORY
    if by_element:
        jsonfile.WHOLE_BYTES = spill.RECORD_BYTES_IN_MEMORY = 0
    try:
        _cut_and_import(which, fraction)
    finally:
        jsonfile.WHOLE_BYTES, spill.RECORD_BYTES_IN_MEMORY = limits


def _cut_and_import(which: str, fraction: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        app = tmp_path / "app"
        app.mkdir()
        storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
        path = storage / "state" / which if which == "taskHistory.json" else storage / "tasks" / TID / which
        data = path.read_bytes()
        cut = round(len(data) * fraction)
        path.write_bytes(data[:cut])
        before = hashes(storage)
        result = run_cli("import", "--from", "cline", "--source", storage, "--store", tmp_path / "store", "--json")
        assert "Traceback" not in result.stderr and result.exit_code in (0, 4), result.stdout[-2000:]
        assert hashes(storage) == before
        session = by_id(result)[f"cline-{TID}"]
        records = journal(Path(session["path"]))[1:]
        keys = carried(records)
        assert session["source_items"] == len(keys) + sum(session["skipped"].values())
        errors = [f for f in result.json["findings"] if f["code"] == "source-unreadable" and f["path"] == str(path)
                  and f["severity"] == "error"]
        if cut == len(data):
            assert not errors and session["skipped"] == {}
            return
        assert errors, "a cut file is named in an error finding"
        if which == "taskHistory.json":
            assert session["records"] == 17, "a cut task list loses no message"
            return
        assert session["skipped"] == {"source-unreadable": 1}
        if which == "task_metadata.json":
            assert not [r for r in records if r.get("type") == "cline-task-metadata"]
            return
        elements = api_history(cwd=str(app)) if which.startswith("api") else ui_messages()
        whole = sum(end <= cut for end in _ends(elements))
        kind = [r for r in records if (r.get("type") == "cline-ui") == (which == "ui_messages.json") and r.get("type") != "cline-task-metadata"]
        assert len(kind) == whole, (cut, whole)
        assert [r["raw"] for r in kind] == elements[:whole], "each whole element kept exactly"
