"""This suite pins every verification's skips, and docs/tck.md lists the rules the kit leaves untested."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from rs_spark.tck import (
    IdentityProcessorVerification,
    PublisherVerification,
    SubscriberBlackboxVerification,
    SubscriberWhiteboxVerification,
    untested_rules,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_VERIFICATION = """
from rs_spark import streams as rs
from rs_spark.tck import PublisherVerification


class TestRangeHere(PublisherVerification):
    {skips}
    def create_publisher(self, elements):
        return rs.range_(elements)
"""


def _collect(tmp_path, skips):
    test = tmp_path / "test_verification_here.py"
    test.write_text(_VERIFICATION.format(skips=skips))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", "--collect-only"]
        + [str(test)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT,
    )


def test_the_suite_refuses_a_verification_that_does_not_pin_its_skips(tmp_path):
    r = _collect(tmp_path, "")
    assert r.returncode != 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    # The node id is relative to where pytest runs (a clone under /tmp prefixes tmp_path's folders): the tail.
    assert re.search(r"TCK verifications without skips: \S*test_verification_here\.py::TestRangeHere", out), out
    assert "skips = {" in out and "docs/tck.md" in out
    pinned = _collect(tmp_path, "skips = {}")
    assert pinned.returncode == 0 and "31 tests collected" in pinned.stdout, pinned.stdout + pinned.stderr


_SHORT = {
    PublisherVerification: "publisher",
    SubscriberBlackboxVerification: "blackbox",
    SubscriberWhiteboxVerification: "whitebox",
    IdentityProcessorVerification: "processor",
}


def test_docs_list_each_untested_rule_once_with_the_verifications_that_leave_it_untested():
    with open(os.path.join(ROOT, "docs", "tck.md"), encoding="utf-8") as f:
        page = f.read()
    table = page[page.index("## Untested rules") :]
    rows = re.findall(r"^\| (\d+\.\d+) \| ([a-z, ]+) \| (.+) \|$", table, re.M)
    documented = {rule: set(where.split(", ")) for rule, where, _ in rows}
    assert len(documented) == len(rows), "a rule listed twice"
    kit: dict[str, set[str]] = {}
    for cls, short in _SHORT.items():
        for u in untested_rules(cls):
            kit.setdefault(u.rule, set()).add(short)
    assert documented == kit
