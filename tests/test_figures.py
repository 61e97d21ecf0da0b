"""Every figure has one home: the figure table of docs/benchmarks.md (one row per figure: what it
measures, the benchmark, the command that reruns it, date, machine load, commit).

A page quotes a figure as a link to its row, ``[0.44-0.55 ms](benchmarks.md#fig-rt-p50)``, whose text
is exactly the row's "quoted as" cell. These tests fail when a page quotes a figure the table does not
hold (or holds with other words), when a row's rerun command names a flag, a benchmark row key or a
latency path its script does not have, and when the README shows a measured figure (ms, µs, %, x) that
is not such a link.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
PAGES = ["README.md", "CHANGELOG.md", "SECURITY.md", "CONTRIBUTING.md"] + sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
)
COLUMNS = ["figure", "quoted as", "benchmark", "rerun with", "date (UTC)", "machine load", "commit"]
ANCHOR = re.compile(r'^<a id="fig-(?P<id>[a-z0-9-]+)"></a>')
QUOTE = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<path>[^)#\s]*)#fig-(?P<id>[a-z0-9-]+)\)")
# A measured figure in the README: a number with a unit of time, a percentage or a ratio.
MEASURED = re.compile(r"\d(?:[\d.,]*\d)?(?:-\d(?:[\d.,]*\d)?)?\s?(?:ms|µs|us|%|x)(?![\w])")


def figure_table(text: str) -> dict[str, dict[str, str]]:
    """id -> {column: cell} of the figure table under '## Figures'."""
    section = text.split("\n## Figures\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == COLUMNS, header
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == len(COLUMNS), line
        row = dict(zip(COLUMNS, cells, strict=True))
        anchor = ANCHOR.match(row["figure"])
        assert anchor, f'a figure row needs an anchor <a id="fig-..."></a> first: {line[:80]}'
        assert anchor["id"] not in rows, f"two rows with id fig-{anchor['id']}"
        rows[anchor["id"]] = row
    return rows


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, str]]:
    return figure_table(BENCHMARKS.read_text(encoding="utf-8"))


def quotes(page: str, root: Path = ROOT) -> list[tuple[int, str, str, str]]:
    """(line, text, path, id) of every link to a figure row on ``page``."""
    out = []
    for number, line in enumerate((root / page).read_text(encoding="utf-8").splitlines(), 1):
        for m in QUOTE.finditer(line):
            out.append((number, m["text"], m["path"], m["id"]))
    return out


def _unheld(page: str, figures: dict[str, dict[str, str]], root: Path = ROOT) -> list[str]:
    bad = []
    for line, text, path, fid in quotes(page, root):
        target = (root / page).parent / path if path else root / page
        if target.resolve() != (root / "docs" / "benchmarks.md").resolve():
            bad.append(f"{page}:{line}: [{text}] links to {path}#fig-{fid}, not to docs/benchmarks.md")
        elif fid not in figures:
            bad.append(f"{page}:{line}: [{text}] quotes fig-{fid}, which the figure table does not hold")
        elif text != figures[fid]["quoted as"]:
            bad.append(
                f"{page}:{line}: [{text}] quotes fig-{fid}, which the table holds as {figures[fid]['quoted as']!r}"
            )
    return bad


@pytest.mark.parametrize("page", PAGES)
def test_a_page_quotes_only_figures_the_table_holds(page, figures):
    bad = _unheld(page, figures)
    assert not bad, "\n".join(bad)


def test_the_readme_quotes_figures_and_shows_none_unlinked(figures):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(quotes("README.md")) >= 10
    unlinked = MEASURED.findall(QUOTE.sub("", text))
    assert not unlinked, f"README.md shows measured figures that are not links to the figure table: {unlinked}"


def test_a_quote_the_table_does_not_hold_is_found(tmp_path, figures):
    """The check can fail: a stale figure, a figure with other words, an unknown id."""
    (tmp_path / "docs").mkdir()
    page = tmp_path / "README.md"
    page.write_text(
        "p50 [0.3-1.4 ms](docs/benchmarks.md#fig-rt-p50), [82%](docs/benchmarks.md#fig-source-arrow), "
        "[1 ms](docs/benchmarks.md#fig-nope), [0.47-0.58 ms](docs/benchmarks.md#fig-rt-p50)\n"
    )
    bad = _unheld("README.md", figures, tmp_path)
    assert [b.split(": ", 1)[1].split(",")[0] for b in bad] == [
        "[0.3-1.4 ms] quotes fig-rt-p50",
        "[82%] quotes fig-source-arrow",
        "[1 ms] quotes fig-nope",
    ]
    assert MEASURED.findall("p50 0.3-1.4 ms, 82% of (c), 1.55x, 9.4 µs; Python 3.11+, JDK 17") == [
        "0.3-1.4 ms",
        "82%",
        "1.55x",
        "9.4 µs",
    ]


def test_every_row_is_complete(figures):
    assert len(figures) >= 10
    for fid, row in figures.items():
        empty = [c for c in COLUMNS if not row[c]]
        assert not empty, f"fig-{fid}: empty {empty}"
        assert re.search(r"\b[0-9a-f]{7,40}\b", row["commit"]), f"fig-{fid}: commit {row['commit']!r}"
        assert re.search(r"\b20\d\d-\d\d-\d\d\b|every run", row["date (UTC)"]), f"fig-{fid}: date {row['date (UTC)']}"


def test_every_commit_named_exists():
    """Where the checkout has its history (a clone does), each commit a row names is in it."""
    if subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout: the commits cannot be looked up")
    table = figure_table(BENCHMARKS.read_text(encoding="utf-8"))
    for fid, row in table.items():
        for sha in re.findall(r"\b[0-9a-f]{7,40}\b", row["commit"]):
            found = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=ROOT, capture_output=True)
            assert found.returncode == 0, f"fig-{fid}: commit {sha} is not in this repository's history"


def _commands(row: dict[str, str], previous: list[str]) -> list[str]:
    cell = row["rerun with"]
    if cell == "as above":
        return previous
    return re.findall(r"`([^`]+)`", cell)


def _flags(script: Path) -> set[str]:
    """The command-line flags a benchmark script declares (argparse, or sys.argv checks)."""
    text = script.read_text(encoding="utf-8")
    return set(re.findall(r'add_argument\(\s*"(--[\w-]+)"', text)) | set(
        re.findall(r'"(--[\w-]+)" (?:not )?in sys\.argv', text)
    )


def _names(script: Path, assignment: str) -> set[str]:
    """The string keys of the dict assigned to ``assignment`` at module level (latency.py's PATHS)."""
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == assignment for t in node.targets):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


def _source_keys(script: Path) -> set[str]:
    """source.py's and sink.py's row keys: the first string of each case tuple (triggers.py's: the
    keys of its CASES mapping)."""
    text = script.read_text(encoding="utf-8")
    return (
        set(re.findall(r'^\s+\(\s*\n?\s*"([a-z]\d?\'?)",', text, re.M))
        | set(re.findall(r'^\s+"([a-z]\d?\'?)",$', text, re.M))
        | set(re.findall(r'^\s+"([a-z])": "', text, re.M))
    )


def test_every_rerun_command_runs_what_its_row_names(figures):
    """Each command runs an existing script or test with flags, row keys and latency paths the script
    has: a command that no longer reproduces its figure (a renamed path, a dropped flag) fails here."""
    previous: list[str] = []
    for fid, row in figures.items():
        commands = _commands(row, previous)
        assert commands, f"fig-{fid}: no command in {row['rerun with']!r}"
        previous = commands
        for command in commands:
            words = [w for w in shlex.split(command) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
            target = next((w for w in words if w.startswith(("benchmarks/", "tests/"))), None)
            assert target and (ROOT / target).exists(), f"fig-{fid}: {command!r} runs nothing that exists"
            assert target.split("/")[0] in row["benchmark"] or target in row["benchmark"], (fid, command)
            if not target.startswith("benchmarks/"):
                continue
            script = ROOT / target
            flags = [w for w in words if w.startswith("--")]
            unknown = set(flags) - _flags(script)
            assert not unknown, f"fig-{fid}: {target} has no flag {sorted(unknown)}"
            args = dict(zip(words, words[1:], strict=False))
            if "--paths" in args:
                paths = set(args["--paths"].split(",")) - _names(script, "PATHS")
                assert not paths, f"fig-{fid}: {target} has no path {sorted(paths)}"
            if "--only" in args:
                keys = set(args["--only"].split(",")) - _source_keys(script)
                assert not keys, f"fig-{fid}: {target} has no row {sorted(keys)}"
