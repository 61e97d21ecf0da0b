"""MkDocs hook: the option tables of docs/source.md and docs/sink.md, generated from the code.

A page writes ``<!-- options: source -->`` (or ``sink``) on a line of its own; the build replaces
it with a table of every entry of ``SOURCE_OPTIONS`` / ``SINK_OPTIONS``, so the docs cannot drift
from what the parsers accept. ``<!-- options: duration-units -->`` and ``duration-minimums`` are
the duration grammar's units and lower bounds, from ``rs_spark.spark.durations``. The default is
read from the description (``(default X)`` or ``X (default``); options without one have none.
"""

from __future__ import annotations

import re
from typing import Any

MARKER = re.compile(r"^<!-- options: ([\w-]+) -->$", re.MULTILINE)
# "... (default 15m)", "... (default: no limit)", "FAILFAST (default), ..." or "auto (default: an explanation)"
_DEFAULT = re.compile(r"(\S+) \(default:?\s*([^)]*)\)")


def _tables() -> dict[str, dict[str, str]]:
    from rs_spark.spark.sink.options import SINK_OPTIONS
    from rs_spark.spark.source.options import SOURCE_OPTIONS

    return {"source": SOURCE_OPTIONS, "sink": SINK_OPTIONS}


def split_default(description: str) -> tuple[str | None, str]:
    """(default, meaning) of one option's description; the default is ``None`` when it names none.

    A short parenthesis ("(default 15m)") holds the default itself and leaves the meaning; so does a
    long one that ends the description ("... (default: one per endpoint)"), shown as words. An empty
    one, or a long one followed by the other choices ("FAILFAST (default), PERMISSIVE ...",
    "auto (default: small ones inside ...), inline or fetch"), marks the word before it.
    """
    match = _DEFAULT.search(description)
    if match is None:
        return None, description
    word, value = match.group(1), match.group(2).strip()
    ends = not description[match.end() :].strip()
    if value and (len(value.split()) <= 2 or ends):
        meaning = description[: match.start(1) + len(word)] + description[match.end() :]
        return value, meaning.strip()
    return word, description


def _shown(default: str | None) -> str:
    if default is None:
        return "none"
    return default if " " in default else f"`{default}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(options: dict[str, str]) -> str:
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for name, description in options.items():
        default, meaning = split_default(description)
        rows.append(f"| `{name}` | {_cell(_shown(default))} | {_cell(meaning)} |")
    return "\n".join(rows)


def duration_tables() -> dict[str, str]:
    """The units table and the lower-bounds table of the duration grammar."""
    from rs_spark.spark.durations import MINIMUMS, UNITS

    by_ms: dict[float, list[str]] = {}
    for word, ms in UNITS.items():
        by_ms.setdefault(ms, []).append(f"`{word}`")
    units = ["| unit | written as |", "| --- | --- |"]
    units += [f"| {ms:g} ms | {', '.join(words)} |" for ms, words in sorted(by_ms.items())]
    least = ["| option | at least | why |", "| --- | --- | --- |"]
    least += [f"| `{name}` | `{shown}` | {_cell(why)} |" for name, (_, shown, why) in MINIMUMS.items()]
    return {"duration-units": "\n".join(units), "duration-minimums": "\n".join(least)}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    tables = {kind: table(options) for kind, options in _tables().items()} | duration_tables()

    def replace(match: re.Match[str]) -> str:
        kind = match.group(1)
        if kind not in tables:
            raise ValueError(f"{page.file.src_path}: unknown option table {kind!r}; use one of {sorted(tables)}")
        return tables[kind]

    return MARKER.sub(replace, markdown)
