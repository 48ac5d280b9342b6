"""``levelsess doctor --bundle FILE.zip``: what support needs, and no message content, user, host or
project name.

The bundle is a zip of four JSON documents:

- ``about.json``: levelsess and Python versions, the OS (``platform.platform()``), and whether
  content and paths were included;
- ``doctor.json``: the doctor report (``levelsess doctor --json``): stores, installs, counts, next steps;
- ``findings.json``: every finding of every store doctor found (code, severity, path, line, offset,
  message; no excerpt), and for each error at an offset its damaged region: length and first and last
  32 bytes with every letter and digit masked (``x`` / ``0``): the shape of the damage
  (``{"xxxx":"xx`` then NULs) without the words;
- ``files.json``: each journal's path, size, mtime and sha256, and its lock's state, pid and host.

Unless ``include_paths``, every string in them is anonymised (:class:`Anonymiser`): the home folder
becomes ``~``, every folder or file name that is not one levelsess or the tools it reads use
(``.claude``, ``projects``, ``sessions``, a session id …) becomes ``<p1>``, ``<p2>`` … (the same name
is the same placeholder throughout one bundle), and the user name and host name become ``<user>`` and
``<host>`` wherever they appear, in paths, messages and copied bytes alike.  ``include_content``
keeps the damaged bytes (and excerpts) as they are, still anonymised.  The seed's promise: nothing
leaves the machine by default.
"""

from __future__ import annotations

import hashlib
import io
import platform
import zipfile
from pathlib import Path

from . import __version__, durable
from .anonymise import Anonymiser
from .doctor import Diagnosis
from .encode import dumps
from .fsck.check import check_folders
from .stores import discover_all

EDGE = 32


def mask(data: bytes) -> str:
    """Keep JSON structure and control bytes, hide words: letters -> x, digits -> 0."""
    out = []
    for byte in data:
        if 48 <= byte <= 57:
            out.append("0")
        elif 65 <= byte <= 90 or 97 <= byte <= 122 or byte >= 128:
            out.append("x")
        elif byte < 32 or byte == 127:
            out.append(f"\\x{byte:02x}")
        else:
            out.append(chr(byte))
    return "".join(out)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _region(path: Path, offset: int, include: bool) -> dict:
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(1 << 20)
    end = data.find(b"\n")
    region = data if end < 0 else data[:end]
    first, last = region[:EDGE], region[-EDGE:]
    show = (lambda b: b.decode("utf-8", "backslashreplace")) if include else mask
    return {"offset": offset, "length": len(region), "first": show(first), "last": show(last), "masked": not include}


def build(diagnosis: Diagnosis, include_content: bool = False, include_paths: bool = False) -> bytes:
    """The bundle's bytes (a zip archive)."""
    files, findings = [], []
    for health in diagnosis.stores:
        report = check_folders(discover_all([health.path]))
        for folder in report.folders:
            for session in folder.sessions:
                journal = session.journal
                try:
                    info = journal.stat()
                    files.append({"path": str(journal), "bytes": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": _sha256(journal),
                                  **({"lock": _lock(session.lock)} if session.lock is not None else {})})
                except OSError as exc:
                    files.append({"path": str(journal), "error": str(exc)})
        for finding in report.findings:
            item = {k: v for k, v in finding.to_json().items() if k != "excerpt"}
            if include_content and finding.excerpt:
                item["excerpt"] = finding.excerpt
            if finding.offset is not None and finding.severity == "error" and Path(finding.path).is_file():
                try:
                    item["region"] = _region(Path(finding.path), finding.offset, include_content)
                except OSError:
                    pass
            findings.append(item)
    about = {"levelsess": __version__, "python": platform.python_version(), "platform": platform.platform(),
             "include_content": include_content, "include_paths": include_paths}
    documents = {"about.json": about, "doctor.json": diagnosis.to_json(), "findings.json": findings, "files.json": files}
    if not include_paths:
        anonymiser = Anonymiser.here()
        anonymiser.learn([about, diagnosis.to_json(), files, [{k: v for k, v in f.items() if k != "region"} for f in findings]])
        anonymiser.learn([f["region"] for f in findings if "region" in f and not f["region"]["masked"]])  # masked: no names left
        documents = anonymiser.apply(documents)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, document in documents.items():
            archive.writestr(name, dumps(document, indent=True))  # (a path need not be UTF-8)
    return buffer.getvalue()


def _lock(lock) -> dict:
    return {"state": lock.state.value, "pid": lock.pid, "host": lock.host,
            "reason": lock.reason}


def write(path: Path, diagnosis: Diagnosis, include_content: bool = False, include_paths: bool = False) -> int:
    """Write the bundle atomically; return its size."""
    data = build(diagnosis, include_content, include_paths)
    with durable.output_writer(path) as handle:
        handle.write(data)
    return len(data)
