"""The Kafka source: bounded batches through Spark's Kafka connector (`spark-sql-kafka-0-10`).

`plan` asks the brokers for each partition's end offset before anything is read, so the batch's exact
offset ranges go into the intent first; `read` then reads exactly those ranges, the same ones on a rerun.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecompact import retry
from lakecompact.config import SourceConfig
from lakecompact.errors import KafkaUnavailable, LakecompactError
from lakecompact.report import warn
from lakecompact.spark import jvm_class

RAW_SCHEMA = (
    "__kafka_topic STRING, __kafka_partition INT, __kafka_offset BIGINT, key STRING, payload STRING, "
    "__origin STRING, __line_reason STRING, __line STRING, __value_bytes BINARY"
)


class KafkaClientError(LakecompactError):
    """The Kafka client cannot be made: its jars are missing, or a setting is wrong."""


# what the Kafka client's exceptions say when the brokers stopped answering (planning, and Spark's reader)
OUTAGE_SIGNS = (
    "org.apache.kafka.common.errors.TimeoutException",
    "java.util.concurrent.TimeoutException: Cannot fetch record",
)


def broker_addresses(servers: str) -> list[tuple[str, int]]:
    """host and port of each entry of `bootstrap.servers` (`host:port`, or `LISTENER://host:port`)."""
    found = []
    for entry in filter(None, (e.strip() for e in servers.split(","))):
        address = entry.rpartition("://")[2]
        host, colon, port = address.rpartition(":")
        if not colon or not port.isdigit() or host.count(":") and not host.endswith("]"):  # no port given
            host, port = address, "9092"
        found.append((host.strip("[]"), int(port)))
    return found


def wait_for_brokers(source: SourceConfig) -> None:
    """Return once a bootstrap server accepts a connection; KafkaUnavailable after source.connect_timeout_seconds."""
    timeout = source.connect_timeout_seconds
    last = retry.wait_until_reachable(
        broker_addresses(source.bootstrap_servers), timeout,
        waiting=lambda last: warn(f"the Kafka brokers {source.bootstrap_servers} do not answer ({last}); "
                                  f"trying for up to {timeout:.0f}s"),
    )
    if last is not None:
        raise KafkaUnavailable(source.bootstrap_servers, timeout, last)


def as_outage(error: BaseException, source: SourceConfig) -> KafkaUnavailable | None:
    """The one-line error for a failure that says the Kafka brokers stopped answering, else None."""
    if source.kind != "kafka":
        return None
    sign = next((s for s in OUTAGE_SIGNS if s in str(error)), None)
    if sign is None:
        return None
    return KafkaUnavailable(source.bootstrap_servers, source.connect_timeout_seconds, f"the Kafka client: {sign}")


def _timeout_ms(source: SourceConfig) -> str:
    return str(int(source.connect_timeout_seconds * 1000))


def _request_timeout_ms(source: SourceConfig) -> str:
    return str(min(30000, int(source.connect_timeout_seconds * 1000)))


def _client_properties(spark: SparkSession, source: SourceConfig):
    props = jvm_class(spark, "java.util.Properties")()
    props.setProperty("bootstrap.servers", source.bootstrap_servers)
    props.setProperty("group.id", "lakecompact-planner")
    props.setProperty("enable.auto.commit", "false")
    props.setProperty("request.timeout.ms", _request_timeout_ms(source))
    props.setProperty("default.api.timeout.ms", _timeout_ms(source))
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    props.setProperty("key.deserializer", deserializer)
    props.setProperty("value.deserializer", deserializer)
    for key, value in source.kafka_options.items():
        props.setProperty(key.removeprefix("kafka."), value)
    return props


def _consumer(spark: SparkSession, source: SourceConfig):
    try:
        return jvm_class(spark, "org.apache.kafka.clients.consumer.KafkaConsumer")(_client_properties(spark, source))
    except Exception as exc:  # noqa: BLE001 - py4j wraps a missing class or a bad setting
        raise KafkaClientError(
            "cannot create a Kafka client: expected the spark-sql-kafka-0-10 jars on the classpath "
            f"(scripts/stack/install.sh fetches them; on a cluster use --packages) and valid settings ({exc})"
        ) from None


def _topics(consumer, source: SourceConfig) -> list[str]:
    listed = consumer.listTopics()
    names = [str(name) for name in listed.keySet()]
    if source.topic_pattern:
        pattern = re.compile(source.topic_pattern)
        return sorted(n for n in names if pattern.fullmatch(n))
    missing = [t for t in source.topics if t not in names]
    if missing:
        print(f"warning: topics not found yet (skipped this run): {', '.join(missing)}")
    return sorted(t for t in source.topics if t in names)


@dataclass(frozen=True)
class PartitionBounds:
    """What a partition holds now: offsets [begin, end) (end exclusive)."""

    topic: str
    partition: int
    begin: int
    end: int

    @property
    def name(self) -> str:
        return f"{self.topic}:{self.partition}"


def plan(
    spark: SparkSession, source: SourceConfig, landed: dict[str, int], wanted: Callable[[str], bool] | None = None
) -> dict[str, dict[str, int]]:
    """{"topic:partition": {"start": s, "end": e}} for every partition with new events (end exclusive), of
    the topics `wanted` accepts (default all).

    The brokers are asked for each partition's bounds first; see `ranges` for what is taken of them.
    """
    bounds = partition_bounds(spark, source)
    if wanted is not None:
        bounds = [b for b in bounds if wanted(b.topic)]
        if not bounds:
            raise LakecompactError("land --table: no topic of the source lands in that table; expected a table "
                                   "that `lakecompact land --dry-run` lists")
    return ranges(bounds, source, landed)


def partition_bounds(spark: SparkSession, source: SourceConfig) -> list[PartitionBounds]:
    """The bounds of every partition of the source's topics, as the brokers give them now."""
    wait_for_brokers(source)
    consumer = _consumer(spark, source)
    try:
        partitions = jvm_class(spark, "java.util.ArrayList")()
        topic_partition = jvm_class(spark, "org.apache.kafka.common.TopicPartition")
        for topic in _topics(consumer, source):
            for info in consumer.partitionsFor(topic):
                partitions.add(topic_partition(topic, info.partition()))
        if partitions.isEmpty():
            return []
        ends = consumer.endOffsets(partitions)
        begins = consumer.beginningOffsets(partitions)
    finally:
        consumer.close()
    bounds = [PartitionBounds(tp.topic(), tp.partition(), int(begins.get(tp)), int(ends.get(tp))) for tp in partitions]
    return sorted(bounds, key=lambda b: (b.topic, b.partition))


def ranges(bounds: list[PartitionBounds], source: SourceConfig, landed: dict[str, int]) -> dict[str, dict[str, int]]:
    """The offset ranges of one batch.

    `landed` holds the next offset of every partition landed before. A partition not in it starts at its
    beginning, or, with starting_offsets = "latest" and a topic never landed before, at its end now: that
    partition gets an empty range (start = end), so that the batch records the position and the next run
    lands what arrived after it. A partition added later to a known topic starts at its beginning.
    `max_events_per_batch` bounds the batch.
    """
    taken = {}
    known_topics = {name.rsplit(":", 1)[0] for name in landed}
    budget = source.max_events_per_batch or None
    for partition in bounds:
        name, begin, end = partition.name, partition.begin, partition.end
        if name in landed:
            start = _resume_at(name, landed[name], begin, end)
        elif source.starting_offsets == "earliest" or partition.topic in known_topics:
            start = begin
        else:
            # "latest", a new topic: start at its end now; the empty range records the position with the batch,
            # so that what arrives after this run is landed by the next one (instead of being skipped again)
            taken[name] = {"start": end, "end": end}
            continue
        if end <= start:
            continue
        if budget is not None:
            end = min(end, start + budget)
            budget -= end - start
        taken[name] = {"start": start, "end": end}
        if budget == 0:
            break
    return taken


def _resume_at(name: str, landed: int, begin: int, end: int) -> int:
    """Where a partition landed before goes on: its next offset, or its beginning if retention removed that."""
    if landed < begin:
        warn(f"{name}: events {landed}..{begin - 1} were removed by the topic's retention before they were "
             "landed; landing from the earliest event still in Kafka")
        return begin
    if landed > end:
        warn(f"{name}: landed up to offset {landed} but the partition ends at {end} (was the topic deleted "
             "and created again?): nothing is landed from it until its offsets pass that point")
    return landed


def read(spark: SparkSession, source: SourceConfig, ranges: dict[str, dict[str, int]]) -> DataFrame:
    """The raw events of exactly the planned offset ranges."""
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    ranges = {name: bounds for name, bounds in ranges.items() if bounds["end"] > bounds["start"]}
    if not ranges:  # only positions to record (see plan): no events
        return spark.createDataFrame([], RAW_SCHEMA)
    for name, bounds in ranges.items():
        topic, partition = name.rsplit(":", 1)
        starting.setdefault(topic, {})[partition] = bounds["start"]
        ending.setdefault(topic, {})[partition] = bounds["end"]
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap_servers)
        .option("assign", json.dumps({t: [int(p) for p in parts] for t, parts in starting.items()}))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("failOnDataLoss", "true")
        # brokers gone mid-read: the job fails after about source.connect_timeout_seconds
        .option("kafkaConsumer.pollTimeoutMs", _timeout_ms(source))
        .option("kafka.default.api.timeout.ms", _timeout_ms(source))
        .option("kafka.request.timeout.ms", _request_timeout_ms(source))
    )
    for key, value in source.kafka_options.items():
        reader = reader.option(key if key.startswith("kafka.") else f"kafka.{key}", value)
    return raw_events(reader.load())


def raw_events(frame: DataFrame) -> DataFrame:
    """Kafka's records (Spark's Kafka source: topic, partition, offset, key and value as bytes) as raw events."""
    return frame.select(
        F.col("topic").alias("__kafka_topic"),
        F.col("partition").alias("__kafka_partition"),
        F.col("offset").alias("__kafka_offset"),
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("payload"),
        F.concat_ws("", "topic", F.lit("/"), F.col("partition").cast("string"), F.lit("@"), F.col("offset").cast("string")).alias("__origin"),
        F.lit(None).cast("string").alias("__line_reason"),
        F.lit(None).cast("string").alias("__line"),  # the text of a line that is no event: Kafka has none
        F.col("value").alias("__value_bytes"),
    )
