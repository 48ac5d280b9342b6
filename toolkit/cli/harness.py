"""The demo and the chaos harness: ``demo``, ``chaos run``, ``chaos writer``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from .base import App, HelpGroup, JsonOpt, QuietOpt, StoreOpt, UsageError, VerboseOpt, _output, app



@app.command()
def demo(
    ctx: typer.Context,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo store and print where it is.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Build a damaged demo store in a temporary folder, check it, repair it, check again.

    The store holds a crash-torn journal, a corrupt index.json, a stale lock and a Logician session whose meta.json ran ahead of its journal. Nothing outside the temporary folder is touched.

    [bold]Examples[/bold]:
      levelsess demo --keep
      levelsess demo --json -q
      levelsess demo -v --store ~/any   # common options are accepted; the demo never touches a store
    """
    from ..demo import build_demo, run_demo
    from ..render_cli.checks import render_demo

    out = _output(ctx, json_, quiet, verbose)
    with build_demo(keep=keep) as paths:
        out.say(f"Demo store in {paths[0].parent}: the editor was killed mid-append (torn journal), its lock\n"
                "was left behind, index.json was cut off, and a Logician meta.json ran ahead of its journal.")
        result = run_demo(paths)
        if out.json:
            out.emit_json(result.to_json())
        else:
            render_demo(out, result)
            if keep:
                out.say(f"demo store kept at {paths[0].parent}")
    return result.exit_code


chaos_app = App(cls=HelpGroup, help="The kill -9 harness: prove that no acknowledged record is lost (DESIGN.md §7).",
                        no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(chaos_app, name="chaos")


@chaos_app.command("run")
def chaos_run(
    ctx: typer.Context,
    cycles: Annotated[Optional[int], typer.Option("--cycles", metavar="N", help="Kill cycles to run (default 20, or unbounded with --duration).", min=1, show_default=False)] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", metavar="SECONDS", help="Stop starting cycles after this many seconds (the nightly run: --duration 3600).", min=0, show_default=False)] = None,
    writers: Annotated[int, typer.Option("--writers", metavar="N", help="Writer processes per cycle, each killed at its own random moment.", min=1)] = 2,
    seed: Annotated[Optional[int], typer.Option("--seed", metavar="N", help="Seed for record sizes and kill moments (default: random, printed in the report).", show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", metavar="kill|power-loss", help="kill: SIGKILL only. power-loss: also cut the power after the kills; on the default --fs disk that is simulated (each file cut back to a random offset at or past its last ACK and what it held when the cycle began, maybe zero-filled), which cannot catch a writer that ACKs before fsync: use --fs lazyfs for that.")] = "kill",
    fs: Annotated[str, typer.Option("--fs", metavar="disk|lazyfs", help="lazyfs (with --mode power-loss): run the writers on a LazyFS mount and drop every unsynced byte after the kills, a real power cut that catches a missing fsync. Needs FUSE and LazyFS (--lazyfs).")] = "disk",
    lazyfs: Annotated[Optional[str], typer.Option("--lazyfs", metavar="PATH", help="The LazyFS program for --fs lazyfs (default: $LEVELSESS_LAZYFS, else lazyfs on PATH); build it with shared/tools/build-lazyfs.sh.", show_default=False)] = None,
    layout: Annotated[str, typer.Option("--layout", metavar="levelcode|logician|both", help="Reference writers: levelcode, logician, or both (alternating).")] = "both",
    unsafe: Annotated[Optional[str], typer.Option("--unsafe", metavar="NAME", help="Run a deliberately unsafe writer the harness must catch: ack-before-write, rewrite-in-place, meta-before-append, no-fsync (ACKs after write(), never fsyncs: only --mode power-loss --fs lazyfs catches it).", show_default=False)] = None,
    shared_file: Annotated[bool, typer.Option("--shared-file", help="Put every writer on one journal (taking the lock per record).")] = False,
    no_lock: Annotated[bool, typer.Option("--no-lock", help="Writers skip the lock protocol (with --shared-file: shows what the lock buys).")] = False,
    writer_cmd: Annotated[Optional[str], typer.Option("--writer-cmd", metavar="COMMAND", help="Run this command as the writer instead; it gets LEVELSESS_CHAOS_DIR and LEVELSESS_CHAOS_SEED and prints 'ACK <relpath> <end-offset> <sha256>' per durable record (relpath from LEVELSESS_CHAOS_DIR), and nothing else, until it is killed: exiting early, any other stdout line, or no ACK at all is a violation. Its journals may go anywhere under LEVELSESS_CHAOS_DIR where a layout keeps them: LEVELSESS_CHAOS_DIR is a LevelCode store root (<slug>/<id>.jsonl), and so is its store/ folder; Logician sessions go under a workspace's .logician/sessions/sessions/<id>/messages.jsonl (the workspace may be LEVELSESS_CHAOS_DIR itself or its ws/). Every journal there is checked, repaired and compared with a fresh index; an ACK for a file the harness cannot check (another place, another format) is an 'unchecked' violation. Durable means fsync or fdatasync of the file (or O_SYNC / O_DSYNC writes): --fs lazyfs does not see sync() or syncfs().", show_default=False)] = None,
    largest: Annotated[int, typer.Option("--largest", metavar="BYTES", help="Largest record in bytes (sizes are log-uniform from ~100 B).", min=200)] = 4 << 20,
    target: Annotated[Optional[str], typer.Option("--target", metavar="fsck|reindex|migrate|import", help="Kill levelsess's own writing command instead: fsck, reindex, migrate or import (from a generated Cursor database); each rerun must converge to the uninterrupted result.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FOLDER", help="Keep a reproducer (seed, cycle, files, ACKs) here for every cycle with a violation.", show_default=False)] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary chaos folders.")] = False,
    replay: Annotated[Optional[int], typer.Option("--replay", metavar="N", help="Run cycle N's writer seeds and kill moments in every cycle, from a fresh folder (what a reproducer's repro.json says to run).", min=0, show_default=False)] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> int:
    """Start writers, SIGKILL them at random moments, repair, and prove no ACKed record was lost.

    After each cycle: every ACKed record is present, byte-identical, at its offset; a repair removed only the unacknowledged tail; no corruption error on a file whose only damage is a torn tail; caches match the journals; killed writers' locks are stale; every ACKed file was checked. The report counts, per cycle kind, where the kills (and power cuts) left each journal written: mid-record (torn), after a record but before its newline (unterminated), or between records. Exit 0 only when nothing was lost and there was no violation (else 4); 8 when the run could not be made (e.g. --fs lazyfs without LazyFS or FUSE).

    [bold]Examples[/bold]:
      levelsess chaos run --cycles 20                          # the CI smoke
      levelsess chaos run --duration 3600 --writers 4 --mode power-loss --fs lazyfs --json   # nightly
      levelsess chaos run --mode power-loss --fs lazyfs --lazyfs ~/.cache/levelsess/lazyfs/bin/lazyfs --unsafe no-fsync --cycles 10   # caught
      levelsess chaos run --unsafe rewrite-in-place --out ./repro   # watch it get caught
      levelsess chaos run --writer-cmd './my-writer --fast' --cycles 200
      levelsess chaos run --target migrate --cycles 10
      levelsess chaos run --shared-file --no-lock --layout levelcode --largest 65536 -v   # what the lock buys
      levelsess chaos run --seed 1234 --replay 7 --keep -q        # rerun a reproducer's cycle
    """
    from chaos.harness import Config, run as run_chaos
    from chaos.targets import run_target

    from ..render_cli.chaos import live_chaos, render_chaos

    out_ = _output(ctx, json_, quiet, verbose)
    _check_chaos_flags(target, layout, fs, lazyfs)
    config = Config(cycles=cycles, duration=duration, writers=writers, seed=seed if seed is not None else int.from_bytes(os.urandom(4), "big"),
                    mode=mode, fs=fs, lazyfs=lazyfs, layout=layout, unsafe=unsafe, shared_file=shared_file, no_lock=no_lock,
                    writer_cmd=writer_cmd, largest=largest, out=out, keep=keep, replay=replay)
    with live_chaos(out_) as on_cycle:
        report = run_target(config, target, on_cycle) if target else run_chaos(config, on_cycle)
    document = report.to_json(command=config.command())
    if out_.json:
        out_.emit_json(document)
    else:
        render_chaos(out_, report, document, out)
    return report.exit_code


def _check_chaos_flags(target: str | None, layout: str, fs: str, lazyfs: str | None) -> None:
    """Reject an unknown --target or --layout, and --fs / --lazyfs with --target, before any work."""
    from chaos.targets import TARGETS

    if target is not None and target not in TARGETS:
        raise UsageError(f"--target {target}: choose one of {', '.join(TARGETS)}")
    if layout not in ("levelcode", "logician", "both"):
        raise UsageError(f"--layout {layout}: choose levelcode, logician or both")
    if target is not None and (fs != "disk" or lazyfs is not None):
        raise UsageError(f"--target {target} kills levelsess's own commands on disk; drop --fs / --lazyfs")


@chaos_app.command("writer", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def chaos_writer(ctx: typer.Context) -> int:
    """Run one chaos writer (what `chaos run` starts): appends records under $LEVELSESS_CHAOS_DIR and prints an ACK line per durable record.

    Options: --name, --layout levelcode|logician, --unsafe NAME, --shared-file, --no-lock, --largest BYTES, --max-records N (see `python -m chaos.writer --help`).

    [bold]Example[/bold]: LEVELSESS_CHAOS_DIR=/tmp/c levelsess chaos writer --max-records 3
    """
    from chaos.writer import main as writer_main

    return writer_main(list(ctx.args))


# The options main_options takes before a command word: flags, and those that take a value.
