"""`lakecompact quarantine`: what was quarantined, why, and what it looked like.

Counts and samples are computed by Spark in one pass; only one row per reason, with at most `show` events,
reaches the driver, however large the quarantine.
"""

from __future__ import annotations

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from lakecompact.config import Config
from lakecompact.lake.catalog import UNPLACED, Catalog
from lakecompact.report import say

SAMPLE_CHARS = 300  # of a sample's key and payload, in the text output


def quarantine(spark: SparkSession, config: Config, table: str | None = None, show: int = 3) -> list[dict]:
    """Per table (`UNPLACED` for events of no table) and reason: events, batches, and the first `show` events."""
    catalog = Catalog(spark, config)
    if table is None:
        names = [*sorted(catalog.tables() + catalog.quarantined_only()), UNPLACED]
    elif table == UNPLACED or table in catalog.quarantined_only():
        names = [table]
    else:
        catalog.require(table)
        names = [table]
    found = []
    for name in names:
        root = catalog.quarantine(None if name == UNPLACED else name)
        if not any(n.startswith("batch=") for n in catalog.storage.list_names(root)):
            continue
        events = spark.read.parquet(root)  # `batch` comes from the folder names
        order = Window.partitionBy("__reason").orderBy("batch", "__kafka_topic", "__kafka_partition", "__kafka_offset")
        sample = F.struct(
            F.col("__n"), F.col("batch"), F.col("__kafka_topic").alias("topic"),
            F.col("__kafka_partition").alias("partition"), F.col("__kafka_offset").alias("offset"),
            F.col("__origin").alias("origin"), "key", "payload",
        )
        reasons = (
            events.withColumn("__n", F.row_number().over(order))
            .groupBy("__reason")  # the window's partitioning: one pass, one shuffle
            .agg(
                F.count(F.lit(1)).alias("events"),
                F.array_sort(F.collect_set("batch")).alias("batches"),
                F.array_sort(F.collect_list(F.when(F.col("__n") <= show, sample))).alias("samples"),
            )
            .collect()  # one row per reason, with at most `show` events
        )
        for reason in sorted(reasons, key=lambda r: (-r["events"], r["__reason"])):
            samples = [{k: v for k, v in s.asDict().items() if k != "__n"} for s in reason["samples"]]
            found.append({"table": name, "reason": reason["__reason"], "events": reason["events"],
                          "batches": list(reason["batches"]), "samples": samples})
    return found


def print_quarantine(entries: list[dict], table: str | None) -> None:
    if not entries:
        say(f"quarantine{' ' + table if table else ''}: empty")
        return
    for name in dict.fromkeys(e["table"] for e in entries):
        mine = [e for e in entries if e["table"] == name]
        total = sum(e["events"] for e in mine)
        batches = sorted({b for e in mine for b in e["batches"]})
        say(f"quarantine {name}: {total} event(s) in {len(batches)} batch(es) ({_batch_list(batches)}), "
            f"{len(mine)} reason(s)")
        for entry in mine:
            say(f"  {entry['events']} x {entry['reason']}")
            for sample in entry["samples"]:
                say(f"      batch {sample['batch']} {where_from(sample)}: key {_cut(sample['key'])} payload {_cut(sample['payload'])}")


def where_from(sample: dict) -> str:
    """Where a quarantined event came from: `file:line` for a line of the files source (every damaged line, its topic
    readable or not), else the Kafka coordinates `topic[partition]@offset` (a Kafka source's origin spells the same
    coordinates `topic/partition@offset`)."""
    topic, partition, offset, origin = sample["topic"], sample["partition"], sample["offset"], sample["origin"]
    if origin is not None and (topic is None or origin != f"{topic}/{partition}@{offset}"):
        return origin
    return f"{topic}[{partition}]@{offset}" if topic is not None else "-"


def _cut(text: str | None) -> str:
    if text is None:
        return "null"
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + f"... ({len(text)} chars)"


def _batch_list(batches: list[int]) -> str:
    return "batch " + ", ".join(str(b) for b in batches[:10]) + (", ..." if len(batches) > 10 else "")
