"""The Python helpers take Spark options as ``options={...}``, apart from their own keywords (the
package has not shipped: there is no older call style to keep)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import rs_spark
from rs_spark.spark import realtime
from rs_spark.spark.jvm import read_jvm_stream


def test_an_option_as_a_keyword_argument_is_refused_by_the_signature():
    with pytest.raises(TypeError, match="unexpected keyword argument 'maxRecordsPerTrigger'"):
        rs_spark.read_stream(None, None, maxRecordsPerTrigger=5)  # options={...} is the one way


@pytest.mark.parametrize(
    "fn",
    [
        rs_spark.read_stream,
        rs_spark.write_stream,
        rs_spark.serve_sink,
        realtime.read_stream,
        realtime.write_stream,
        read_jvm_stream,
    ],
)
def test_the_entry_points_have_typed_parameters_and_options_apart(fn):
    sig = inspect.signature(fn)
    params = sig.parameters.values()
    assert sig.return_annotation not in (inspect.Signature.empty, "Any")
    for p in params:
        assert p.kind is not p.VAR_KEYWORD, (fn.__qualname__, p.name)
        assert p.annotation not in (inspect.Parameter.empty, "Any"), (fn.__qualname__, p.name)
    if fn is not rs_spark.serve_sink:
        assert sig.parameters["options"].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_top_level_helpers_carry_the_signatures_of_the_functions_they_call():
    from rs_spark.spark.sink.write_stream import write_stream
    from rs_spark.spark.source.read_stream import read_stream

    for top, real in ((rs_spark.read_stream, read_stream), (rs_spark.write_stream, write_stream)):
        assert list(inspect.signature(top).parameters) == list(inspect.signature(real).parameters)


def test_import_rs_spark_does_not_import_pyspark():
    code = "import sys, rs_spark; assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# In a fresh interpreter: `import rs_spark` alone, then every public module of the package is reachable
# as an attribute chain (rs_spark.spark.register, rs_spark.spark.jvm.read_jvm_stream, ...), each
# imported when first named; pyspark only once rs_spark.spark is.
_ATTRIBUTE_CHAINS = r"""
import pathlib, sys
import rs_spark
assert "pyspark" not in sys.modules, "import rs_spark imported pyspark"
assert {"spark", "net", "streams", "jvm"} <= set(dir(rs_spark)), dir(rs_spark)
assert not hasattr(rs_spark, "no_such_thing")
net = rs_spark.net.protocol.address.redact
assert "pyspark" not in sys.modules, "rs_spark.net imported pyspark"
for package in (rs_spark.spark, rs_spark.spark.realtime, rs_spark.spark.jvm, rs_spark.net, rs_spark.streams):
    for name in package.__all__:
        assert hasattr(package, name), (package.__name__, name)
assert rs_spark.spark.jvm.read_jvm_stream and rs_spark.spark.register and rs_spark.spark.local_session
root = pathlib.Path(rs_spark.__file__).parent  # found on disk: nothing imported yet
names = []
for f in root.rglob("*.py"):
    parts = f.relative_to(root).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    if parts and not any(p.startswith("_") for p in parts) and "pipelines" not in parts:
        names.append(".".join(("rs_spark", *parts)))
for dotted in names:
    obj = rs_spark
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    # a function that hides its module of the same name (rs_spark.streams.create) is what users get there
    assert obj is sys.modules[dotted] or getattr(obj, "__module__", None) == dotted, dotted
print(len(names))
"""


def test_every_public_module_is_an_attribute_chain_after_import_rs_spark_alone():
    done = subprocess.run([sys.executable, "-c", _ATTRIBUTE_CHAINS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) > 100, done.stdout
