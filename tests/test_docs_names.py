"""Every name the docs use resolves: in every Python code block of every page, run or not
(``<!-- not run: ... -->`` blocks too, which tests/test_docs.py cannot run), each import of the
project or its dependencies and each attribute chain on an imported name (``rs_spark.spark.register``,
``realtime.read_stream``, ``SparkSession.builder.remote``); and in the prose, each code span naming
``rs_spark.<...>`` (``rs_spark.spark.local_session()``). After ``import rs_spark`` alone, as a reader
would write it."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import PAGES, ROOT, snippets

NAMES_PAGES = [*PAGES, "SECURITY.md", "CHANGELOG.md", "CONTRIBUTING.md", "jvm-shim/README.md"]
CHECKED = ("rs_spark", "pyspark_reactive", "pyspark", "pyarrow", "py4j")
"""Imports of these are resolved; other modules in a snippet are the reader's own (``feeds``, ``myapp``)."""

NOT_PYTHON = {
    "rs_spark.batch_id": "a key of the Arrow schema's metadata (docs/sink.md)",
    "rs_spark.start_row": "a key of the Arrow schema's metadata (docs/sink.md)",
    "rs_spark.sensors.total": "a pipeline spec's configuration key (docs/deployment.md)",
}
CODE_SPAN = re.compile(r"`(rs_spark(?:\.[A-Za-z_]\w*)+)")


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` of an Attribute/Name node, or None for anything else (a call, a subscript)."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def names_used(code: str, bound: dict[str, str], assigned: set[str]) -> list[str]:
    """What a block uses that must resolve, each as ``module:attr.attr`` (import the module, then get
    the attributes) or ``from module:name.attr`` (``from module import name``, then the attributes):
    its imports of checked modules, and the longest attribute chains on names those
    imports bound (``bound``: name -> ``module:attr`` it stands for, carried from block to block of a
    page; names the page also assigns are left out, their value unknown)."""
    tree = ast.parse(code)
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in CHECKED:
                    used.append(f"{alias.name}:")
                    top = alias.name.split(".")[0]
                    bound[alias.asname or top] = f"{alias.name}:" if alias.asname else f"{top}:"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in CHECKED:
                for alias in node.names:
                    used.append(f"from {node.module}:{alias.name}")
                    bound[alias.asname or alias.name] = f"from {node.module}:{alias.name}"
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:  # the outermost of a chain
            chain = _chain(node)
            if chain and chain[0] in bound and chain[0] not in assigned:
                module, attrs = bound[chain[0]].split(":")
                used.append(f"{module}:{'.'.join(filter(None, [attrs, *chain[1:]]))}")
    return used


def _assigned(codes: list[str]) -> set[str]:
    out = set()
    for code in codes:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                out.add(node.name)
    return out


# Resolves ``module:attr.attr`` items in a fresh interpreter (stdin: a JSON list; stdout: a JSON
# map item -> None or the error). Items under a plain `import rs_spark` go first, before any other
# import, so rs_spark.spark.register resolves only if attribute access alone reaches it; a
# DeprecationWarning is an error: a deprecated path is not a name to teach.
RESOLVER = r"""
import importlib, json, sys, warnings
warnings.simplefilter("error", DeprecationWarning)
items = sorted(json.load(sys.stdin), key=lambda item: not item.startswith("rs_spark:"))
out = {}
for item in items:
    module, _, attrs = item.removeprefix("from ").partition(":")
    names = [a for a in attrs.split(".") if a]
    try:
        obj = importlib.import_module(module)
        if item.startswith("from "):  # from module import name: an attribute, else a submodule
            name = names.pop(0)
            obj = getattr(obj, name) if hasattr(obj, name) else importlib.import_module(f"{module}.{name}")
        for attr in names:  # attribute access only, as the reader's code does
            obj = getattr(obj, attr)
        out[item] = None
    except (ImportError, AttributeError, DeprecationWarning) as exc:
        out[item] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def resolve(items: list[str]) -> dict[str, str | None]:
    """item -> None when it resolves, else the error, from a fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-c", RESOLVER], input=json.dumps(items), capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _block_items(page: str) -> list[tuple[int, str]]:
    blocks = snippets(page)
    bound: dict[str, str] = {}
    assigned = _assigned([b.code for b in blocks])
    return [(block.line, item) for block in blocks for item in names_used(block.code, bound, assigned)]


def _prose_items(page: str) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate((ROOT / page).read_text(encoding="utf-8").splitlines(), 1):
        for dotted in CODE_SPAN.findall(line):
            if dotted not in NOT_PYTHON:
                out.append((number, "rs_spark:" + dotted.removeprefix("rs_spark").lstrip(".")))
    return out


@pytest.fixture(scope="module")
def resolved() -> dict[str, str | None]:
    items = {item for page in NAMES_PAGES for _, item in _block_items(page) + _prose_items(page)}
    return resolve(sorted(items))


@pytest.mark.parametrize("page", NAMES_PAGES)
def test_every_name_a_code_block_uses_resolves(page, resolved):
    bad = [f"{page}:{line}: {item}: {resolved[item]}" for line, item in _block_items(page) if resolved[item]]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", NAMES_PAGES)
def test_every_rs_spark_name_in_the_prose_resolves(page, resolved):
    bad = [f"{page}:{line}: {item}: {resolved[item]}" for line, item in _prose_items(page) if resolved[item]]
    assert not bad, "\n".join(bad)


def test_the_check_finds_what_the_issue_found():
    """Names as the docs wrote them before issue 40 are reported (the check can fail): a deprecated
    path, a misspelt helper; and rs_spark.spark after `import rs_spark` is reached by attribute only."""
    used = names_used("import rs_spark\nrs_spark.spark.register(spark)\nrs_spark.spark.lcoal_session()\n", {}, set())
    assert used == ["rs_spark:", "rs_spark:spark.register", "rs_spark:spark.lcoal_session"]
    used += names_used("from rs_spark.spark.jvm import jvm as j\nj.nope\n", {}, set())
    assert used[3:] == ["from rs_spark.spark.jvm:jvm", "from rs_spark.spark.jvm:jvm.nope"]
    assert names_used("x = net.serve\n", {"net": "rs_spark:net"}, {"net"}) == []
    found = resolve([*used, "rs_spark:net.address.redact"])
    assert {item for item, error in found.items() if error} == {
        "rs_spark:spark.lcoal_session",
        "from rs_spark.spark.jvm:jvm.nope",
        "rs_spark:net.address.redact",
    }


def test_the_pages_checked_exist():
    assert all((ROOT / p).exists() for p in NAMES_PAGES) and Path(__file__).exists()
