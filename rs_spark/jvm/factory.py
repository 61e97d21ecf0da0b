"""A JVM Publisher named by text and built in this process's own standalone JVM.

This is what the reader's ``jvmPublisher`` option uses: Spark's driver-side reader runs in a
Python process with no py4j link to the driver JVM, so the Publisher lives in a JVM that this
process starts (:func:`rs_spark.jvm.shared`: the shim, pyspark's Arrow jars and the user's jars),
one per process and set of jars, ending with the process.

    pub = open_publisher("com.example.Feeds#quotes", jars=["/opt/feeds.jar"], options={"symbol": "X"})

``spec``: ``"com.example.Feeds#quotes"`` (a public static method taking nothing or a
``Map<String, String>`` of the options) or ``"com.example.QuotePublisher"`` (a public
``Flow.Publisher`` / ``org.reactivestreams.Publisher`` class with a no-argument or ``Map``
constructor). Imports py4j and pyarrow, never pyspark.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .gateway import shared
from .publisher import JvmPublisher


class JvmFactoryError(ValueError):
    """The named JVM Publisher cannot be built; the message names the option, its value and the fix."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind  # jars, class, method, type, raised, jvm


def expand_jars(jars: Any, option: str = "jvmJars") -> list[str]:
    """``"a.jar,lib/*.jar"`` or a list -> existing jar paths (globs expanded); a missing one is an error."""
    if not jars:
        return []
    items = [j.strip() for j in (jars.split(",") if isinstance(jars, str) else jars) if j and str(j).strip()]
    out: list[str] = []
    for item in items:
        item = os.path.expanduser(str(item))
        if any(ch in item for ch in "*?["):
            found = sorted(glob.glob(item))
            if not found:
                raise JvmFactoryError(
                    f"option {option}: {item!r} matches no file; give jar paths (or globs) that "
                    "exist on the machine running the reader (the Spark driver)",
                    "jars",
                )
            out.extend(found)
        elif os.path.isfile(item) or os.path.isdir(item):
            out.append(item)
        else:
            raise JvmFactoryError(
                f"option {option}: jar {item!r} does not exist; give comma-separated jar paths "
                "that exist on the machine running the reader (the Spark driver)",
                "jars",
            )
    return out


_HINTS = {
    "class": "Put the jar holding it on option {jars_option} (comma-separated jar paths or globs){now}, and check "
    "the spelling (package.Class; a nested class is package.Outer$Inner)",
    "method": "Name a public static method taking no argument or a Map<String, String> (com.example.Feeds#method), "
    "or a public Publisher class with such a constructor",
    "type": "Make the factory return a java.util.concurrent.Flow.Publisher or an org.reactivestreams.Publisher "
    "(then put reactive-streams.jar on option {jars_option} too)",
    "raised": "Fix the factory, or the options it reads (option publisher.NAME reaches it as NAME, e.g. 'count')",
}


def resolve(
    jvm: Any,
    spec: str,
    options: Mapping[str, Any] | None = None,
    *,
    option: str = "jvmPublisher",
    jars: Sequence[str] = (),
    jars_option: str = "jvmJars",
) -> Any:
    """The JVM Publisher ``spec`` names, in ``jvm`` (a py4j JVMView), or :class:`JvmFactoryError`."""
    from py4j.protocol import Py4JJavaError

    opts: dict[str, str] = {str(k): str(v) for k, v in (options or {}).items()}
    try:
        return jvm.rsspark.jvm.Shim.publisher(spec, opts)
    except Py4JJavaError as exc:
        jexc = exc.java_exception
        text = str(jexc.getMessage() or jexc.toString())
        kind = "raised"
        if text.startswith("[") and "] " in text:
            kind, _, text = text[1:].partition("] ")
        now = f" (now: {','.join(jars)})" if jars else " (none given)"
        hint = _HINTS.get(kind, _HINTS["raised"]).format(jars_option=jars_option, now=now)
        # A factory that threw: its Java stack trace (the cause) shows where. Otherwise (no such class,
        # method, not a Publisher) the message says all there is; py4j's trace of Shim would only add noise.
        cause = exc if kind == "raised" else None
        raise JvmFactoryError(f"option {option}={spec!r}: {text}. {hint}", kind) from cause


def open_publisher(
    spec: str,
    jars: Any = (),
    options: Mapping[str, Any] | None = None,
    *,
    option: str = "jvmPublisher",
    jars_option: str = "jvmJars",
    **kwargs: Any,
) -> JvmPublisher:
    """Start (or reuse) this process's standalone JVM with ``jars``, build the Publisher ``spec``
    names with ``options`` and wrap it as a :class:`JvmPublisher` (keyword arguments go there;
    default ``elements="batches"``)."""
    paths = expand_jars(jars, jars_option)
    try:
        gw = shared(paths)
    except Exception as exc:
        raise JvmFactoryError(
            f"option {option}={spec!r}: cannot start a JVM for it in this process: "
            f"{type(exc).__name__}: {exc}. It needs java (17+) on PATH or JAVA_HOME, and "
            "pyspark installed (its Arrow jars)",
            "jvm",
        ) from exc
    jpub = resolve(gw.jvm, spec, options, option=option, jars=paths, jars_option=jars_option)
    kwargs.setdefault("elements", "batches")
    return JvmPublisher(jpub, gw.jvm, **kwargs)


__all__ = ["open_publisher", "resolve", "expand_jars", "JvmFactoryError"]
