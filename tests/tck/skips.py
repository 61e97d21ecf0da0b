"""The skips our TCK test classes pin (``skips = {...}``), by name, with the reason each has.

Every verification in this suite declares ``skips``: a test that skips without being listed fails
(see docs/tck.md). These are the harness limits and optional rules the classes share.
"""

from __future__ import annotations

FAILS_WHEN_FAILED = "test_optional_spec104_must_signal_on_error_when_fails"
REJECTS_WITH_ON_ERROR = (
    "test_required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_"
    "rejection_must_trigger_on_error_after_on_subscribe"
)
ABOVE_MAX_DEMAND = "test_required_spec317_must_not_signal_on_error_when_pending_above_max_demand"
ON_ERROR_TO_ALL = (
    "test_required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error"
)
REQUESTED_LONG_AGO = "test_required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago"


def no_failed_publisher(why: str) -> dict[str, str]:
    """The two tests of a failed publisher skip: ``create_failed_publisher()`` returns None (``why``)."""
    return {FAILS_WHEN_FAILED: f"no failed publisher: {why}", REJECTS_WITH_ON_ERROR: f"no failed publisher: {why}"}


def bounded(max_elements: int, why: str) -> dict[str, str]:
    """The rule 3.17 test needs 2**31-1 elements; ``max_elements_from_publisher()`` is lower (``why``)."""
    return {ABOVE_MAX_DEMAND: f"needs 2**31-1 elements, max_elements_from_publisher() is {max_elements}: {why}"}


UNICAST_PROCESSOR = {
    "1.11": "a single-subscriber Processor (rule 1.11 lets a Publisher choose): a second subscribe gets on_error",
    ON_ERROR_TO_ALL: "needs 2 subscribers; max_supported_subscribers() is 1",
    REQUESTED_LONG_AGO: "needs 2 subscribers; max_supported_subscribers() is 1",
}
"""An operator stage serves one subscriber: the 1.11 tests and the two processor tests needing two skip."""
