"""Rows kept until acknowledged, and everything built on them: this project's zero-loss streams.

:mod:`.retention` (the bounded log of rows kept until the reader acknowledges them), :mod:`.spill`
(those rows on disk, across a restart of the serving process), :mod:`.resume` (the wire
conventions of resumption and acknowledgement), :mod:`.resume_server` / :mod:`.resume_client`
(each side of a resumable stream). Built on :mod:`rs_spark.net.protocol`, never the other way round.
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
