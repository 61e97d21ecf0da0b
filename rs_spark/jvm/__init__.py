"""Python side of the JVM shim (py4j): JVM Publishers and Subscribers as Python ones, Arrow across.

- :class:`JvmPublisher`: a JVM ``Flow.Publisher`` / ``org.reactivestreams.Publisher`` as a Python
  Publisher; elements cross as Arrow record batches, one py4j call per batch.
- :class:`JvmSubscriber`: a Python Subscriber feeding a JVM ``Flow.Subscriber``.
- :func:`open_publisher`: a JVM Publisher named by text (``"com.example.Feeds#quotes"``) in this
  process's own standalone JVM; the reader's ``jvmPublisher`` option uses it.
- :func:`launch`: a standalone JVM with the shim (no Spark); in Spark use ``spark._jvm``
  (:mod:`rs_spark.spark.jvm` puts the jar on ``spark.jars``).

Imports py4j and pyarrow, never pyspark.
"""

from typing import TYPE_CHECKING

from .factory import JvmFactoryError, open_publisher
from .gateway import (
    JAR_NAME,
    Gateway,
    ShimNotFound,
    ShimVersionMismatch,
    close_shared,
    debian_jar,
    jar_path,
    launch,
    shared,
    shim,
)
from .publisher import JvmError, JvmPublisher
from .schema import UnsupportedColumn, parse_spec, to_spec
from .subscriber import JvmSubscriber

__all__ = [
    "JvmPublisher",
    "JvmSubscriber",
    "JvmError",
    "open_publisher",
    "JvmFactoryError",
    "Gateway",
    "ShimNotFound",
    "ShimVersionMismatch",
    "close_shared",
    "launch",
    "shared",
    "shim",
    "jar_path",
    "debian_jar",
    "JAR_NAME",
    "parse_spec",
    "to_spec",
    "UnsupportedColumn",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
