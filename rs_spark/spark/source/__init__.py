"""The ``reactive`` source: a Publisher read with demand per micro-batch.

:mod:`.reader` (Spark's reader: offsets become ``request(n)``), :mod:`.intake` (the Subscriber in
the reader process), :mod:`.options`, :mod:`.resolve` (where the Publisher comes from),
:mod:`.replay_log` (planned micro-batches made durable), :mod:`.bind_address` and
:mod:`.sigterm` (the reader process's network and shutdown), :mod:`.read_stream` (a Publisher in
the user's process).
"""
