"""What every kept-listing test checks, whatever the importer (test_kept_listing.py for Claude Code,
test_kept_listing_gemini.py for Gemini CLI): after each change, the kept listing gives the units a
fresh listing finds; and an import through it says and writes what an import that lists afresh does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from tests.helpers import run_cli
from toolkit.importers.unchanged import Kept, list_units, stamps, units_of


def _quiet(_finding) -> None:
    return None


def walk_changes(importer, source: Path, changes: list[tuple[str, int]], change: Callable[[str, int, Path], None],
                 as_read: Callable[[list], list]) -> None:
    """List ``source``, then after each change list it again through the listing kept (as the cache
    file holds it): the units (``as_read``: what each is to an import) are those a fresh listing
    finds, stamped alike, and the kept listing is used when no folder changed ("none", "grow")."""
    kept = Kept(None, set())
    units, _stamped, listing, listed = list_units(importer, source, _quiet, kept)
    assert not listed and listing is not None
    for kind, pick in changes:
        change(kind, pick, source)
        kept.listing = orjson.loads(orjson.dumps(listing))  # as the cache file holds it
        units, stamped, again, listed = list_units(importer, source, _quiet, kept)
        assert as_read(units) == as_read(units_of(importer, source, _quiet)), kind
        assert stamped == [stamps(unit) for unit in units]
        if kind in ("none", "grow"):
            assert listed, f"{kind}: no folder changed, and the kept listing is used"
        listing = again if again is not None else listing


def imports_alike(app: str, source: Path, store: Path, full: Path, change: Callable[[], None]) -> None:
    """``store`` and ``full`` imported ``source`` before; ``full``'s import cache is dropped after
    ``change``: both imports of the changed source say the same and write the same journals, byte for byte."""
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path

    change()
    cache_path(full, app, source, Options(), False, False).unlink()
    a = run_cli("import", "--from", app, "--source", source, "--store", store, "--json").json
    b = run_cli("import", "--from", app, "--source", source, "--store", full, "--json").json

    def said(report):
        return sorted((s["id"], s["status"], s["records"], s["new_records"], tuple(s["orphan"])) for s in report["sessions"])
    assert said(a) == said(b) and a["findings"] == b["findings"]
    journals = sorted(p.relative_to(store) for p in store.rglob("*.jsonl") if ".levelsess" not in p.parts)
    assert journals == sorted(p.relative_to(full) for p in full.rglob("*.jsonl") if ".levelsess" not in p.parts)
    assert all((store / j).read_bytes() == (full / j).read_bytes() for j in journals)
