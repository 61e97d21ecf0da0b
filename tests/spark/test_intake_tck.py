"""The source's Subscriber (Intake) through the kit's blackbox subscriber verification."""
from __future__ import annotations

from rs_spark.spark.intake import Intake
from rs_spark.tck import SubscriberBlackboxVerification, Timeouts


class TestIntakeBlackbox(SubscriberBlackboxVerification):
    timeouts = Timeouts(default=0.5, no_signals=0.05, poll=0.01, gc=0.5)

    def create_subscriber(self):
        return Intake(max_buffered=16, base_offset=0)

    def trigger_request(self, subscriber):
        subscriber.demand_up_to(4)  # what latestOffset does for a micro-batch
