"""The Python helpers take Spark options as ``options={...}``, apart from their own keywords; the
old call style (options as keyword arguments) still works, with a DeprecationWarning at the
user's line."""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import pytest

import rs_spark
from rs_spark.spark import realtime
from rs_spark.spark.options import spark_options


def test_options_as_keyword_arguments_warn_at_the_callers_line_and_still_count():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        merged = spark_options({"a": 1}, {"maxRecordsPerTrigger": 5}, "read_stream")  # this line
        line = inspect.currentframe().f_lineno - 1
    assert merged == {"a": 1, "maxRecordsPerTrigger": 5}
    (w,) = caught
    assert w.category is DeprecationWarning and w.filename == __file__ and w.lineno == line
    assert "pass options={'maxRecordsPerTrigger': ...}" in str(w.message)


def test_an_option_given_both_ways_is_refused():
    with pytest.raises(TypeError, match=r"option\(s\) \['pollTimeout'\] given both in options= and as keyword"):
        spark_options({"pollTimeout": "1s"}, {"pollTimeout": "2s"}, "read_stream")


def test_no_warning_without_keyword_options():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert spark_options(None, {}, "write_stream") == {}


@pytest.mark.parametrize(
    "fn",
    [rs_spark.read_stream, rs_spark.write_stream, rs_spark.serve_sink, realtime.read_stream, realtime.write_stream],
)
def test_the_entry_points_have_typed_parameters_and_options_apart(fn):
    sig = inspect.signature(fn)
    params = sig.parameters.values()
    assert sig.return_annotation not in (inspect.Signature.empty, "Any")
    for p in params:
        if p.kind is not p.VAR_KEYWORD:
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
