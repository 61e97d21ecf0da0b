"""A reproduction of a Spark race without rs_spark: several queries of one discovered Python data source.

Spark discovers Python data sources in ``pyspark_*`` modules and keeps one ``PythonFunction`` for
each, whose ``envVars`` is a Scala ``mutable.HashMap`` (``PythonUtils.createPythonFunction``). Every
query of that source shares the map (``UserDefinedPythonDataSource.createPythonFunction`` copies the
reference), and ``PythonStreamingSourceRunner.init`` puts four entries into it from each query's
stream thread. Queries starting together put at once; the map's size can end above its entries,
and from then on every job whose closure holds the data source fails to serialize: ``Task not
serializable ... IllegalStateException: Illegal size 5 of collection, expected 6``.

    .venv/bin/python tests/reliability/spark_race_repro.py --runs 20 [--queries 10] [--guard]

Each run is a fresh driver (the map is only written with new keys once per JVM); it prints one line
per run (the map's size and entries, the queries that failed) and a count at the end. ``--guard``
swaps the map for a ``ConcurrentHashMap`` first, as rs_spark does (rs_spark/spark/shared_env.py).
Needs only pyspark and pyarrow.

The interleaving is rare in a real driver (the four puts take microseconds), so it can be forced:

    .venv/bin/python tests/reliability/spark_race_repro.py --forced 20000 --queries 3 [--guard]

runs EnvMapRace.java (next to this file) with pyspark's scala-library: the same map, the same four
puts from ``--queries`` threads released together, then the map serialized, ``--forced`` times, and
prints how often each outcome came.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

SOURCE = textwrap.dedent(
    '''
    """A tiny streaming data source and sink, discovered by Spark as format("racerepro")."""
    from pyspark.sql.datasource import (
        DataSource, DataSourceStreamReader, DataSourceStreamWriter, InputPartition, WriterCommitMessage,
    )


    class Reader(DataSourceStreamReader):
        def __init__(self):
            self.n = 0

        def initialOffset(self):
            return {"n": 0}

        def latestOffset(self):
            self.n += 10
            return {"n": self.n}

        def partitions(self, start, end):
            return [InputPartition((start["n"], end["n"]))]

        def read(self, partition):
            lo, hi = partition.value
            for i in range(lo, hi):
                yield (i,)


    class Writer(DataSourceStreamWriter):
        def write(self, iterator):
            return WriterCommitMessage()

        def commit(self, messages, batchId):
            pass


    class DefaultSource(DataSource):
        @classmethod
        def name(cls):
            return "racerepro"

        def schema(self):
            return "id LONG"

        def streamReader(self, schema):
            return Reader()

        def streamWriter(self, schema, overwrite):
            return Writer()
    '''
)


def _function(spark):
    """The one PythonFunction Spark keeps for the discovered data source."""
    return spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource("racerepro").dataSourceCls()


def guard(spark) -> None:
    """The workaround: the shared map becomes a ConcurrentHashMap (as rs_spark/spark/shared_env.py)."""
    fn = _function(spark)
    field = fn.getClass().getDeclaredField("envVars")
    field.setAccessible(True)
    field.set(fn, spark._jvm.java.util.concurrent.ConcurrentHashMap(fn.envVars()))


def one_run(queries: int, seconds: float, use_guard: bool, work: str) -> None:
    """One driver: start the queries one right after another, let them run, report."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-Dsun.io.serialization.extendedDebugInfo=true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    if use_guard:
        guard(spark)
    started = [
        spark.readStream.format("racerepro")
        .load()
        .writeStream.format("racerepro")
        .option("checkpointLocation", os.path.join(work, f"ck{i}"))
        .trigger(processingTime="50 milliseconds")
        .start()
        for i in range(queries)
    ]
    deadline = time.monotonic() + 120 + seconds
    while time.monotonic() < deadline and any(q.isActive and len(q.recentProgress) < 20 for q in started):
        time.sleep(0.2)  # a reproduction script, not a test: it polls the queries' progress
    env = _function(spark).envVars()
    size, entries = env.size(), len(env.keySet().toArray())  # toArray iterates: the entries reachable
    failed = [str(q.exception()) for q in started if q.exception()]
    raced = size != entries or any("Illegal size" in f for f in failed)
    verdict = "RACE" if raced else "other-failure" if failed else "ok"  # other: e.g. a worker's 10 s connect-back
    print(
        f"RUN {verdict} map={env.getClass().getSimpleName()} size={size} entries={entries} "
        f"failed={len(failed)}/{queries}",
        flush=True,
    )
    if failed:
        print(failed[0][:20000], file=sys.stderr, flush=True)
    os._exit(0)  # the queries' state does not matter any more


def forced(trials: int, queries: int, use_guard: bool) -> int:
    """Run EnvMapRace.java against pyspark's Scala library."""
    import glob

    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    scala = glob.glob(os.path.join(jars, "scala-library-*.jar"))
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "EnvMapRace.java")
    cmd = ["java", "-cp", os.pathsep.join(scala), source, str(trials), str(queries)] + (["guard"] if use_guard else [])
    return subprocess.run(cmd).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--guard", action="store_true", help="apply the workaround first")
    ap.add_argument("--forced", type=int, default=0, help="trials of the forced interleaving (EnvMapRace.java)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: one run in this process
    a = ap.parse_args()
    if a.one:
        sys.path.insert(0, a.one)
        one_run(a.queries, a.seconds, a.guard, a.one)
        return 0
    if a.forced:
        return forced(a.forced, a.queries, a.guard)
    bad = 0
    for run in range(a.runs):
        with tempfile.TemporaryDirectory(prefix="spark-race-") as work:
            with open(os.path.join(work, "pyspark_racerepro.py"), "w") as f:
                f.write(SOURCE)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [work, os.environ.get("PYTHONPATH")] if p))
            env.setdefault("PYSPARK_PYTHON", sys.executable)
            cmd = [sys.executable, __file__, "--one", work, "--queries", str(a.queries), "--seconds", str(a.seconds)]
            r = subprocess.run(cmd + (["--guard"] if a.guard else []), env=env, capture_output=True, text=True)
            line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RUN ")), f"RUN exited {r.returncode}")
            corrupt = line.startswith("RUN RACE")
            bad += corrupt
            print(f"{run + 1}: {line}", flush=True)
            if not line.startswith("RUN ok"):
                print(r.stderr[-6000:], flush=True)
    print(f"{bad} of {a.runs} runs corrupted the map or failed with 'Illegal size'", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
