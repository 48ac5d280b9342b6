"""``levelsess schedule``: what install or remove did (or would do), and what status read back."""

from __future__ import annotations

from ..report import Output


def render_schedule(out: Output, outcome) -> None:
    where = f"{outcome.status.scheduler} ({outcome.status.where})"
    done = {("install", True): "installed the nightly keep in", ("install", False): "the nightly keep is already installed, as it would be written, in",
            ("remove", True): "removed the nightly keep from", ("remove", False): "no nightly keep is installed in"}[outcome.action, outcome.changed]
    if outcome.dry_run and outcome.changed:
        done = "would " + ("install the nightly keep in" if outcome.action == "install" else "remove the nightly keep from")
    if outcome.text and (out.verbose or outcome.dry_run):
        out.line([(outcome.text.rstrip("\n"), None)])
    for command in outcome.ran:
        out.say(f"{'would run' if outcome.dry_run else 'ran'}: {command}")
    for note in (*outcome.notes, *([outcome.status.note] if outcome.status.note and outcome.action == "install" else [])):
        out.say(note, "yellow")
    out.say(f"{done} {where}" + ("; nothing changed" if not outcome.changed else "") + (f"; the crontab as it was: {outcome.backup}" if outcome.backup else ""))
    if outcome.todo:
        out.say(f"{outcome.status.scheduler} cannot be asked from here; to enable it, run:")
        for command in outcome.todo:
            out.line([(f"  {command}", None)], stderr=True)


def render_schedule_status(out: Output, found) -> int:
    if out.json:
        out.emit_json({"version": 1, **found.to_json(), "exit": found.exit_code})
        return found.exit_code
    if found.installed_text and not out.quiet:
        out.line([(found.installed_text.rstrip("\n"), None)])
    if not found.installed:
        out.say(f"no nightly keep is installed in {found.scheduler} ({found.where}); next: levelsess schedule install")
    elif not found.matches:
        out.say(f"the nightly keep in {found.scheduler} differs from what install would write now; next: levelsess schedule install", "yellow")
    else:
        out.say(f"the nightly keep is installed in {found.scheduler} ({found.where}) and matches what install would write"
                + ("" if found.active is not False else "; but it is not enabled: levelsess schedule install"))
    if found.note:
        out.say(found.note, "yellow")
    return found.exit_code
