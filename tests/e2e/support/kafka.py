"""Kafka, read through Spark: end offsets (a Kafka client in Spark's JVM), whole topics (Spark's Kafka
source), and the wait, polled, for Debezium to deliver what the workload made."""

from __future__ import annotations

import time
from collections import Counter

from tests.e2e.support.sources import SourceDb

DELIVERY_TIMEOUT = 240.0  # seconds for Debezium to deliver a phase's events (polled, not slept)


def end_offsets(spark, bootstrap: str, topics: list[str]) -> dict[str, int]:
    """{topic: end offset summed over partitions}; a topic that does not exist yet reads 0."""
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    props.setProperty("bootstrap.servers", bootstrap)
    props.setProperty("allow.auto.create.topics", "false")
    props.setProperty("default.api.timeout.ms", "20000")
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    props.setProperty("key.deserializer", deserializer)
    props.setProperty("value.deserializer", deserializer)
    consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
    try:
        existing = {str(t) for t in consumer.listTopics().keySet()}
        partitions = jvm.java.util.ArrayList()
        for topic in topics:
            if topic in existing:
                for info in consumer.partitionsFor(topic):
                    partitions.add(jvm.org.apache.kafka.common.TopicPartition(topic, info.partition()))
        ends = consumer.endOffsets(partitions) if not partitions.isEmpty() else {}
        result = {t: 0 for t in topics}
        for tp in partitions:
            result[str(tp.topic())] += int(ends.get(tp))
        return result
    finally:
        consumer.close()


def read_messages(spark, bootstrap: str, topics: list[str]) -> list[dict]:
    """Every message of the topics, as kcat -J objects (key and payload as the message texts)."""
    from pyspark.sql import functions as F

    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("topic", "partition", "offset", F.col("key").cast("string").alias("key"),
                F.col("value").cast("string").alias("payload"))
    )
    rows = frame.collect()
    messages = [{"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": r.key, "payload": r.payload}
                for r in rows]
    return sorted(messages, key=lambda m: (m["topic"], m["partition"], m["offset"]))


def wait_delivered(spark, stack, dbs: list[SourceDb], expected: dict[str, int], markers: dict[str, str], *,
                   exact: bool, timeout: float = DELIVERY_TIMEOUT) -> list[dict]:
    """Poll until every topic holds at least its expected number of messages, the end offsets stayed the same
    over two polls a second apart, and each marker token (written last) is in Kafka. Returns all messages.

    `exact`: no duplicates are possible (no restart), so more messages than expected is a failure.
    """
    topics = sorted(expected)
    deadline = time.monotonic() + timeout
    previous, stable_since = None, None
    while True:
        for db in dbs:
            status = stack.connector_status(db.connector)
            failed = [t for t in [status["connector"], *status.get("tasks", [])] if t["state"] == "FAILED"]
            if failed:
                raise AssertionError(f"connector {db.connector} failed: {failed[0].get('trace', '')[:3000]}")
        ends = end_offsets(spark, stack.KAFKA_BOOTSTRAP, topics)
        now = time.monotonic()
        if ends != previous:
            previous, stable_since = ends, now
        enough = all(ends[t] >= expected[t] for t in topics)
        if enough and now - stable_since >= 1.0:
            messages = read_messages(spark, stack.KAFKA_BOOTSTRAP, topics)
            found = {token for token in markers.values() if any(m["payload"] and token in m["payload"] for m in messages)}
            if found == set(markers.values()) and all(
                sum(1 for m in messages if m["topic"] == t) == ends[t] for t in topics
            ):
                counts = Counter(m["topic"] for m in messages)
                if exact:
                    assert dict(counts) == {t: expected[t] for t in topics if expected[t]}, (
                        f"Debezium wrote other numbers of messages than the workload makes: {dict(counts)} != {expected}"
                    )
                return messages
        if now >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for Debezium: end offsets {ends}, "
                                 f"expected at least {expected}, markers {markers}")
        time.sleep(0.5)
