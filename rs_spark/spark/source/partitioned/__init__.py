"""The partitioned reader: several endpoints as partitions, their rows fetched by executors.

:mod:`.reader` (Spark's reader: look, let the planner decide, act), :mod:`.link` (one partition's
positions-only stream in the reader process), :mod:`.fetch` (an executor's fetch of a planned range).
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named
    from ...._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
