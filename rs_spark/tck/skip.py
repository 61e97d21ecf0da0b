"""How a TCK test says it does not apply, and which tests a verification lets skip.

:class:`TckSkipped` derives from :class:`unittest.SkipTest`, which pytest and unittest both report
as a skip on their own: the kit needs neither pytest nor a plugin, and :func:`rs_spark.tck.run`
recognises it without importing any test framework.

A verification pins its skips with ``skips = {test name or rule: why}`` (see
:class:`rs_spark.tck.env.Verification`): a skip it does not list fails, and an exception in an
optional test is "not implemented" (a skip) only for a test or rule it lists.

Untested rules (the JVM TCK's ``untested_*`` tests, which can never fail) are not tests here:
:data:`UNTESTED` records why each is not verified, and :func:`rs_spark.tck.untested_rules` lists
them once per verification.
"""

from __future__ import annotations

import sys
import unittest
from typing import NoReturn


class TckSkipped(unittest.SkipTest):
    """A TCK test was skipped; the message says why."""


def skip(reason: str) -> NoReturn:
    """Skip the running TCK test with ``reason``."""
    raise TckSkipped(reason)


def skip_reason(exc: BaseException) -> str | None:
    """The reason if ``exc`` is a skip (ours, unittest's or pytest's), else None.

    pytest's own skip (a user's ``create_publisher`` may call ``pytest.skip``) is recognised only
    when pytest is already imported: this module never imports it.
    """
    if isinstance(exc, unittest.SkipTest):
        return str(exc)
    pytest = sys.modules.get("pytest")
    if pytest is not None and isinstance(exc, pytest.skip.Exception):
        return str(getattr(exc, "msg", exc))
    return None


UNTESTED: dict[str, str] = {}
"""JVM TCK test name in Python (``test_untested_...``) -> why no test can check its rule."""


def untested(name: str, why: str) -> str:
    """Record that the JVM TCK's untested test ``name`` is not verified, and why; returns ``name``."""
    UNTESTED[name] = why
    return name


__all__ = ["TckSkipped", "skip", "skip_reason", "UNTESTED", "untested"]
