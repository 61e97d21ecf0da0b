"""The documentation: the site builds with warnings as errors, and every Python snippet in the
README and docs/ runs, or says why it cannot.

Snippets: each ```python fence runs unless the line before it is ``<!-- not run: REASON -->``.
A page's runnable fences run in order in one fresh interpreter (later fences use names from
earlier ones), with this tree on PYTHONPATH and a scratch folder as cwd and TMPDIR. A page whose
snippets use ``spark`` without creating it gets ``rs_spark.spark.local_session()`` from the harness,
and must say so. Tracebacks point at the page and line of the snippet.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
PACKAGES = [
    "rs_spark.streams",
    "rs_spark.tck",
    "rs_spark.arrow",
    "rs_spark.net",
    "rs_spark.delivery",
    "rs_spark.spark",
    "rs_spark.jvm",
]
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>\S.*?) -->$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})[ \t]*\{?\.?(?P<lang>[\w+-]*)")
PYTHON = {"python", "py", "python3", "pycon"}
SPARK_NOTE = "assume a SparkSession named `spark`"
PAGE_TIMEOUT_S = 300


@dataclasses.dataclass(frozen=True)
class Snippet:
    page: str
    line: int  # 1-based line of the snippet's first code line in the page
    code: str
    not_run: str | None  # the reason, when marked
    copy_of: str | None = None  # a generated copy of another file's part (README.md:NAME), run there


GENERATED = re.compile(r"^<!-- (?:(?P<end>end )generated|generated): (?P<kind>[\w.:-]+)")


def snippets(page: str) -> list[Snippet]:
    """The python fences of ``page``, in order."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found, before, i, copy_of = [], "", 0, None
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            part = GENERATED.match(lines[i])
            if part:
                copy_of = None if part["end"] else part["kind"]
            before = lines[i].strip() or before
            i += 1
            continue
        close = re.compile(rf"^[ \t]*{re.escape(fence['ticks'][0])}{{{len(fence['ticks'])},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), len(lines))
        if fence["lang"].lower() in PYTHON:
            body = [line[len(fence["indent"]) :] for line in lines[i + 1 : end]]
            marker = NOT_RUN.match(before)
            found.append(Snippet(page, i + 2, "\n".join(body) + "\n", marker["reason"] if marker else None, copy_of))
        before, i = "", end + 1
    return found


def runnable(page: str) -> list[Snippet]:
    """The fences that run: not marked not-run, and not a generated copy (its source page runs it)."""
    return [s for s in snippets(page) if s.not_run is None and s.copy_of is None]


def uses_spark_without_creating_it(blocks: list[Snippet]) -> bool:
    loads, stores = set(), set()
    for block in blocks:
        for node in ast.walk(ast.parse(block.code, filename=block.page)):
            if isinstance(node, ast.Name) and node.id == "spark":
                (stores if isinstance(node.ctx, ast.Store) else loads).add(node.id)
    return bool(loads) and not stores


# Runs one page's blocks in one interpreter; argv: the JSON file of blocks, then "spark" or "-".
RUNNER = r"""
import json, sys
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
try:
    if sys.argv[2] == "spark":
        from rs_spark.spark import local_session
        ns["spark"] = local_session("rs_spark-docs")
    for block in blocks:
        # Padding keeps line numbers, so a traceback shows the page's own line.
        exec(compile("\n" * (block["line"] - 1) + block["code"], block["path"], "exec"), ns)
finally:
    import rs_spark
    rs_spark.stop_served()
    spark = ns.get("spark")
    if spark is not None and hasattr(spark, "stop"):
        spark.stop()
"""

PAGES_WITH_SNIPPETS = [p for p in PAGES if runnable(p)]


def test_the_pages_have_snippets_to_run():
    assert "README.md" in PAGES_WITH_SNIPPETS and "docs/source.md" in PAGES_WITH_SNIPPETS, PAGES_WITH_SNIPPETS


@pytest.mark.parametrize("page", PAGES)
def test_not_run_markers_stand_right_before_a_python_fence(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    markers = sum(1 for line in text.splitlines() if line.strip().startswith("<!-- not run"))
    marked = [s for s in snippets(page) if s.not_run is not None]
    assert markers == len(marked), (
        f"{page}: {markers} '<!-- not run: REASON -->' markers but {len(marked)} python fences right after "
        "one; put the marker (with its reason) on the line just before the ```python fence"
    )


@pytest.mark.slow
@pytest.mark.timeout(PAGE_TIMEOUT_S + 60)
@pytest.mark.parametrize("page", PAGES_WITH_SNIPPETS)
def test_page_snippets_run(page, tmp_path):
    blocks = runnable(page)
    needs_spark = uses_spark_without_creating_it(blocks)
    if needs_spark:
        assert SPARK_NOTE in (ROOT / page).read_text(encoding="utf-8"), (
            f"{page}: its snippets use `spark` without creating it; say so on the page "
            f"('The snippets on this page {SPARK_NOTE}, ...')"
        )
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([{"path": str(ROOT / b.page), "line": b.line, "code": b.code} for b in blocks]))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    args = [sys.executable, "-c", RUNNER, str(spec), "spark" if needs_spark else "-"]
    try:
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{page}: the snippets did not finish within {PAGE_TIMEOUT_S} s:\n{_tail(e.stdout, e.stderr)}")
    assert done.returncode == 0, f"{page}: a snippet failed:\n{_tail(done.stdout, done.stderr)}"


def _tail(*outputs: str | bytes | None, lines: int = 80) -> str:
    text = "\n".join(o.decode(errors="replace") if isinstance(o, bytes) else o for o in outputs if o)
    return "\n".join(text.splitlines()[-lines:])


# -- the site ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Builds the site once: ``mkdocs build --strict`` (any warning fails it)."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed here: pip install -e '.[docs]' (bash .ci/setup does)")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's banner about MkDocs 2.0, not a build warning
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    args = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", str(out)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return out, done


def test_site_builds_without_warnings(site):
    _, done = site
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0 and not warnings, f"mkdocs build --strict failed:\n{_tail(done.stdout, done.stderr)}"


def _page(site, name: str) -> str:
    out, done = site
    assert done.returncode == 0, _tail(done.stdout, done.stderr)
    return (out / name / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "page, module, table",
    [
        ("source", "rs_spark.spark.source.options", "SOURCE_OPTIONS"),
        ("sink", "rs_spark.spark.sink.options", "SINK_OPTIONS"),
    ],
)
def test_option_tables_list_every_option(site, page, module, table):
    html = _page(site, page)
    options = getattr(importlib.import_module(module), table)
    missing = [name for name in options if f"<td><code>{name}</code></td>" not in html]
    assert not missing, f"docs/{page}.md's option table lacks {missing}"


def _generator():
    """docs/generate.py, which writes the generated parts of the pages."""
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    return generate


def test_generated_parts_match_their_sources():
    """The option tables (SOURCE_OPTIONS, SINK_OPTIONS, the duration grammar) and the parts of README.md,
    CHANGELOG.md and SECURITY.md that pages show are committed in the pages; none has drifted."""
    generate = _generator()
    stale = generate.drifted()
    assert not stale, f"generated parts out of date: {stale}; run .venv/bin/python docs/generate.py"
    kinds = {m["kind"] for page in generate.pages() for m in generate.parts(page)}
    assert {"source-options", "sink-options", "duration-units", "duration-minimums", "CHANGELOG.md"} <= kinds


def test_a_generated_part_that_drifts_is_found(tmp_path, monkeypatch):
    generate = _generator()
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "<!-- section: x -->\nnew words, [a link](docs/b.md#c)\n<!-- end section: x -->\n"
    )
    page = f"<!-- generated: README.md:x{generate.NOTE}-->\nold words\n<!-- end generated: README.md:x -->\n"
    (tmp_path / "docs" / "a.md").write_text(page)
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    assert generate.drifted() == ["docs/a.md: README.md:x"]
    assert generate.main([]) == 0 and generate.drifted() == []
    assert "new words, [a link](b.md#c)" in (tmp_path / "docs" / "a.md").read_text()


@pytest.mark.parametrize("page", [*PAGES, "SECURITY.md", "CHANGELOG.md", "CONTRIBUTING.md"])
def test_every_page_reads_whole_as_plain_markdown(page):
    """Nothing on a page is filled in by the site build only: no include directive (--8<--) and no
    marker a build hook replaces; what is generated is committed (docs/generate.py)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "--8<--" not in text, f"{page}: an include directive shows as raw text on GitHub; use docs/generate.py"
    assert not re.search(r"^<!-- options: ", text, re.M), f"{page}: a table only the site build fills in"


@pytest.mark.parametrize("kind", ["source", "sink"])
def test_documented_defaults_are_the_parsers_defaults(kind):
    """Passing the default the docs show gives the same parsed options as leaving the option out."""
    from rs_spark.spark.sink.options import SINK_OPTIONS, SinkOptions
    from rs_spark.spark.source.options import SOURCE_OPTIONS, SourceOptions

    parse, options, base = {
        "source": (SourceOptions.parse, SOURCE_OPTIONS, {"publisher": "pkg.mod:factory"}),
        "sink": (SinkOptions.parse, SINK_OPTIONS, {"subscriber": "pkg.mod:factory"}),
    }[kind]
    generate = _generator()
    checked = []
    for name, description in options.items():
        default, _ = generate.split_default(description)
        if default is None or " " in default:  # none, or words ("no limit"), not a value
            continue
        with_default = dataclasses.replace(parse({**base, name: default}), raw={})
        assert with_default == dataclasses.replace(parse(base), raw={}), f"{kind} option {name}: docs say {default}"
        checked.append(name)
    assert len(checked) >= (8 if kind == "source" else 2), checked


@pytest.mark.parametrize("package", PACKAGES)
def test_api_reference_covers_every_export(site, package):
    html = _page(site, f"reference/{package.split('.')[-1]}")
    ids = set(re.findall(r'id="([\w.]+)"', html))
    exported = importlib.import_module(package).__all__
    # a function hidden by a submodule of the same name (streams.create) is rendered as package.name.name
    missing = [n for n in exported if f"{package}.{n}" not in ids and f"{package}.{n}.{n}" not in ids]
    assert not missing, f"the API reference of {package} lacks {missing}"


def test_api_reference_covers_the_top_level_helpers(site):
    ids = set(re.findall(r'id="([\w.]+)"', _page(site, "reference/rs_spark")))
    for name in ("read_stream", "write_stream", "serve_sink", "sink_state", "stop_served"):
        assert f"rs_spark.{name}" in ids, name


# -- the README ----------------------------------------------------------------------------------


def test_readme_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    missing = [t for t in targets if t and not (ROOT / t).exists()]
    assert targets and not missing, missing


def test_readme_stays_a_two_minute_read():
    size = len((ROOT / "README.md").read_text(encoding="utf-8"))
    assert size < 8000, f"README.md is {size} characters: move reference material into docs/ and link to it"


def _module_map(text: str, package: Path) -> tuple[set[Path], list[str]]:
    """The modules docs/architecture.md's module map (the indented block under "Layers and
    modules") names, as paths, and the names in it that are no module. A ``dir/`` opens that folder
    (looked up from the folder open now, then from each folder above it: ``zero_loss/`` after
    ``protocol/`` is net/zero_loss/); ``rs_spark/x/`` opens package folder x; a bare ``name.py`` is in the
    folder open (or, failing that, in a folder above it within the package); a ``dir/name.py`` is a
    path from rs_spark/ (or from the repository's root)."""
    section = text.split("## Layers and modules", 1)[1].split("\n## ", 1)[0]
    block = [ln for ln in section.splitlines() if ln.startswith("    ")]
    root = package.parent
    here = package
    named: set[Path] = set()
    stale: list[str] = []
    for line in block:
        for token in re.findall(r"\w[\w./-]*", line):
            token = token.rstrip(".:,")
            if token.endswith("/"):
                if token.startswith("rs_spark/"):
                    here = root / token
                    continue
                for folder in (here, *here.parents):
                    if (folder / token).is_dir() and folder.is_relative_to(package):
                        here = folder / token
                        break
            elif token.endswith(".py"):
                if token.startswith("rs_spark/"):
                    candidates = [root / token]
                    here = candidates[0].parent
                elif "/" in token:
                    candidates = [package / token, root / token]  # a path from rs_spark/, or a file of the repository
                else:  # in the folder open, else in one above it within the package (a folder named in passing)
                    candidates = [f / token for f in (here, *here.parents) if f.is_relative_to(package)]
                found = next((c for c in candidates if c.is_file()), None)
                if found is not None:
                    named.add(found)
                else:
                    stale.append(f"{token} (read as {candidates[0].relative_to(root)})")
    return named, stale


def test_the_architecture_map_names_every_module_by_its_path():
    """docs/architecture.md is the map newcomers keep true: a module it does not name is a room nobody
    will find (the examples are programs, not rooms of the package). Each module is named in its
    folder's place, not merely by a file name some other folder has (net/client.py does not name
    delivery/client.py); a name the map gives that is no module is a room that is gone."""
    package = ROOT / "rs_spark"
    named, stale = _module_map((ROOT / "docs" / "architecture.md").read_text(), package)
    unnamed = [
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if p.name != "__init__.py" and "examples" not in p.relative_to(package).parts and p not in named
    ]
    assert unnamed == [], f"docs/architecture.md's module map does not name {unnamed}"
    assert stale == [], f"docs/architecture.md's module map names modules that do not exist: {stale}"


def test_the_architecture_map_is_read_by_path_not_by_file_name(tmp_path):
    """The check above, on a tree of its own: a module named like one elsewhere is still unnamed."""
    package = tmp_path / "rs_spark"
    for rel in ("net/client.py", "net/protocol/client.py", "net/zero_loss/spill.py", "delivery/client.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("")
    text = "\n".join(
        [
            "## Layers and modules",
            "    rs_spark/net/  client.py",
            "      protocol/  client.py",
            "      zero_loss/ spill.py",
            "    rs_spark/delivery/  hub.py",  # not delivery/client.py: net/'s and net/protocol/'s are named
        ]
    )
    named, stale = _module_map(text, package)
    want = {"net/client.py", "net/protocol/client.py", "net/zero_loss/spill.py"}
    assert {str(p.relative_to(package)) for p in named} == want
    assert stale == ["hub.py (read as rs_spark/delivery/hub.py)"]


def test_deployment_names_the_spark_versions_ci_tests():
    """docs/deployment.md's table of tested pyspark versions: the one this suite runs on and the one
    .ci/spark42 installs for the smoke set, which .ci/run runs."""
    import pyspark

    script = (ROOT / ".ci" / "spark42").read_text(encoding="utf-8")
    smoke = re.search(r"pyspark_version=\$\{RS_PYSPARK42:-([\d.]+)\}", script)
    assert smoke and smoke.group(1).startswith("4.2."), "the smoke set's pyspark is 4.2.x"
    assert "bash .ci/spark42" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    table = page.split("## Spark versions", 1)[1].split("\n## ", 1)[0]
    tested = re.findall(r"^\| ([\d.]+) \|", table, re.M)
    assert tested == [pyspark.__version__, smoke.group(1)], tested


def test_project_urls_name_the_repository_and_its_docs():
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    repo = urls["Repository"]
    assert repo.startswith("https://") and urls["Documentation"] == f"{repo}/tree/main/docs"
    assert urls["Changelog"] == f"{repo}/blob/main/CHANGELOG.md" and (ROOT / "CHANGELOG.md").exists()
