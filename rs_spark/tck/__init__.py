"""A Reactive Streams conformance kit for Python, modelled on the JVM TCK.

Work in progress: :class:`PublisherVerification` (all 38 JVM publisher tests) is here;
the subscriber and processor verifications, the self-test suite of broken implementations
and the command line come next. Subclass in a pytest module::

    from rs_spark.tck import PublisherVerification

    class TestMyPublisher(PublisherVerification):
        def create_publisher(self, elements):
            return my_publisher_of(elements)
"""
from .env import ManualSubscriber, TCKFailure, TestEnvironment, Timeouts
from .publisher import RULES as PUBLISHER_RULES
from .publisher import PublisherVerification

__all__ = ["PublisherVerification", "PUBLISHER_RULES", "Timeouts", "TestEnvironment", "ManualSubscriber",
           "TCKFailure"]
