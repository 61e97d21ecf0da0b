"""A small mutation check: break the code on purpose, one way at a time, and see the tests that should
notice fail.

Each mutant in ``tests/mutants/mutants.toml`` names a file, an exact text in it (found exactly once),
its replacement, and the test node ids that must fail with it (or a new file to add, for the checks
that watch the tree itself). This script copies the repository's files (those git tracks or would
track, plus the built jars) into a temporary folder, runs every named test there once unbroken (they
must pass), then for each mutant applies it to the copy, runs its tests, and puts the file back. The
checkout it runs from is never written to.

A mutant is *killed* when every test it names fails; it *survived* when none does; *partly* when
some named test passed (the list is wrong, or the test is weaker than it says). Exit status 0 only
when every mutant was killed; 2 when the list is malformed or a named test fails unbroken.

    python tests/mutants/run.py                 # every mutant (Spark ones take minutes)
    python tests/mutants/run.py -k write_queue  # the mutants whose name or file contains that
    python tests/mutants/run.py --list          # the mutants and their tests, nothing run
    python tests/mutants/run.py --check         # only whether the list is well formed (fast)

``tests/test_mutants.py`` runs ``--check``'s checks in the suite; the full run is on demand
(CONTRIBUTING.md), not in CI: it starts several Spark sessions.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTANTS = Path(__file__).with_name("mutants.toml")
BUILT = ["rs_spark/jvm/jars", "jvm-shim/target"]
"""Folders git ignores that the tests need (the shim's jars): copied when present."""


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    tests: tuple[str, ...]
    original: str | None = None
    replacement: str | None = None
    new_file: str | None = None
    """Instead of a replacement: text of a file ``file`` that does not exist yet."""
    why: str = ""


def load(path: Path = MUTANTS) -> list[Mutant]:
    """The mutants of ``path`` (a TOML list of ``[[mutant]]`` tables)."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    out = []
    for m in data["mutant"]:
        out.append(
            Mutant(
                name=m["name"],
                file=m["file"],
                tests=tuple(m["tests"]),
                original=m.get("original"),
                replacement=m.get("replacement"),
                new_file=m.get("new_file"),
                why=m.get("why", ""),
            )
        )
    return out


def problems(mutants: list[Mutant], root: Path = ROOT) -> list[str]:
    """What is wrong with the list itself (without running any test, see :func:`missing_tests`)."""
    out: list[str] = []
    names = [m.name for m in mutants]
    out += [f"two mutants are named {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    for m in mutants:
        path = root / m.file
        if not m.tests:
            out.append(f"{m.name}: names no test")
        if m.new_file is not None:
            if m.original is not None or m.replacement is not None:
                out.append(f"{m.name}: new_file goes without original/replacement")
            if path.exists():
                out.append(f"{m.name}: {m.file} exists already")
            continue
        if m.original is None or m.replacement is None:
            out.append(f"{m.name}: needs original and replacement (or new_file)")
            continue
        if m.original == m.replacement:
            out.append(f"{m.name}: the replacement is the original")
        if not path.is_file():
            out.append(f"{m.name}: no file {m.file}")
            continue
        n = path.read_text(encoding="utf-8").count(m.original)
        if n != 1:
            out.append(f"{m.name}: its original text occurs {n} times in {m.file}, not once")
    return out


def collected(node_ids: list[str], root: Path = ROOT, python: str = sys.executable) -> set[str]:
    """The node ids among ``node_ids`` that pytest collects in ``root``."""
    files = sorted({n.split("::", 1)[0] for n in node_ids if (root / n.split("::", 1)[0]).is_file()})
    if not files:
        return set()
    r = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
    )
    return {ln.strip() for ln in r.stdout.splitlines() if "::" in ln}


def missing_tests(mutants: list[Mutant], root: Path = ROOT) -> list[str]:
    """The named tests pytest does not collect (renamed, removed, a parameter changed)."""
    wanted = sorted({t for m in mutants for t in m.tests})
    have = collected(wanted, root)
    return [f"no test {t}" for t in wanted if t not in have]


def _env(root: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")


def _copy_tree(dest: Path) -> None:
    """The files git tracks or would track, and the built jars, into ``dest`` (times kept: the jar
    builds see their outputs as fresh)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in (p.decode() for p in listed if p):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for rel in BUILT:
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, dest / rel, dirs_exist_ok=True)


def _outcomes(xml: Path) -> dict[str, str]:
    """``classname::name`` -> passed / failed / skipped, from pytest's JUnit XML."""
    out: dict[str, str] = {}
    if not xml.exists():
        return out
    for case in ET.parse(xml).getroot().iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            out[key] = "failed"
        elif case.find("skipped") is not None:
            out[key] = "skipped"
        else:
            out[key] = "passed"
    return out


def _junit_key(node_id: str) -> str:
    """The JUnit XML ``classname::name`` of a pytest node id (``path.py::[Class::]test[param]``)."""
    path, *rest = node_id.split("::")
    cls = path.removesuffix(".py").replace("/", ".")
    return "::".join([".".join([cls, *rest[:-1]]), rest[-1]])


def run_tests(tree: Path, tests: list[str], python: str, timeout: float) -> dict[str, str]:
    """Run ``tests`` in ``tree``; each node id's outcome (``missing`` if it did not run)."""
    xml = tree / ".mutants-junit.xml"
    xml.unlink(missing_ok=True)
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *tests]
    # A session of its own: on a timeout the whole group goes (pytest and the JVMs it started).
    proc = subprocess.Popen(
        cmd, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return dict.fromkeys(tests, "failed (timed out)")
    got = _outcomes(xml)
    return {t: got.get(_junit_key(t), "missing") for t in tests}


def apply(m: Mutant, tree: Path) -> str | None:
    """Break ``tree`` as ``m`` says; the file's former text (None: it did not exist)."""
    path = tree / m.file
    if m.new_file is not None:
        path.write_text(m.new_file, encoding="utf-8")
        return None
    assert m.original is not None and m.replacement is not None
    before = path.read_text(encoding="utf-8")
    path.write_text(before.replace(m.original, m.replacement, 1), encoding="utf-8")
    return before


def restore(m: Mutant, tree: Path, before: str | None) -> None:
    path = tree / m.file
    if before is None:
        path.unlink()
    else:
        path.write_text(before, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="only", help="run the mutants whose name or file contains this text")
    ap.add_argument("--list", action="store_true", help="print the mutants and their tests; run nothing")
    ap.add_argument("--check", action="store_true", help="only check the list is well formed")
    ap.add_argument("--python", default=sys.executable, help="the interpreter the tests run with")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds one pytest run may take")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    ap.add_argument("--mutants", type=Path, default=MUTANTS, help="the list (default: tests/mutants/mutants.toml)")
    args = ap.parse_args(argv)

    mutants = load(args.mutants)
    if args.only:
        mutants = [m for m in mutants if args.only in m.name or args.only in m.file]
    bad = problems(mutants)
    if args.list:
        for m in mutants:
            print(f"{m.name}\n  {m.file}\n" + "".join(f"    {t}\n" for t in m.tests))
        return 0
    bad += missing_tests(mutants)
    if bad or args.check:
        print("\n".join(bad) or f"{len(mutants)} mutants, well formed")
        return 2 if bad else 0

    tree = Path(tempfile.mkdtemp(prefix="rs_spark-mutants-"))
    try:
        _copy_tree(tree)
        print(f"copy of the tree: {tree}", flush=True)
        every = sorted({t for m in mutants for t in m.tests})
        base = run_tests(tree, every, args.python, args.timeout)
        broken = [f"{t}: {o}" for t, o in base.items() if o != "passed"]
        if broken:
            print("the named tests do not pass without a mutant:\n  " + "\n  ".join(broken))
            return 2
        print(f"unbroken: {len(every)} named tests pass", flush=True)
        failed_mutants = 0
        for m in mutants:
            before = apply(m, tree)
            try:
                got = run_tests(tree, list(m.tests), args.python, args.timeout)
            finally:
                restore(m, tree, before)
            dead = [t for t, o in got.items() if o.startswith("failed")]
            verdict = "killed" if len(dead) == len(got) else "survived" if not dead else "partly"
            failed_mutants += verdict != "killed"
            print(f"{verdict:8}  {m.name}  ({m.file})", flush=True)
            for t, o in got.items():
                print(f"            {o:8} {t}")
        print(f"{len(mutants) - failed_mutants} of {len(mutants)} mutants killed")
        return 1 if failed_mutants else 0
    finally:
        if args.keep:
            print(f"kept {tree}")
        else:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
