"""Publisher factories that misbehave, for tests/reliability/test_misbehaving_publishers.py."""

from __future__ import annotations

from rs_spark import streams as rs


class _RaisesInSubscribe:
    def subscribe(self, subscriber):
        raise ConnectionRefusedError("broker at 10.0.0.9:9092 refused the connection")


class _RaisesInRequest:
    def subscribe(self, subscriber):
        class S:
            def request(self, n):
                raise RuntimeError(f"request({n}) exploded inside the publisher")

            def cancel(self):
                pass

        subscriber.on_subscribe(S())


class _NeverSubscribes:
    def subscribe(self, subscriber):
        pass  # never calls on_subscribe (breaks rule 1.9)


class _Silent:
    """Calls on_subscribe, then never signals anything."""

    def subscribe(self, subscriber):
        class S:
            def request(self, n):
                pass

            def cancel(self):
                pass

        subscriber.on_subscribe(S())


def raises_in_subscribe(options):
    return _RaisesInSubscribe()


def raises_in_request(options):
    return _RaisesInRequest()


def never_subscribes(options):
    return _NeverSubscribes()


def silent(options):
    return _Silent()


def factory_raises(options):
    raise KeyError("option publisher.topic is required")


def not_a_publisher(options):
    return [1, 2, 3]


def some_then_silent(options):
    """Five records, then nothing, ever."""

    def gen():
        for i in range(5):
            yield (i,)
        import threading

        threading.Event().wait()

    return rs.from_iterable(gen())
