"""The shim jar carries pyproject.toml's version, and a jar from another build is refused with what to do."""

from __future__ import annotations

import os
import tomllib
import zipfile

import pytest

from rs_spark.jvm import ShimVersionMismatch, gateway  # the exported name a user catches
from rs_spark.jvm.gateway import check_jar_version, jar_version

from .conftest import ROOT, build

DECLARED = tomllib.loads(open(os.path.join(ROOT, "pyproject.toml")).read())["project"]["version"]


def _jar_like_the_shim(path, manifest: str) -> str:
    """A copy of the built shim jar whose manifest is ``manifest`` (what an older build left behind)."""
    build()
    with zipfile.ZipFile(gateway.jar_path()) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = manifest.encode() if item.filename == "META-INF/MANIFEST.MF" else src.read(item)
            dst.writestr(item, data)
    return str(path)


def test_the_built_jar_carries_the_version_of_pyproject_toml():
    build()
    jar = gateway.jar_path()
    assert jar_version(jar) == DECLARED
    with zipfile.ZipFile(jar) as z:
        assert "Implementation-Title: rs-spark-jvm" in z.read("META-INF/MANIFEST.MF").decode()


def test_a_jar_built_for_another_version_says_it_is_stale_and_how_to_rebuild(tmp_path):
    jar = _jar_like_the_shim(tmp_path / "old.jar", "Manifest-Version: 1.0\nImplementation-Version: 0.0.1\n\n")
    with pytest.raises(ShimVersionMismatch) as info:
        check_jar_version(jar, DECLARED)
    msg = str(info.value)
    assert f"{jar} was built for rs_spark 0.0.1, but this rs_spark is {DECLARED}" in msg
    assert "a stale jar from an older build" in msg and os.path.join("jvm-shim", "build") in msg


def test_a_jar_without_a_version_is_named_as_an_older_build(tmp_path):
    jar = _jar_like_the_shim(tmp_path / "unversioned.jar", "Manifest-Version: 1.0\nCreated-By: 17\n\n")
    assert jar_version(jar) is None
    with pytest.raises(ShimVersionMismatch, match="has no Implementation-Version .an older build."):
        check_jar_version(jar, DECLARED)


def test_a_jar_matching_pyproject_but_not_the_metadata_asks_to_reinstall_the_checkout(tmp_path):
    jar = _jar_like_the_shim(tmp_path / "new.jar", f"Manifest-Version: 1.0\nImplementation-Version: {DECLARED}\n\n")
    with pytest.raises(ShimVersionMismatch) as info:
        check_jar_version(jar, "0.0.0.dev1")  # what an install from before the version bump reports
    assert "the installed package metadata is stale, not the jar" in str(info.value)
    assert f"pip install -e {ROOT}" in str(info.value)


def test_a_wrapped_manifest_line_is_read_whole(tmp_path):
    long_version = "1.2.3+" + "x" * 80  # manifests wrap lines at 72 bytes
    text = f"Manifest-Version: 1.0\nImplementation-Version: {long_version[:40]}\n {long_version[40:]}\n\n"
    assert jar_version(_jar_like_the_shim(tmp_path / "wrapped.jar", text)) == long_version


def test_a_jvm_that_loaded_a_stale_shim_jar_is_refused_naming_the_jar(tmp_path):
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    import rs_spark

    jar = _jar_like_the_shim(tmp_path / "stale.jar", "Manifest-Version: 1.0\nImplementation-Version: 0.0.1\n\n")
    cp = [jar] + [j for j in gateway.standalone_classpath() if j != gateway.jar_path()]
    py4j_jar = next(j for j in cp if os.path.basename(j).startswith("py4j-"))
    port, proc = launch_gateway(
        jarpath=py4j_jar,
        classpath=os.pathsep.join(cp),
        javaopts=list(gateway.JAVA_OPTS),
        die_on_exit=True,
        return_proc=True,
    )
    with gateway.Gateway(JavaGateway(gateway_parameters=GatewayParameters(port=port)), proc) as g:
        with pytest.raises(ShimVersionMismatch) as info:
            gateway.shim(g.jvm)
    msg = str(info.value)
    assert f"from file:{jar}, built for rs_spark 0.0.1, but this rs_spark is {rs_spark.__version__}" in msg
    assert "a stale shim jar is on that JVM's classpath" in msg and gateway.jar_path() in msg
