"""Example publishers, usable as ``format("reactive")`` factories (``rs_spark.examples.sensors:readings``)."""
