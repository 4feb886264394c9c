"""The Kafka broker goes away (the stack's real broker stopped): before `land` asks it for offsets, and in the
middle of the batch's read. Each time `land` waits its bounded time (source.connect_timeout_seconds), then exits
with one line naming the brokers (exit 6, no traceback); once the broker is back, `land` lands the same batch
exactly once and the view equals the source.

Stopping the broker stops Kafka Connect too (it needs the broker); the test brings the whole stack back up."""

from __future__ import annotations

import random
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import lakecompact as command
from tests.support.cli import read_views
from tests.support.crash import stop_at
from tests.support.databases import database_name, lake_config
from tests.support.layout import archived_batches, batch_folders
from tests.support.source import Source

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.alone]

TABLE = "public_items"


def one_line_outage(result: subprocess.CompletedProcess, servers: str, last: str) -> None:
    assert result.returncode == 6, result.stderr
    assert "Traceback" not in result.stderr and "at org.apache" not in result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("lakecompact: ")]
    assert error.startswith(f"lakecompact: error: the Kafka brokers {servers} did not answer within 3s; last: {last}"), error


def produce(spark, servers: str, topic: str, lines: list[dict]) -> None:
    """The lines' keys and values as Kafka messages (a null value is a Kafka tombstone), in order."""
    frame = spark.createDataFrame([(line["key"], line["payload"]) for line in lines], "key STRING, value STRING")
    frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", topic).save()


def test_land_names_kafka_brokers_that_are_gone_and_lands_exactly_once_they_are_back(stack, spark, tmp_path):
    database = database_name()
    topic = f"outage{uuid.uuid4().hex[:8]}.public.items"
    servers = stack.KAFKA_BOOTSTRAP
    config = lake_config(tmp_path, database, stack.METASTORE_URI, source=(
        f'kind = "kafka"\nbootstrap_servers = "{servers}"\ntopics = ["{topic}"]\nconnect_timeout_seconds = 3\n'))
    source = Source(topic, random.Random(11))
    positions = iter(range(95, 10_000, 3))  # LSNs that cross 99 -> 101: compared as numbers
    first = [line for key in range(1, 7) for _ in range(2) for line in source.change(key, next(positions))]
    produce(spark, servers, topic, first)

    try:
        stack.down(["kafka"])
        # asking for the partitions' offsets: nobody listens
        one_line_outage(command(config, "land"), servers, last=f"{servers}: Connection refused")
        stack.up(components=["kafka"])
        landed = command(config, "land")
        assert landed.returncode == 0, landed.stderr
        assert f"land: batch 1: {len(first)} events in" in landed.stdout, landed.stdout

        second = [line for key in range(4, 10) for line in source.change(key, next(positions))]
        produce(spark, servers, topic, second)
        # stopped once batch 2's offsets are planned, the broker goes away, and the batch's read cannot fetch them
        one_line_outage(stop_at(config, ("land",), "intent", lambda: stack.down(["kafka"])), servers,
                        last="the Kafka client: ")  # Spark's reader gave up after the timeout
    finally:
        stack.up()  # the broker, and Connect, which stopped with it

    again = command(config, "land")
    assert again.returncode == 0, again.stderr
    assert "land: batch 2 was interrupted; landing the same input again" in again.stdout
    assert f"land: batch 2: {len(second)} events in" in again.stdout, again.stdout
    assert "nothing new to land" in command(config, "land").stdout
    compacted = command(config, "compact")
    assert compacted.returncode == 0, compacted.stderr
    changes = sum(line["payload"] is not None for line in first + second)  # Kafka tombstones are no change
    assert f"compact {TABLE}: base v0 -> v1: {changes} events from 2 batch(es)" in compacted.stdout, compacted.stdout
    assert read_views(config, database, [TABLE])[TABLE] == expected_view(source.model)
    table = Path(tmp_path / "warehouse" / database / TABLE)
    assert batch_folders(table) == ["batch=1", "batch=2"] and archived_batches(table) == [1, 2]  # each landed once
