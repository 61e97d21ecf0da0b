"""docs/realtime.md lists every option of format("reactive-rt") and of the real-time sink, and only those."""

from __future__ import annotations

import re

from tests.jvm.conftest import ROOT

RT = f"{ROOT}/jvm-shim/src/main/java/rsspark/rt"
TLS = f"{ROOT}/jvm-shim/src/main/java/rsspark/rsocket/TlsSettings.java"


def _tls_options() -> set[str]:
    """The TLS options of both the source and the sink (rsspark.rsocket.TlsSettings)."""
    java = open(TLS, encoding="utf-8").read()
    return set(re.findall(r'public static final String [A-Z_]+ = "(tls[A-Za-z]+)";', java))


def _section(section: str) -> str:
    page = open(f"{ROOT}/docs/realtime.md", encoding="utf-8").read()
    return page.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]


def _documented(section: str) -> set[str]:
    return set(re.findall(r"^\| `([A-Za-z]+)` \|", _section(section), re.M))


def test_every_source_option_is_documented():
    """Every option RtOptions accepts (path too), and only those."""
    java = open(f"{RT}/RtOptions.java", encoding="utf-8").read()
    declared = set(re.findall(r'^\s*known\("([A-Za-z]+)"', java, re.M))
    assert "TlsSettings.OPTIONS" in java and len(_tls_options()) == 4 and "path" in declared
    assert declared and _documented("Source options") == declared | _tls_options()


def test_no_known_option_is_said_to_be_refused_as_unknown():
    """The text under the table names options refused as unknown: none of them may be a known one."""
    java = open(f"{RT}/RtOptions.java", encoding="utf-8").read()
    known = {k.lower() for k in re.findall(r'^\s*known\("([A-Za-z]+)"', java, re.M)}
    text = _section("Source options").split("refused as unknown", 1)[0].rsplit(";", 1)[-1]
    named = {n.lower() for n in re.findall(r"`([A-Za-z]+)`", text)}
    assert named and not named & known, f"docs/realtime.md says {sorted(named & known)} are refused as unknown"


def test_every_sink_option_is_documented():
    java = open(f"{RT}/ReactiveSinkWriter.java", encoding="utf-8").read()
    declared = set(re.findall(r'intOption\(o, "([A-Za-z]+)"', java)) | set(
        re.findall(r'durationMs\(o, "([A-Za-z]+)"', java)
    )
    assert "TlsSettings.from(o)" in java
    assert declared and _documented("Sink options") == declared | _tls_options()
