"""One standalone cluster (a master and two workers) for every test in tests/cluster: starting
one costs seconds, and applications run on it one after another."""

from __future__ import annotations

import pytest

from .standalone import Cluster, start_cluster


@pytest.fixture(scope="package")
def cluster(tmp_path_factory) -> Cluster:
    c = start_cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.stop()
