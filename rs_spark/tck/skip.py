"""How a TCK test says it does not apply (an untested rule, an optional rule, a harness limit).

:class:`TckSkipped` derives from :class:`unittest.SkipTest`, which pytest and unittest both report
as a skip on their own: the kit needs neither pytest nor a plugin, and :func:`rs_spark.tck.run`
recognises it without importing any test framework.
"""

from __future__ import annotations

import sys
import unittest
from typing import NoReturn


class TckSkipped(unittest.SkipTest):
    """A TCK test was skipped; the message says why (and, for ``untested`` rules, which rule)."""


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


__all__ = ["TckSkipped", "skip", "skip_reason"]
