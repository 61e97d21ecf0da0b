"""Spark's log level from the start: the configuration a local program passes before its JVM starts.

:func:`rs_spark.spark.local_session` does this by default (``log_level="ERROR"``, with a
configuration shipped in the package); :func:`quiet_conf` writes one into a folder of yours, for a
session you build yourself.

``spark.sparkContext.setLogLevel("ERROR")`` works only once the session exists, after Spark has
printed its start-up messages (the default log4j profile, the hostname and native-library
warnings, "Setting default log level to WARN"). A log4j2 configuration given to the driver JVM
when it starts applies from its first line, as ``--driver-java-options
-Dlog4j2.configurationFile=...`` or a ``log4j2.properties`` in ``SPARK_CONF_DIR`` would::

    spark = local_session("app", **quiet_conf(folder, "ERROR"))

Only the JVM's own notice ``WARNING: Using incubator modules: jdk.incubator.vector`` remains: the
JVM prints it before any logging starts (Spark 4 runs with that module).
"""

from __future__ import annotations

import os

LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")

# One console appender at the level. The logger named after PythonGatewayServer (the class
# pyspark's JVM starts from) gets the same level, or Spark's shell set-up would lower the console
# to WARN and print "Setting default log level".
_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
"""


def quiet_conf(folder: str, level: str = "ERROR") -> dict[str, str]:
    """Spark conf for a session whose JVM starts now: Spark logs at ``level`` and above from its
    start. Writes ``log4j2.properties`` into ``folder`` (keep it until the session stops)."""
    if level.upper() not in LEVELS:
        raise ValueError(f"Spark log level {level!r}: use one of {', '.join(LEVELS)}")
    path = os.path.join(folder, "log4j2.properties")
    with open(path, "w") as f:
        f.write(_LOG4J2.format(level=level.lower()))
    return {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{path}",
        "spark.ui.showConsoleProgress": "false",
    }


__all__ = ["LEVELS", "quiet_conf"]
