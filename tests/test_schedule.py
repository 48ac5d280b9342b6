"""`levelsess schedule install|remove|status`: the nightly keep, installed by levelsess itself and
read back from what the scheduler holds.  Every scheduler goes through the same round trip:
install -> status says installed and matching -> install again changes no byte -> remove ->
status says not installed -> the user's own crontab lines are byte-identical.

The crontab is reached through ``$LEVELSESS_CRONTAB``: a shim script (a real process, with
crontab's own ``-l`` / ``FILE`` interface and its "no crontab for" answer) that keeps the table
in a file of the test's, so no test touches the real user's crontab.  The one test that uses the
real ``crontab`` runs only in CI (``CI=true``), and puts the table back as it found it.
"""

from __future__ import annotations

import os
import sys
import plistlib
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import on_a_terminal, run_cli
from toolkit import schedule

REPO = Path(__file__).resolve().parents[1]
CLAUDE = REPO.parent.parent / "shared" / "fixtures" / "claude-code" / "projects"
if not CLAUDE.is_dir():
    CLAUDE = Path("/work/shared/fixtures/claude-code/projects")

USER_CRONTAB = ("# my own jobs: levelsess must leave every byte of these alone\n"
                "MAILTO=ada@example.com\n"
                "0 1 * * * /usr/bin/backup --label 'nightly %d' > /dev/null 2>&1\n"
                "\n"
                "@reboot echo 'levelsess nightly keep' >> /tmp/boot.log\n")


def _shim(folder: Path) -> tuple[Path, Path]:
    """A crontab program keeping its table in ``folder/table`` (crontab's interface: -l, FILE)."""
    table = folder / "table"
    shim = folder / "crontab-shim"
    shim.write_text("#!/bin/sh\n"
                    f"table={shlex.quote(str(table))}\n"
                    'case "$1" in\n'
                    '  -l) if [ -f "$table" ]; then cat "$table"; exit 0; fi\n'
                    '      echo "no crontab for $(id -un)" >&2; exit 1;;\n'
                    '  -*) echo "crontab: unsupported $1" >&2; exit 2;;\n'
                    '  *) cat "$1" > "$table.tmp" && mv "$table.tmp" "$table";;\n'
                    "esac\n")
    shim.chmod(0o755)
    return shim, table


@pytest.fixture
def crontab(tmp_path, monkeypatch) -> Path:
    """The shim's table file (absent: no crontab yet)."""
    folder = tmp_path / "cron"
    folder.mkdir()
    shim, table = _shim(folder)
    monkeypatch.setenv("LEVELSESS_CRONTAB", str(shim))
    return table


@pytest.fixture
def claude_home(isolated_home) -> Path:
    root = isolated_home / ".claude"
    shutil.copytree(CLAUDE, root / "projects")
    return root


def _state(scheduler: str, home: Path, table: Path) -> dict[str, tuple[bytes, int]]:
    """Every byte (and mtime) the scheduler's job lives in."""
    if scheduler == "cron":
        paths = [table]
    else:
        paths = list(schedule.scheduler(scheduler).files(schedule._EMPTY))
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in paths if p.exists()}


class TestEveryScheduler:
    """The round trip, read back from what each scheduler holds (files here: systemctl --user,
    launchctl and schtasks cannot be asked on this machine, and the result says so)."""

    @pytest.mark.parametrize("scheduler", schedule.SCHEDULERS)
    def test_install_reinstall_remove_round_trip(self, scheduler, crontab, isolated_home, tmp_path):
        crontab.write_text(USER_CRONTAB)
        store = tmp_path / "my store"
        args = ("--scheduler", scheduler, "--app", "claude", "--app", "codex", "--at", "2:05", "--store", store)
        first = run_cli("schedule", "install", *args, "--json")
        assert first.exit_code == 0, first.stderr
        assert first.json["changed"] is True and first.json["status"]["installed"] and first.json["status"]["matches"]
        status = run_cli("schedule", "status", "--scheduler", scheduler, "--json")
        assert status.exit_code == 0 and status.json["installed"] and status.json["matches"]
        assert status.json["apps"] == ["claude", "codex"] and status.json["at"] == "02:05"
        assert status.json["store"] == str(store) and status.json["installed_text"] == status.json["expected_text"]
        before = _state(scheduler, isolated_home, crontab)
        again = run_cli("schedule", "install", *args)
        assert again.exit_code == 0 and "nothing changed" in again.stderr
        assert _state(scheduler, isolated_home, crontab) == before, "a second install changes no byte"
        bare = run_cli("schedule", "install", "--scheduler", scheduler)  # the recorded arguments: the same job
        assert bare.exit_code == 0 and "nothing changed" in bare.stderr and _state(scheduler, isolated_home, crontab) == before
        removed = run_cli("schedule", "remove", "--scheduler", scheduler, "--json")
        assert removed.exit_code == 0 and removed.json["changed"] is True
        gone = run_cli("schedule", "status", "--scheduler", scheduler, "--json")
        assert gone.exit_code == 4 and gone.json["installed"] is False
        assert run_cli("schedule", "remove", "--scheduler", scheduler).stderr.strip().endswith("nothing changed")
        assert crontab.read_text() == USER_CRONTAB, "the user's own crontab lines are byte-identical"
        if scheduler != "cron":
            assert _state(scheduler, isolated_home, crontab) == {}

    @pytest.mark.parametrize("scheduler", schedule.SCHEDULERS)
    def test_a_dry_run_changes_nothing(self, scheduler, crontab, isolated_home, tmp_path):
        crontab.write_text(USER_CRONTAB)
        before = _state(scheduler, isolated_home, crontab)
        result = run_cli("schedule", "install", "--scheduler", scheduler, "--app", "claude", "--store", tmp_path / "s", "--dry-run")
        assert result.exit_code == 0 and "would install" in result.stderr and schedule.MARK[2:] in result.stdout
        assert _state(scheduler, isolated_home, crontab) == before
        assert not (isolated_home / ".local" / "share" / "levelsess" / "schedule").exists()

    @pytest.mark.parametrize("scheduler", ["systemd", "launchd", "schtasks"])
    def test_a_file_levelsess_did_not_write_is_refused_and_kept(self, scheduler, isolated_home, tmp_path):
        path = next(iter(schedule.scheduler(scheduler).files(schedule._EMPTY)))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"my own unit\n")
        result = run_cli("schedule", "install", "--scheduler", scheduler, "--app", "claude", "--store", tmp_path / "s")
        assert result.exit_code == 8 and "not written by levelsess" in result.stderr
        assert run_cli("schedule", "remove", "--scheduler", scheduler).exit_code == 8
        assert path.read_bytes() == b"my own unit\n"


class TestCrontab:
    def test_the_block_sits_between_the_markers_and_its_line_runs_the_import(self, crontab, claude_home, tmp_path):
        """Follow the installed line to its end: run it as cron would (``\\%`` -> ``%``, /bin/sh)."""
        store = tmp_path / "50% store"  # cron reads a bare % as a newline: it must be escaped
        assert run_cli("schedule", "install", "--app", "claude", "--at", "23:59", "--store", store).exit_code == 0
        lines = crontab.read_text().splitlines()
        start, end = lines.index(schedule.MARK), lines.index(schedule.END)
        jobs = [line for line in lines[start:end] if not line.startswith("#")]
        assert len(jobs) == 1 and jobs[0].split(" ", 5)[:5] == ["59", "23", "*", "*", "*"]
        command = jobs[0].split(" ", 5)[5]
        argv = shlex.split(command.replace("\\%", "%"))
        assert Path(argv[0]).is_absolute() and argv[argv.index("--store") + 1] == str(store)
        assert argv[argv.index("--source") + 1] == str(claude_home)
        env = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}  # cron's bare environment
        ran = subprocess.run(["/bin/sh", "-c", command.replace("\\%", "%")], env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr
        kept = sorted(p.relative_to(store) for p in store.glob("*/claude-*.jsonl"))
        direct = tmp_path / "direct"
        assert run_cli("import", "--from", "claude", "--source", claude_home, "--store", direct).exit_code == 0
        assert kept and kept == sorted(p.relative_to(direct) for p in direct.glob("*/claude-*.jsonl")), ran.stderr

    @pytest.mark.skipif(sys.platform == "darwin", reason="needs a file system that takes any bytes in a name")
    def test_a_store_under_a_name_that_is_not_utf8_is_kept_by_its_bytes_and_the_line_runs(self, crontab, claude_home, tmp_path):
        """A Linux name is bytes: the crontab holds the store's bytes in sh's quotes, reads back the
        same (status: installed and current), and the line, run by /bin/sh, keeps into that store."""
        store = Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore"))
        assert run_cli("schedule", "install", "--app", "claude", "--store", store).exit_code == 0
        assert b"st\xffore" in crontab.read_bytes()
        status = run_cli("schedule", "status", "--app", "claude", "--store", store, "--json").json
        assert status["installed"] and status["matches"], status
        line = next(l for l in crontab.read_bytes().splitlines() if b"levelsess" in l and not l.startswith(b"#"))
        env = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
        ran = subprocess.run([b"/bin/sh", b"-c", line.split(b" ", 5)[5].replace(b"\\%", b"%")], env=env, capture_output=True, timeout=300)
        assert ran.returncode == 0, ran.stderr
        assert list(store.glob("*/claude-*.jsonl"))

    def test_a_machine_with_cline_gets_its_import_in_the_job_and_it_runs(self, crontab, claude_home, isolated_home, tmp_path):
        """`import --from cline` joins the nightly keep: found by default, read back, and its line runs."""
        from tests.importers.cline_data import cline_storage

        storage = cline_storage(isolated_home / ".config", ["1787306400123", "1787306500123"])
        store = tmp_path / "store"
        assert run_cli("schedule", "install", "--store", store).exit_code == 0  # no --app: every app found here
        status = run_cli("schedule", "status", "--json")
        assert status.exit_code == 0 and status.json["matches"], status.stderr
        assert "cline" in status.json["apps"] and "claude" in status.json["apps"]
        cline = next(c for c in status.json["commands"] if c[c.index("--from") + 1] == "cline")
        assert cline[cline.index("--source") + 1] == str(storage)
        lines = crontab.read_text().splitlines()
        job = next(line for line in lines[lines.index(schedule.MARK):lines.index(schedule.END)] if not line.startswith("#"))
        assert shlex.join(cline).replace("%", "\\%") in job
        env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}  # cron's bare environment
        ran = subprocess.run(cline, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr
        assert sorted(p.name for p in store.glob("*/cline-*.jsonl")) == ["cline-1787306400123.jsonl", "cline-1787306500123.jsonl"]
        assert run_cli("schedule", "install", "--app", "cline", "--store", store, "--dry-run").exit_code == 0

    def test_the_crontab_as_it_was_is_saved_before_it_is_replaced(self, crontab, isolated_home, tmp_path):
        crontab.write_text(USER_CRONTAB)
        result = run_cli("schedule", "install", "--app", "codex", "--store", tmp_path / "s", "--json")
        assert Path(result.json["backup"]).read_text() == USER_CRONTAB

    def test_another_install_replaces_the_one_block(self, crontab, tmp_path):
        crontab.write_text(USER_CRONTAB)
        run_cli("schedule", "install", "--app", "claude", "--store", tmp_path / "s")
        run_cli("schedule", "install", "--app", "codex", "--at", "04:30", "--store", tmp_path / "s")
        text = crontab.read_text()
        assert text.count(schedule.MARK) == 1 and "--from codex" in text and "--from claude" not in text
        assert text.startswith(USER_CRONTAB)
        status = run_cli("schedule", "status", "--json")
        assert status.exit_code == 0 and status.json["apps"] == ["codex"] and status.json["at"] == "04:30"
        other = run_cli("schedule", "status", "--at", "05:00", "--json")
        assert other.exit_code == 4 and other.json["installed"] and not other.json["matches"]
        run_cli("schedule", "install", "--app", "claude")  # what it leaves out (time, store) stays as installed
        kept = run_cli("schedule", "status", "--json").json
        assert (kept["apps"], kept["at"], kept["store"]) == (["claude"], "04:30", str(tmp_path / "s"))

    def test_markers_that_are_not_one_block_are_refused_and_nothing_changes(self, crontab, tmp_path):
        broken = USER_CRONTAB + schedule.MARK + "\n17 3 * * * something\n"
        crontab.write_text(broken)
        for args in (("install", "--app", "claude", "--store", tmp_path / "s"), ("remove",), ("status",)):
            result = run_cli("schedule", *args)
            assert result.exit_code == 8 and "marker" in result.stderr
        assert crontab.read_text() == broken

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(lines=st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60), max_size=6),
           ends_with_newline=st.booleans())
    def test_any_users_crontab_is_given_back_line_for_line(self, lines, ends_with_newline, crontab, tmp_path):
        text = "\n".join(lines) + ("\n" if ends_with_newline and lines else "")
        crontab.write_bytes(text.encode())
        backend = schedule.Cron()
        schedule.install(backend, ["claude"], "01:00", tmp_path / "s", tmp_path / "s")
        assert backend.status(schedule._EMPTY).installed
        schedule.remove(backend)
        after = crontab.read_bytes().decode()
        assert after.splitlines() == text.splitlines()
        assert after == text or (not ends_with_newline and after == text + "\n")  # cron needs the last newline


@pytest.mark.skipif(os.environ.get("CI") != "true" or not shutil.which("crontab"),
                    reason="the real crontab is only used in CI (CI=true): it is the user's own table")
class TestRealCrontab:
    def test_round_trip_with_the_real_crontab_keeps_the_table(self, tmp_path, monkeypatch):
        monkeypatch.delenv("LEVELSESS_CRONTAB", raising=False)
        listed = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
        original = listed.stdout if listed.returncode == 0 else None
        saved = tmp_path / "original"
        saved.write_text((original or "") + USER_CRONTAB)
        subprocess.run(["crontab", str(saved)], check=True)
        try:
            assert run_cli("schedule", "install", "--scheduler", "cron", "--app", "claude", "--store", tmp_path / "s").exit_code == 0
            assert schedule.MARK in subprocess.run(["crontab", "-l"], capture_output=True, text=True).stdout
            assert run_cli("schedule", "status", "--scheduler", "cron").exit_code == 0
            assert "nothing changed" in run_cli("schedule", "install", "--scheduler", "cron").stderr
            assert run_cli("schedule", "remove", "--scheduler", "cron").exit_code == 0
            assert run_cli("schedule", "status", "--scheduler", "cron").exit_code == 4
            assert subprocess.run(["crontab", "-l"], capture_output=True, text=True).stdout == saved.read_text()
        finally:
            if original is None:
                subprocess.run(["crontab", "-r"], capture_output=True)
            else:
                saved.write_text(original)
                subprocess.run(["crontab", str(saved)], check=True)


def _systemd_words(line: str) -> list[str]:
    """The words of an ExecStart= line as systemd reads them (quoted words, C escapes, %% and $$)."""
    import re

    words = re.findall(r'"((?:[^"\\]|\\.)*)"', line)
    return [re.sub(r"\\(.)", r"\1", w).replace("%%", "%").replace("$$", "$") for w in words]


def _systemctl_user_works() -> bool:
    return bool(shutil.which("systemctl")) and subprocess.run(["systemctl", "--user", "show-environment"],
                                                             capture_output=True).returncode == 0


class TestSystemd:
    def test_the_units_run_each_import_and_fire_at_the_time(self, isolated_home, tmp_path):
        store = tmp_path / "a $HOME store 100%"  # systemd expands $ and % specifiers: both escaped
        result = run_cli("schedule", "install", "--scheduler", "systemd", "--app", "claude", "--app", "codex", "--at", "06:45",
                         "--store", store, "--json")
        folder = isolated_home / ".config" / "systemd" / "user"
        service = (folder / "levelsess-keep.service").read_text()
        timer = (folder / "levelsess-keep.timer").read_text()
        assert "OnCalendar=*-*-* 06:45:00" in timer and "Persistent=true" in timer and "WantedBy=timers.target" in timer
        execs = [line[len("ExecStart=-"):] for line in service.splitlines() if line.startswith("ExecStart=")]
        unescaped = [_systemd_words(e) for e in execs]
        assert [u[u.index("--from") + 1] for u in unescaped] == ["claude", "codex"]
        assert all(u[u.index("--store") + 1] == str(store) and Path(u[0]).is_absolute() for u in unescaped)
        if shutil.which("systemd-analyze"):  # systemd's own parser: quoting, specifiers, the calendar spec
            verified = subprocess.run(["systemd-analyze", "verify", str(folder / "levelsess-keep.service"),
                                       str(folder / "levelsess-keep.timer")], capture_output=True, text=True)
            assert verified.returncode == 0, verified.stderr
        if not _systemctl_user_works():
            assert result.json["todo"] == ["systemctl --user daemon-reload", "systemctl --user enable --now levelsess-keep.timer"]
            assert result.json["status"]["active"] is None

    @pytest.mark.skipif(not _systemctl_user_works(), reason="systemctl --user does not answer here (no user manager)")
    def test_real_systemctl_enables_and_disables_the_timer(self, tmp_path):
        assert run_cli("schedule", "install", "--scheduler", "systemd", "--app", "claude", "--store", tmp_path / "s").exit_code == 0
        assert subprocess.run(["systemctl", "--user", "is-enabled", "levelsess-keep.timer"], capture_output=True, text=True).stdout.strip() == "enabled"
        assert run_cli("schedule", "remove", "--scheduler", "systemd").exit_code == 0
        assert subprocess.run(["systemctl", "--user", "is-enabled", "levelsess-keep.timer"], capture_output=True).returncode != 0


class TestLaunchdAndTaskScheduler:
    def test_the_plist_is_what_launchd_reads(self, isolated_home, tmp_path):
        store = tmp_path / "s & <t>"
        run_cli("schedule", "install", "--scheduler", "launchd", "--app", "claude", "--at", "07:08", "--store", store)
        plist = plistlib.loads((isolated_home / "Library" / "LaunchAgents" / "dev.levelsess.keep.plist").read_bytes())
        assert plist["Label"] == "dev.levelsess.keep" and plist["StartCalendarInterval"] == {"Hour": 7, "Minute": 8}
        argv = plist["ProgramArguments"]
        assert Path(argv[0]).is_absolute() and argv[argv.index("--store") + 1] == str(store)
        run_cli("schedule", "install", "--scheduler", "launchd", "--app", "claude", "--app", "codex", "--store", store)
        plist = plistlib.loads((isolated_home / "Library" / "LaunchAgents" / "dev.levelsess.keep.plist").read_bytes())
        assert plist["ProgramArguments"][:2] == ["/bin/sh", "-c"]
        assert [shlex.split(c)[3] for c in plist["ProgramArguments"][2].split("; ")] == ["claude", "codex"]

    def test_the_task_xml_holds_one_action_per_import(self, isolated_home, tmp_path):
        store = tmp_path / "a b"
        result = run_cli("schedule", "install", "--scheduler", "schtasks", "--app", "claude", "--app", "codex", "--at", "09:10",
                         "--store", store, "--json")
        path = isolated_home / ".local" / "share" / "levelsess" / "schedule" / "levelsess-keep.xml"
        data = path.read_bytes()
        assert data.startswith(b"\xff\xfe")  # UTF-16 with its BOM, as schtasks /XML expects
        root = ET.fromstring(data.decode("utf-16"))
        ns = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
        assert root.find(".//t:StartBoundary", ns).text.endswith("T09:10:00")
        actions = root.findall(".//t:Exec", ns)
        assert len(actions) == 2 and all(Path(a.find("t:Command", ns).text).is_absolute() for a in actions)
        assert f'--store "{store}"' in actions[0].find("t:Arguments", ns).text
        if not shutil.which("schtasks"):
            assert result.json["todo"] == [subprocess.list2cmdline(["schtasks", "/Create", "/TN", "levelsess keep", "/XML", str(path), "/F"])]
            assert result.json["todo"][0].startswith('schtasks /Create /TN "levelsess keep" /XML ')


class TestUsage:
    @pytest.mark.parametrize("args", [("sometimes",), ("install", "--at", "25:00"), ("install", "--at", "3pm"),
                                      ("install", "--app", "emacs"), ("install", "--scheduler", "at"),
                                      ("status", "--dry-run"), ("remove", "--app", "claude"), ("remove", "--at", "01:00")])
    def test_bad_arguments_are_a_usage_error_and_touch_nothing(self, args, crontab, isolated_home):
        result = run_cli("schedule", *args)
        assert result.exit_code == 16 and "error:" in result.stderr and "Traceback" not in result.stderr
        assert not crontab.exists() and not (isolated_home / ".config" / "systemd").exists()

    def test_install_with_nothing_to_keep_says_to_name_an_app(self, crontab):
        result = run_cli("schedule", "install")
        assert result.exit_code == 16 and "--app" in result.stderr and not crontab.exists()

    def test_a_crontab_that_fails_is_an_operational_error(self, tmp_path, monkeypatch):
        failing = tmp_path / "crontab"
        failing.write_text("#!/bin/sh\necho 'crontab: cannot open spool' >&2\nexit 1\n")
        failing.chmod(0o755)
        monkeypatch.setenv("LEVELSESS_CRONTAB", str(failing))
        result = run_cli("schedule", "install", "--app", "claude", "--store", tmp_path / "s")
        assert result.exit_code == 8 and "cannot open spool" in result.stderr


class TestDoctorNamesTheCommand:
    def test_doctor_prints_schedule_install_and_following_it_ends_the_advice(self, crontab, claude_home, tmp_path):
        store = tmp_path / "store"
        empty = tmp_path / "empty"
        empty.mkdir()
        before = run_cli("doctor", "--json", "--store", store, empty)
        nightly = next(i for i in before.json["installs"] if i["app"] == "claude-code")["nightly"]
        assert nightly["installed"] is False and nightly["scheduler"] == "cron"
        step = next(s for s in before.json["next"] if "levelsess schedule install" in s)
        command = shlex.split(step.split("  #")[0])
        assert command == ["levelsess", "schedule", "install", "--app", "claude", "--store", str(store)]
        assert run_cli(*command[1:]).exit_code == 0
        assert run_cli("schedule", "status").exit_code == 0
        after = run_cli("doctor", "--json", "--store", store, empty)
        assert next(i for i in after.json["installs"] if i["app"] == "claude-code")["nightly"]["installed"] is True
        assert not any("schedule install" in s for s in after.json["next"])

    def test_a_narrow_terminal_gets_the_command_on_one_line(self, crontab, claude_home, tmp_path):
        store = tmp_path / "a store folder with a long name"
        empty = tmp_path / "empty"
        empty.mkdir()
        code, shown = on_a_terminal("doctor", "--store", str(store), str(empty), env={"COLUMNS": "40", "NO_COLOR": "1"})
        assert code == 0
        lines = [line for line in shown.replace("\r\n", "\n").split("\n") if "levelsess schedule install" in line]
        assert len(lines) == 1, shown
        assert shlex.split(lines[0].strip().split("  #")[0]) == ["levelsess", "schedule", "install", "--app", "claude",
                                                               "--store", str(store)]
