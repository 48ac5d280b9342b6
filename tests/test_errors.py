"""The error hierarchy: every class documents its message and names its exit code."""

from __future__ import annotations

import toolkit.errors as errors
from toolkit.errors import CODES, CorruptionError, LevelsessError
from toolkit.findings import Finding


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_error_class_has_a_template_and_an_exit_code():
    for cls in [LevelsessError, *_subclasses(LevelsessError)]:
        assert cls.__doc__ and cls.__doc__.strip(), cls
        assert cls.exit_code in (1, 4, 8, 16, 32), cls
        assert str(cls("detail")), cls


def test_every_corruption_class_has_a_registered_code():
    for cls in _subclasses(CorruptionError):
        assert cls.code in CODES, cls
        assert CODES[cls.code].error is cls


def test_every_code_becomes_a_typed_error_with_location():
    for code, info in CODES.items():
        assert info.severity in ("error", "warning")
        error = Finding(code, info.severity, "/x.jsonl", 3, 120, "msg", "excerpt").to_error()
        assert isinstance(error, LevelsessError)
        if isinstance(error, CorruptionError):
            assert (error.path, error.line, error.offset) == ("/x.jsonl", 3, 120)
            assert "/x.jsonl:3" in str(error) and "120" in str(error)


def test_uncorrectable_codes_have_no_repair():
    for code in errors.UNCORRECTABLE:
        assert not CODES[code].repair


def test_every_code_is_documented_in_the_readme():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in CODES:
        assert f"`{code}`" in readme, code


def _every_error() -> list[LevelsessError]:
    """An instance of every error class, made with each field its class takes."""
    made = []
    for cls in [LevelsessError, *_subclasses(LevelsessError)]:
        made.append(cls("a detail"))
        made.append(cls("a detail", hint="a hint of its own"))
        if issubclass(cls, CorruptionError):
            made.append(cls("a detail", path="/s/a.jsonl", line=7, offset=812, excerpt='{"kind":', hint="look"))
        if issubclass(cls, errors.SymlinkedFolderError):
            made.append(cls("a detail", link="/s/link", target="/elsewhere"))
    return made


def test_every_error_is_the_same_error_once_pickled():
    """A forked worker's error comes to the parent pickled (fsck --jobs, an import's reindex): it must
    say what it said there.  An exception is rebuilt from its message by default, which printed
    `not a journal: not a journal: ...` and lost a hint of its own."""
    import pickle

    for error in _every_error():
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error)
        assert str(back) == str(error) and back.args == error.args, type(error)
        assert vars(back) == vars(error) and back.hint == error.hint, type(error)
