"""The RSocket layer: general; of resumption it holds only the wire's frames and the typed seams a
resumable stream plugs into.

Frames and their codec, metadata and the SETUP token check; the transports (TCP, Unix sockets,
TLS, WebSocket) and length-prefixed framing; the multiplexed :mod:`.connection` with its signal
thread and outbound budget; :mod:`.accepting` (the server's accept loop, wrapping and SETUP checks)
with :mod:`.host` (a server's protocol side), :mod:`.dialling` (the client's connections) with
:mod:`.client` (the Client and its remote Publisher); the two directions of a stream (:mod:`.bridge`
frames in, :mod:`.outbound` frames out, its states in :mod:`.stream_state`) and :mod:`.channel`,
both at once; element codecs, the channel conventions, the errors and the address strings.

It never imports :mod:`rs_spark.net.zero_loss` (an import-linter contract checks it), where resumption
lives; what it knows of it is the RESUME and RESUME_OK frames (the server handler's ``on_resume``, the
client's ``Connection.on_resumed``) and five typed seams: :class:`.keeper.Keeper` (what an
outbound stream asks the side that keeps its rows), :class:`.stream_state.StateTable` (a stream's
states and moves, which a retaining stream brings its own of), :class:`.resumption.Resumption` (what
a connection holds for the stream it resumes), :class:`.host.ResumeHook` (what a server asks the
resume service) and :class:`.client.Resumer` (what reads a remote Publisher as a resumable
stream). The zero-loss room's
:class:`~rs_spark.net.zero_loss.retaining_stream.RetainingStream` is built around an
:class:`.outbound.OutboundStream` through the first three.
"""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from ..._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
