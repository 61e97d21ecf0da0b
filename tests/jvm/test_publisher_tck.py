"""JVM Publishers as Python Publishers (rs_spark.jvm.JvmPublisher) through rs_spark.tck, with a real JVM."""

from __future__ import annotations

import pytest

from rs_spark.jvm import JvmPublisher
from rs_spark.tck import PublisherVerification, Timeouts

from ..tck.skips import bounded, no_failed_publisher

T = Timeouts(default=2.0, no_signals=0.1, poll=0.01, gc=1.0)
MAX = 2**63 - 1


@pytest.fixture(autouse=True)
def _jvm(request, jvm):
    if request.instance is not None:
        request.instance.jvm = jvm


class TestSubmissionPublisherValues(PublisherVerification):
    """The JDK's SubmissionPublisher of Longs, elements as Python ints."""

    timeouts = T
    skips = {}

    def create_publisher(self, elements):
        S = self.jvm.rsspark.jvm.Sources
        src = S.submissionEndless() if elements >= MAX else S.submissionLongs(elements)
        return JvmPublisher(src, self.jvm)

    def create_failed_publisher(self):
        return JvmPublisher(self.jvm.rsspark.jvm.Sources.submissionFailing(0, "failed publisher"), self.jvm)


class TestSubmissionPublisherBatchesOverPy4jBytes(PublisherVerification):
    """Elements as one-row RecordBatches, carried as byte[] through py4j."""

    timeouts = T
    skips = {}

    def create_publisher(self, elements):
        S = self.jvm.rsspark.jvm.Sources
        src = S.submissionEndless() if elements >= MAX else S.submissionStrings(elements)
        return JvmPublisher(src, self.jvm, elements="batches", batch_rows=1, transfer="bytes")

    def create_failed_publisher(self):
        return JvmPublisher(
            self.jvm.rsspark.jvm.Sources.submissionFailing(0, "failed"), self.jvm, elements="batches", batch_rows=1
        )


class TestNettyHandlerPublisher(PublisherVerification):
    """netty-reactive-streams' HandlerPublisher (an org.reactivestreams.Publisher, via FlowAdapters)."""

    timeouts = T
    skips = {**no_failed_publisher("netty's HandlerPublisher of elements only"), **bounded(10_000, "written up front")}

    def max_elements_from_publisher(self):
        return 10_000  # the netty client writes them all into the channel up front

    def create_publisher(self, elements):
        return JvmPublisher(self.jvm.rsspark.fixtures.NettyPublishers.longs(elements), self.jvm)
