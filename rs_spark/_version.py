"""The installed distribution's version, in a leaf module so any layer may read it without
importing the package root (which imports the upper layers)."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("rs-spark")  # one source of truth: pyproject.toml
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
