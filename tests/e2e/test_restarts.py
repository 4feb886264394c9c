"""Restarts: Kafka Connect killed hard in the middle of the workload, and `land` crashed in the middle of a batch.

PostgreSQL and MariaDB at once (two connectors in the one Connect worker): `accounts` (primary key, large
text, TOASTed in PostgreSQL) in both, and PostgreSQL's `audit` (no primary key). After their snapshots a paced workload runs; as soon as its events
flow into Kafka, Connect gets SIGKILL (stack.kill_connect) while the workload goes on. What reached Kafka is
landed (a crash right after that batch's commit leaves its intent file behind) and compacted; then Connect
restarts and Debezium sends again what it had not committed (the duplicates are counted), and more workload
follows. The next `land` crashes after writing the first table of its batch and is run again (in-process, by
making a step raise: the suite's one SparkSession keeps the embedded metastore, which a second JVM could not
open); with max_events_per_batch, more runs land the rest; then compact. The view equals the source exactly,
and every Kafka message is in the increments exactly once.
"""

from __future__ import annotations

import pytest

from tests.e2e import support

pytestmark = [pytest.mark.e2e, pytest.mark.alone]  # kills Kafka Connect

SEEDS = {"postgres": 1101, "mariadb": 1102}


@pytest.fixture(scope="module")
def restarts(stack, spark, e2e_spark, tmp_path_factory):
    session = support.check_session(spark, e2e_spark)
    return support.restarts_scenario(session, stack, tmp_path_factory.mktemp("restarts"), SEEDS)


def test_views_equal_the_source_after_the_restarts(restarts):
    assert support.assert_equal(restarts.comparisons) > 0


def test_killing_connect_made_debezium_send_events_again(restarts):
    for kill in restarts.facts["kills"]:
        assert 0 < kill["scripts_done"] < kill["scripts"], f"Connect was not killed mid-workload: {kill}"
    assert sum(restarts.duplicates.values()) > 0, (
        f"no event was delivered twice after {len(restarts.facts['kills'])} kills: {restarts.duplicates}")


def test_every_kafka_message_landed_exactly_once(restarts):
    events = sum(1 for m in restarts.messages if m["payload"] is not None)
    assert restarts.landed == events > 0


def test_land_crashed_mid_batch_then_landed_the_same_batch(restarts):
    crash, rerun = restarts.facts["crash"], restarts.facts["rerun"]
    assert len(crash["written_before_crash"]) == 1 and crash["intent"] is not None
    assert rerun.batch == crash["intent"]["batch"]
    assert sum(rerun.rows_out.values()) > 0 and crash["written_before_crash"][0] in rerun.rows_out


def test_land_crashed_after_its_commit_then_did_not_land_that_batch_again(restarts):
    after_commit, crash = restarts.facts["after_commit"], restarts.facts["crash"]
    assert after_commit["crashed"]
    assert crash["intent"]["batch"] == 2  # the committed batch 1 was not landed again


def test_max_events_per_batch_bounds_every_batch(restarts):
    """After the restart more events wait than one batch may take: `land` runs until nothing is left."""
    reports = [restarts.facts["rerun"], *restarts.facts["more"]]
    assert reports[-1].batch is None, "land still had events after 10 runs"
    landed = [r for r in reports if r.batch is not None]
    assert len(landed) >= 2
    assert all(0 < r.events_in <= support.MAX_EVENTS_PER_BATCH for r in landed), [r.events_in for r in landed]
