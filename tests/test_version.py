"""The version users see comes from the installed package's metadata (pyproject.toml)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import rs_spark


def test_version_is_the_package_metadata_and_pyproject():
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["version"]
    assert rs_spark.__version__ == metadata.version("rs-spark") == declared
