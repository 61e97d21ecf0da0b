"""The single reader: one publisher read through Spark's driver-side reader process.

:mod:`.reader` (Spark's reader: look, let the planner decide, act), :mod:`.live` (the reader
process's state), :mod:`.intake` (its Subscriber; :mod:`.chunks`, the elements it holds),
:mod:`.upstream` (offsets <-> stream positions, acknowledgements), :mod:`.planned` (planned
micro-batches kept replayable; :mod:`.replay_log`, :mod:`.handoff`), :mod:`.partitions` (where a
micro-batch's rows are for executors), :mod:`.batch_fetch` (the batch server executors fetch them
from: its own small TCP/JSON/HMAC protocol), :mod:`.bind_address` (where the batch server listens).
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named
    from ...._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
