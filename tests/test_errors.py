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
