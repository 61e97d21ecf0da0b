"""The partitioned reader: several endpoints as partitions, their rows fetched by executors.

:mod:`.reader` (Spark's reader: look, let the planner decide, act), :mod:`.link` (one partition's
positions-only stream in the reader process), :mod:`.fetch` (an executor's fetch of a planned range).
"""
