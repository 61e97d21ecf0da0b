"""A Reactive Streams conformance kit for Python, modelled on the JVM TCK.

:class:`PublisherVerification` (the JVM's 38 publisher tests),
:class:`SubscriberBlackboxVerification` (26), :class:`SubscriberWhiteboxVerification` (27) and
:class:`IdentityProcessorVerification` (68). Subclass in a pytest module::

    from rs_spark.tck import PublisherVerification

    class TestMyPublisher(PublisherVerification):
        def create_publisher(self, elements):
            return my_publisher_of(elements)

Or without pytest: ``rs_spark.tck.run(verification) -> {test: (pass|fail|skip, message)}``,
or from a shell: ``python -m rs_spark.tck package.module:factory``. A test that does not apply
raises :class:`TckSkipped` (a ``unittest.SkipTest``: pytest and unittest report it as a skip);
``skips = {test or rule: why}`` on the subclass pins which tests may skip (any other skip fails)
and declares optional rules not implemented. The JVM TCK's untested rules are no tests here:
``rs_spark.tck.untested_rules(verification)`` lists them.
Timeouts: class attributes ``default_timeout_ms`` etc., or the RS_TCK_*_TIMEOUT_MS environment variables.
"""

from typing import TYPE_CHECKING

from .env import Latch, ManualSubscriber, Promise, Receptacle, TCKFailure, TestEnvironment, Timeouts
from .processor import PROCESSOR_RULES, IdentityProcessorVerification
from .publisher import RULES as PUBLISHER_RULES
from .publisher import PublisherVerification
from .runner import UntestedRule, run, untested_rules
from .skip import TckSkipped, skip
from .subscriber import (
    BLACKBOX_RULES,
    WHITEBOX_RULES,
    SubscriberBlackboxVerification,
    SubscriberPuppet,
    SubscriberWhiteboxVerification,
    WhiteboxSubscriberProbe,
)

__all__ = [
    "IdentityProcessorVerification",
    "PROCESSOR_RULES",
    "PublisherVerification",
    "PUBLISHER_RULES",
    "SubscriberBlackboxVerification",
    "SubscriberWhiteboxVerification",
    "WhiteboxSubscriberProbe",
    "SubscriberPuppet",
    "BLACKBOX_RULES",
    "WHITEBOX_RULES",
    "Timeouts",
    "TestEnvironment",
    "ManualSubscriber",
    "TCKFailure",
    "TckSkipped",
    "skip",
    "Latch",
    "Promise",
    "Receptacle",
    "run",
    "untested_rules",
    "UntestedRule",
]

if not TYPE_CHECKING:  # a public submodule is imported when first named: rs_spark.spark.register after import rs_spark
    from .._submodules import lazy_submodules as _lazy_submodules

    __getattr__, __dir__ = _lazy_submodules(__name__, __path__)
