"""The single reader: one publisher read through Spark's driver-side reader process.

:mod:`.reader` (Spark's reader: look, let the planner decide, act), :mod:`.live` (the reader
process's state), :mod:`.intake` (its Subscriber; :mod:`.chunks`, the elements it holds),
:mod:`.upstream` (offsets <-> stream positions, acknowledgements), :mod:`.planned` (planned
micro-batches kept replayable; :mod:`.replay_log`, :mod:`.handoff`), :mod:`.partitions` (where a
micro-batch's rows are for executors), :mod:`.bind_address` (where its batch server listens).
"""
