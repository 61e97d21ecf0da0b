"""The generated parts of the docs, committed so that every page reads whole as plain Markdown
(on GitHub, in an editor) and not only on the built site.

A generated part sits between two comments, invisible on GitHub::

    <!-- generated: KIND; edit its source, then run: .venv/bin/python docs/generate.py -->
    ...
    <!-- end generated: KIND -->

KIND is ``source-options`` / ``sink-options`` (tables of ``SOURCE_OPTIONS`` / ``SINK_OPTIONS``),
``duration-units`` / ``duration-minimums`` (the duration grammar of ``rs_spark.spark.durations``),
``api:PACKAGE`` (what a package exports, from its ``__all__`` and docstrings: the API reference's
summary, which GitHub shows where the site renders the full reference),
``README.md:NAME`` (the README's part between ``<!-- section: NAME -->`` and
``<!-- end section: NAME -->``, its links rewritten for the page), or ``CHANGELOG.md`` /
``SECURITY.md`` (the whole file). From the repository root:

    .venv/bin/python docs/generate.py           # rewrite every generated part
    .venv/bin/python docs/generate.py --check   # list the parts that drifted; exit 1 if any

tests/test_docs.py fails when a part drifts from its source. A table's default is read from the
option's description (``(default X)`` or ``X (default``); options without one have none.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "SECURITY.md", "CHANGELOG.md", "CONTRIBUTING.md"]  # with every docs/**/*.md

PART = re.compile(
    r"^<!-- generated: (?P<kind>[\w.:-]+)(?P<note>[^>]*)-->\n(?P<body>.*?)^<!-- end generated: (?P=kind) -->$",
    re.M | re.S,
)
SECTION = re.compile(
    r"^<!-- section: (?P<name>[\w-]+) -->\n(?P<body>.*?)^<!-- end section: (?P=name) -->$", re.M | re.S
)
NOTE = "; edit its source, then run: .venv/bin/python docs/generate.py "
LINK = re.compile(r"(\]\()(?P<target>[^)\s]+)(\))")

# -- option tables -------------------------------------------------------------------------------

# "... (default 15m)", "... (default: no limit)", "FAILFAST (default), ..." or "auto (default: an explanation)"
_DEFAULT = re.compile(r"(\S+) \(default:?\s*([^)]*)\)")


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


def option_table(options: dict[str, str]) -> str:
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for name, description in options.items():
        default, meaning = split_default(description)
        rows.append(f"| `{name}` | {_cell(_shown(default))} | {_cell(meaning)} |")
    return "\n".join(rows)


def _source_options() -> str:
    from rs_spark.spark.source.options import SOURCE_OPTIONS

    return option_table(SOURCE_OPTIONS)


def _sink_options() -> str:
    from rs_spark.spark.sink.options import SINK_OPTIONS

    return option_table(SINK_OPTIONS)


def _duration_units() -> str:
    from rs_spark.spark.durations import UNITS

    by_ms: dict[float, list[str]] = {}
    for word, ms in UNITS.items():
        by_ms.setdefault(ms, []).append(f"`{word}`")
    rows = ["| unit | written as |", "| --- | --- |"]
    rows += [f"| {ms:g} ms | {', '.join(words)} |" for ms, words in sorted(by_ms.items())]
    return "\n".join(rows)


def _duration_minimums() -> str:
    from rs_spark.spark.durations import MINIMUMS

    rows = ["| option | at least | why |", "| --- | --- | --- |"]
    rows += [f"| `{name}` | `{shown}` | {_cell(why)} |" for name, (_, shown, why) in MINIMUMS.items()]
    return "\n".join(rows)


# -- the API reference's summary tables -----------------------------------------------------------


def _summary(obj: object) -> str:
    """The first sentence of ``obj``'s own docstring (not one it inherits), reST roles as code."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not (inspect.isclass(obj) or inspect.isroutine(obj)):
        return f"a `{type(obj).__name__}`"
    if not doc:
        return "(no docstring)"
    first = inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ")
    first = re.sub(r":\w+:`~?\.?([^`]+)`", r"`\1`", first).replace("``", "`")
    sentence = re.match(r"(.+?\.)(?=\s+[A-Z(]|$)", first)  # not at "e.g. x"
    return _cell(sentence.group(1) if sentence else first)


def api_table(package: str) -> str:
    """Each name ``package`` exports (its ``__all__``), what it is, and the module that defines it."""
    module = importlib.import_module(package)
    rows = ["| name | what it is | defined in |", "| --- | --- | --- |"]
    for name in module.__all__:
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None) if inspect.isclass(obj) or inspect.isroutine(obj) else None
        rows.append(f"| `{name}` | {_summary(obj)} | `{home or package}` |")
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {
    "source-options": _source_options,
    "sink-options": _sink_options,
    "duration-units": _duration_units,
    "duration-minimums": _duration_minimums,
}

# -- parts of other files ------------------------------------------------------------------------


def readme_section(name: str) -> str:
    """The README's part between ``<!-- section: NAME -->`` and ``<!-- end section: NAME -->``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = {m["name"]: m["body"] for m in SECTION.finditer(text)}
    if name not in found:
        raise KeyError(f"README.md has no part '<!-- section: {name} -->'; it has {sorted(found)}")
    return found[name].rstrip("\n")


def relinked(text: str, source: str, page: str) -> str:
    """``text`` from file ``source`` with its relative links rewritten to work from ``page`` (both
    relative to the repository root): ``docs/benchmarks.md#x`` in README.md is ``benchmarks.md#x``
    in docs/index.md."""

    def fix(m: re.Match[str]) -> str:
        target = m["target"]
        if "://" in target or target.startswith(("#", "mailto:")):
            return m.group(0)
        path, _, anchor = target.partition("#")
        absolute = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        moved = posixpath.relpath(absolute, posixpath.dirname(page) or ".")
        return f"{m.group(1)}{moved}{'#' + anchor if anchor else ''}{m.group(3)}"

    return LINK.sub(fix, text)


def expected(kind: str, page: str) -> str:
    """What the generated part ``kind`` of ``page`` must hold."""
    if kind in TABLES:
        return TABLES[kind]()
    if kind.startswith("api:"):
        return api_table(kind.removeprefix("api:"))
    source, _, name = kind.partition(":")
    if source == "README.md" and name:
        return relinked(readme_section(name), "README.md", page)
    if source in ("CHANGELOG.md", "SECURITY.md") and not name:
        return relinked((ROOT / source).read_text(encoding="utf-8").rstrip("\n"), source, page)
    raise ValueError(
        f"{page}: unknown generated part {kind!r}: use one of {sorted(TABLES)}, api:PACKAGE, README.md:NAME, "
        "CHANGELOG.md or SECURITY.md"
    )


# -- pages ---------------------------------------------------------------------------------------


def pages() -> list[str]:
    docs = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))
    return [p for p in PAGES if (ROOT / p).exists()] + docs


def parts(page: str) -> Iterator[re.Match[str]]:
    yield from PART.finditer((ROOT / page).read_text(encoding="utf-8"))


def regenerated(page: str) -> str:
    """``page``'s text with every generated part made anew."""

    def fill(m: re.Match[str]) -> str:
        kind = m["kind"]
        return f"<!-- generated: {kind}{NOTE}-->\n{expected(kind, page)}\n<!-- end generated: {kind} -->"

    return PART.sub(fill, (ROOT / page).read_text(encoding="utf-8"))


def drifted() -> list[str]:
    """``page: kind`` of every generated part that differs from its source."""
    out = []
    for page in pages():
        for m in parts(page):
            if m["body"].rstrip("\n") != expected(m["kind"], page) or m["note"] != NOTE:
                out.append(f"{page}: {m['kind']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list the parts that drifted; exit 1 if any")
    args = parser.parse_args(argv)
    if args.check:
        stale = drifted()
        for line in stale:
            print(f"{line}: out of date; run .venv/bin/python docs/generate.py", file=sys.stderr)
        return 1 if stale else 0
    for page in pages():
        text = regenerated(page)
        if text != (ROOT / page).read_text(encoding="utf-8"):
            (ROOT / page).write_text(text, encoding="utf-8")
            print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.fspath(ROOT))  # rs_spark from this tree, installed or not
    sys.exit(main())
