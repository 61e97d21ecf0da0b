"""A Reactive Streams conformance kit for Python, modelled on the JVM TCK.

:class:`PublisherVerification` (the JVM's 38 publisher tests),
:class:`SubscriberBlackboxVerification` (26), :class:`SubscriberWhiteboxVerification` (27) and
:class:`IdentityProcessorVerification` (68). Subclass in a pytest module::

    from rs_spark.tck import PublisherVerification

    class TestMyPublisher(PublisherVerification):
        def create_publisher(self, elements):
            return my_publisher_of(elements)
"""
from .env import ManualSubscriber, TCKFailure, TestEnvironment, Timeouts
from .publisher import RULES as PUBLISHER_RULES
from .processor import PROCESSOR_RULES, IdentityProcessorVerification
from .publisher import PublisherVerification
from .subscriber import (BLACKBOX_RULES, WHITEBOX_RULES, SubscriberBlackboxVerification, SubscriberPuppet,
                         SubscriberWhiteboxVerification, WhiteboxSubscriberProbe)

__all__ = ["IdentityProcessorVerification", "PROCESSOR_RULES", "PublisherVerification", "PUBLISHER_RULES", "SubscriberBlackboxVerification",
           "SubscriberWhiteboxVerification", "WhiteboxSubscriberProbe", "SubscriberPuppet", "BLACKBOX_RULES",
           "WHITEBOX_RULES", "Timeouts", "TestEnvironment", "ManualSubscriber",
           "TCKFailure"]
