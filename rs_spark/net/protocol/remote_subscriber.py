"""A Subscriber served by another process, fed by a local Publisher over a request-channel.

:func:`rs_spark.net.connect_subscriber` returns one: the local Publisher's elements go out as the
channel's PAYLOAD frames through an :class:`~.outbound.OutboundStream`, at the pace the remote
subscriber's REQUEST_N allows. It sees its client as a :class:`~.channel.ChannelClient`.
"""

from __future__ import annotations

import threading
from typing import Any

from ...streams.types import Subscription
from . import frames as F
from .channel import ChannelClient
from .codecs import make_codec
from .conventions import ChannelOpen
from .errors import NetError
from .metadata import request_metadata
from .outbound import OutboundStream
from .worker import in_background


class RemoteSubscriber:
    """A Subscriber served by another process: subscribe it to a local Publisher and the
    elements flow over a request-channel, at the pace the remote subscriber requests.

    It may be subscribed once (rule 2.12); ``wait(timeout)`` blocks until the stream ended and
    raises what ended it abnormally (remote cancel is normal; a connection loss is not).
    """

    def __init__(
        self,
        client: ChannelClient,
        name: str | None,
        own: bool,
        channel_open: str | ChannelOpen = ChannelOpen.FIRST_ELEMENT,
    ) -> None:
        self._client = client
        self._name = name
        self._own = own
        self._where = client.where("subscriber", name)
        self._open = ChannelOpen.of(channel_open, self._where)
        self._stream = OutboundStream(
            make_codec(client.codec_name), self._where, address=self.address, on_end=self._ended
        )
        self._lock = threading.Lock()
        self._subscribed = False

    @property
    def address(self) -> str:
        """The endpoint's address (without the token)."""
        return self._client.address_of(self._name)

    def _ended(self, error: BaseException | None) -> None:
        if self._own:
            self._client.close()

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("on_subscribe(None) is illegal (rule 2.13)")
        with self._lock:
            dup, self._subscribed = self._subscribed, True
        if dup:
            subscription.cancel()  # rule 2.5
            return
        self._stream.on_subscribe(subscription)
        stream = self._stream

        def open_stream() -> None:
            try:
                conn = self._client.connection()
                sid = conn.add_stream(stream)
            except NetError as exc:
                stream.fail(exc)
                return
            meta = request_metadata(conn.metadata_mime, self._name)
            if self._open is ChannelOpen.FIRST_ELEMENT:  # the first element opens the channel
                stream.attach(conn, sid, opening=(meta, 1))
                return
            # The REQUEST_CHANNEL frame names the endpoint and carries no element: the remote
            # subscriber asks for elements with REQUEST_N.
            conn.send(F.encode_request(F.REQUEST_CHANNEL, sid, 1, metadata=meta))
            stream.attach(conn, sid)

        in_background(open_stream, f"rs-net-connect {self._where}")

    def on_next(self, item: Any) -> None:
        self._stream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise TypeError("on_error(None) is illegal (rule 2.13)")
        self._stream.on_error(error)

    def on_complete(self) -> None:
        self._stream.on_complete()

    @property
    def done(self) -> bool:
        """Whether the stream ended (completed, failed or cancelled)."""
        return self._stream.done.is_set()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the stream ends; raise the error that ended it (None: completed or cancelled)."""
        if not self._stream.done.wait(timeout):
            raise TimeoutError(f"{self._where}: the stream did not end within {timeout} s")
        err = self._stream.error
        # The local publisher's own error was forwarded to the remote subscriber: not a failure of the channel.
        if err is not None and err is not self._stream.upstream_error:
            raise err

    def __repr__(self) -> str:
        return f"<RemoteSubscriber {self.address}>"


__all__ = ["RemoteSubscriber"]
