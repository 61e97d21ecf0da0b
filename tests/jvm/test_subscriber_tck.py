"""Python Publisher -> JVM Subscriber (rs_spark.jvm.JvmSubscriber) through rs_spark.tck's blackbox kit."""

from __future__ import annotations

import pytest

from rs_spark.jvm import JvmSubscriber
from rs_spark.tck import SubscriberBlackboxVerification, Timeouts

T = Timeouts(default=2.0, no_signals=0.1, poll=0.01, gc=1.0)


@pytest.fixture(autouse=True)
def _jvm(request, jvm):
    if request.instance is not None:
        request.instance.jvm = jvm


class TestJvmCollectingSubscriber(SubscriberBlackboxVerification):
    """A JVM Flow.Subscriber requesting 4 at a time, behind the Python bridge."""

    timeouts = T
    skips = {}

    def create_subscriber(self):
        return JvmSubscriber(self.jvm.rsspark.jvm.CollectingSubscriber(4), self.jvm, schema="value:int64")

    def create_element(self, i):
        return i


class TestJvmReactiveStreamsSubscriberOneAtATime(SubscriberBlackboxVerification):
    """An org.reactivestreams Subscriber (FlowAdapters) requesting 1 at a time, map elements."""

    timeouts = T
    skips = {}

    def create_subscriber(self):
        flow = self.jvm.rsspark.jvm.CollectingSubscriber(1)
        rs = self.jvm.org.reactivestreams.FlowAdapters.toSubscriber(flow)
        return JvmSubscriber(rs, self.jvm, schema="id:int64,name:string", batch_rows=3)

    def create_element(self, i):
        return {"id": i, "name": f"n{i}"}
