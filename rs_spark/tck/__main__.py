"""``python -m rs_spark.tck package.module:factory``: check a Publisher factory rule by rule.

``factory(elements: int) -> Publisher`` must return a publisher of exactly ``elements``
elements followed by ``on_complete``. Prints one line per JVM TCK publisher test it runs, then
the rules no test can check (the JVM TCK's untested ones), and exits 1 when a required test fails.
An optional test fails unless ``--not-implemented RULE`` declares that rule not implemented.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

from .env import Timeouts
from .publisher import RULES, PublisherVerification
from .runner import run_verification, untested_rules


def _load(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"expected package.module:factory, got {spec!r}")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m rs_spark.tck", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("factory", help="package.module:factory, called as factory(elements) -> Publisher")
    ap.add_argument("--failed", help="package.module:factory() -> a Publisher that signals on_error")
    ap.add_argument(
        "--max-elements",
        type=int,
        default=2**63 - 2,
        help="the most elements the factory can produce (2**63-1: it never completes)",
    )
    ap.add_argument(
        "--timeout-ms", type=int, default=None, help="default timeout (ms); else RS_TCK_DEFAULT_TIMEOUT_MS, else 100"
    )
    ap.add_argument(
        "--no-signals-timeout-ms",
        type=int,
        default=None,
        help="quiet period (ms); else RS_TCK_NO_SIGNALS_TIMEOUT_MS, else the default timeout",
    )
    ap.add_argument("--poll-timeout-ms", type=int, default=None, help="else RS_TCK_POLL_TIMEOUT_MS")
    ap.add_argument("--gc-timeout-ms", type=int, default=None, help="else RS_TCK_GC_TIMEOUT_MS, else 300")
    ap.add_argument("--skip-stochastic", action="store_true")
    ap.add_argument(
        "--not-implemented",
        action="append",
        default=[],
        metavar="RULE",
        help="an optional rule the publisher does not implement (e.g. 1.11): its tests skip instead of failing",
    )
    args = ap.parse_args(argv)
    not_implemented = set(args.not_implemented)
    sys.path.insert(0, "")
    factory = _load(args.factory)
    failed = _load(args.failed) if args.failed else None

    class Verification(PublisherVerification):
        __test__ = False
        timeouts = Timeouts.resolve(
            args.timeout_ms, args.no_signals_timeout_ms, args.poll_timeout_ms, args.gc_timeout_ms
        )

        def create_publisher(self, elements: int) -> Any:
            return factory(elements)

        def create_failed_publisher(self) -> Any:
            return failed() if failed else None

        def max_elements_from_publisher(self) -> int:
            return int(args.max_elements)

        def skip_stochastic_tests(self) -> bool:
            return bool(args.skip_stochastic)

        def _allowed_skip(self, name: str) -> str | None:
            rule = self._rule_of(name)
            return "--not-implemented" if rule in not_implemented else None

    outcomes = run_verification(Verification(), RULES)
    width = max(len(o.name) for o in outcomes) - len("test_")
    print(f"{'result':<6} {'status':<10} {'rule':<5} {'test':<{width}}  reason")
    for o in outcomes:
        print(f"{o.result.upper():<6} {o.status:<10} {o.rule:<5} {o.name[5:]:<{width}}  {o.message[:160]}")
    untested = untested_rules(Verification)
    print(f"rules no test can check (the JVM TCK's untested tests), {len(untested)}:")
    for u in untested:
        print(f"UNTESTED {u.rule:<5} {u.name[5:]:<{width}}  {u.why}")
    failed_required = [o for o in outcomes if o.result == "fail" and o.status in ("required", "stochastic")]
    n = {r: sum(1 for o in outcomes if o.result == r) for r in ("pass", "fail", "skip")}
    print(f"{n['pass']} passed, {n['fail']} failed, {n['skip']} skipped, {len(untested)} rules untested")
    if failed_required:
        print(f"{len(failed_required)} required test(s) failed: the publisher does not conform", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
