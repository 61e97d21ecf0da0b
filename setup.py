"""The metadata is in pyproject.toml; this file only adds the build step that compiles the JVM
shim into the wheel (jvm-shim/rs_spark_build.py says how, and what it needs)."""

import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "jvm-shim"))
from rs_spark_build import BuildPy  # noqa: E402  # importable once jvm-shim/ is on sys.path

setup(cmdclass={"build_py": BuildPy})
