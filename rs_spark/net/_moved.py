"""The module paths of ``rs_spark.net`` before it was split into :mod:`.protocol` and
:mod:`.zero_loss` (0.x): ``import rs_spark.net.frames`` still works, warns once, and gives the
module at its new path (the same module object, so patches and ``isinstance`` checks still hold).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

_PROTOCOL = (
    "address auth bridge budget channel codecs connection conventions errors frames framing metadata "
    "outbound refuser tls transport websocket worker"
)
_ZERO_LOSS = "batch_fetch resume resume_client resume_server retention spill"

MOVED: dict[str, str] = {
    **{f"rs_spark.net.{m}": f"rs_spark.net.protocol.{m}" for m in _PROTOCOL.split()},
    **{f"rs_spark.net.{m}": f"rs_spark.net.zero_loss.{m}" for m in _ZERO_LOSS.split()},
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at its new path."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (or the public names from rs_spark.net)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._specs[new] = module.__spec__  # the import system sets __spec__ to the alias's: put it back
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self._specs[module.__name__]


def install() -> None:
    """Make the old paths importable (once per process)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
