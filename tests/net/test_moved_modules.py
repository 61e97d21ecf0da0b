"""The module paths of rs_spark.net before its split into protocol/ and zero_loss/ still import,
warn, and give the very module at its new path."""

import importlib
import subprocess
import sys

import pytest

from rs_spark.net._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_imports_the_moved_module_with_a_deprecation_warning(old):
    # A fresh interpreter: the old path must not be cached in sys.modules by another test.
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"new = importlib.import_module({MOVED[old]!r})\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as w:\n"
        f"    assert {MOVED[old]!r} in str(w), w\n"
        "else:\n"
        "    raise SystemExit('no DeprecationWarning')\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"old = importlib.import_module({old!r})\n"
        "assert old is new, (old, new)\n"
        f"assert new.__spec__.name == {MOVED[old]!r}, new.__spec__\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_from_rs_spark_net_import_an_old_module_name_gives_the_moved_module():
    import rs_spark.net as net

    sys.modules.pop("rs_spark.net.frames", None)  # as if no test imported the old path before
    vars(net).pop("frames", None)
    with pytest.warns(DeprecationWarning, match="rs_spark.net.protocol.frames"):
        from rs_spark.net import frames  # noqa: F401 (the old spelling under test)
    assert frames is importlib.import_module("rs_spark.net.protocol.frames")


def test_every_public_name_of_rs_spark_net_still_imports():
    import rs_spark.net as net

    for name in net.__all__:
        assert getattr(net, name) is not None, name
