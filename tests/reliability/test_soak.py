"""Soak: an infinite fast Publisher into a slow Subscriber through Spark for RS_SOAK_MINUTES
(default 10). Resident memory stays flat and buffered counts stay within their bounds."""

from __future__ import annotations

import importlib.util
import io
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINUTES = float(os.environ.get("RS_SOAK_MINUTES", "10"))


def _soak_module():
    spec = importlib.util.spec_from_file_location("rs_soak", os.path.join(ROOT, "benchmarks", "soak.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(int(MINUTES * 60 + 600))
def test_soak_fast_publisher_slow_subscriber_memory_flat_and_buffers_bounded():
    soak = _soak_module()
    out = io.StringIO()
    r = soak.soak(MINUTES, out=out)
    print("\n" + out.getvalue())
    assert r["error"] is None and r["rows"] > 0
    assert max(s["src_buffered"] for s in r["samples"]) <= soak.MAX_BUFFERED
    assert r["max_hub"] <= 65536  # at most one record batch beyond the Subscriber's demand
    for role, (middle, last) in r["growth"].items():
        slack = 150.0 if role == "jvm" else 40.0  # the JVM heap may still expand towards -Xmx
        assert last <= middle * 1.25 + slack, f"{role} RSS grew from {middle:.0f} to {last:.0f} MB"
