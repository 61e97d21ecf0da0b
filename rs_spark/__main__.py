"""``python -m rs_spark demo``: the main job. See ``python -m rs_spark --help``."""

from __future__ import annotations

import argparse
import sys

from .examples.spark_log import LEVELS


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command it names (``demo``); the exit status."""
    args = parser().parse_args(argv)
    if args.command == "demo":
        return _run_demo(args)
    return 2


def parser() -> argparse.ArgumentParser:
    """The command line: ``python -m rs_spark demo [options]``."""
    ap = argparse.ArgumentParser(prog="python -m rs_spark", description="rs_spark command line")
    sub = ap.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo pipeline: bursty sensor publisher -> Spark -> slow Subscriber")
    _add_run_length(demo)
    _add_source(demo)
    _add_feed(demo)
    _add_output(demo)
    _add_spark(demo)
    return ap


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    # --volume scales the feed: applied here so run_demo sees the rates it runs at
    args.rate *= args.volume
    args.burst = int(args.burst * args.volume)
    return run_demo(args)


def _add_run_length(demo: argparse.ArgumentParser) -> None:
    """When the demo ends."""
    demo.add_argument(
        "--batches", type=int, default=10, help="run until this many micro-batches finished (default 10) ..."
    )
    demo.add_argument(
        "--deliveries",
        type=int,
        default=24,
        help="... and the Subscriber received this many window averages (default 24)",
    )
    demo.add_argument(
        "--seconds", type=float, default=240, help="... or stop after this many seconds at most (default 240)"
    )


def _add_source(demo: argparse.ArgumentParser) -> None:
    """What the source reads, and how much per micro-batch."""
    demo.add_argument(
        "--max-records-per-trigger",
        type=int,
        default=2000,
        help="the source's maxRecordsPerTrigger: at most this many sensor records per micro-batch, "
        "its request(n) to the publisher (default 2000)",
    )
    demo.add_argument("--trigger", default="1 second", help="processing-time trigger interval (default '1 second')")
    demo.add_argument(
        "--publisher",
        default="rs_spark.examples.sensors:readings",
        help="package.module:factory of the publisher (default: the embedded sensor feed)",
    )
    demo.add_argument(
        "--endpoint",
        default=None,
        help="read from an rs_spark.net endpoint (tcp://host:port/name?token=...) instead of --publisher",
    )


def _add_feed(demo: argparse.ArgumentParser) -> None:
    """The embedded sensor feed and the slow Subscriber."""
    demo.add_argument(
        "--rate", type=float, default=200, help="the sensor feed's records/s between bursts (default 200)"
    )
    demo.add_argument("--burst", type=int, default=5000, help="the sensor feed's records per burst (default 5000)")
    demo.add_argument(
        "--volume", type=float, default=1.0, help="scale the sensor feed: multiplies --rate and --burst (default 1)"
    )
    demo.add_argument(
        "--subscriber-ms",
        type=float,
        default=100,
        help="milliseconds the demo's slow Subscriber spends per row (default 100)",
    )


def _add_output(demo: argparse.ArgumentParser) -> None:
    """The chart it writes."""
    demo.add_argument(
        "--chart",
        default="rs_spark_demo.png",
        help="where to write the PNG chart (default rs_spark_demo.png; '' for none; needs matplotlib)",
    )


def _add_spark(demo: argparse.ArgumentParser) -> None:
    """The Spark it runs on."""
    demo.add_argument(
        "--master", default="local[2]", help="Spark master URL (default local[2]: Spark in this process, 2 cores)"
    )
    demo.add_argument(
        "--spark-log-level",
        default="ERROR",
        choices=LEVELS,
        type=str.upper,
        help="Spark's log level, from its start (default ERROR)",
    )


if __name__ == "__main__":
    sys.exit(main())
