"""Exactly once and nothing lost under SIGKILL: a driver running three queries without a replay
log (one reads an endpoint that cannot replay but keeps what it sent until Spark commits, one a
replayable publisher, one two endpoints as partitions) is killed at random points over 20 trials and restarted from its
checkpoints each time (tests/reliability/trial.py). Every element the publishers emitted reaches
the Subscribers once, in order, or is still kept by the endpoint for the next run."""

from __future__ import annotations

import os

import pytest

from tests.reliability.trial import Trial

TRIALS = int(os.environ.get("RS_FAULT_TRIALS", "20"))


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_sigkill_of_the_driver_loses_nothing_and_never_duplicates(tmp_path):
    trial = Trial(tmp_path)
    try:
        trial.kill(runs=TRIALS, seed=int(os.environ.get("RS_FAULT_SEED", "7")))
        trial.finish(run=TRIALS)
        figures = trial.check()
    finally:
        trial.close()
    print(f"\n{TRIALS} SIGKILLs at {trial.kills} s after every query subscribed: {figures}")
