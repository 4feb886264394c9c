"""`lakecompact quarantine`: what was quarantined, why, and what it looked like.

Counts and samples are computed by Spark; only one row per reason and `show` samples per reason reach the
driver, however large the quarantine.
"""

from __future__ import annotations

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from lakecompact.catalog import UNPLACED, Catalog
from lakecompact.config import Config
from lakecompact.report import say

SAMPLE_CHARS = 300  # of a sample's key and payload, in the text output


def quarantine(spark: SparkSession, config: Config, table: str | None = None, show: int = 3) -> list[dict]:
    """Per table (`UNPLACED` for events of no table) and reason: events, batches, and the first `show` events."""
    catalog = Catalog(spark, config)
    if table is None:
        names = [*catalog.tables(), UNPLACED]
    elif table == UNPLACED:
        names = [UNPLACED]
    else:
        catalog.require(table)
        names = [table]
    found = []
    for name in names:
        root = catalog.unplaced_quarantine if name == UNPLACED else catalog.paths(name).quarantine
        if not any(n.startswith("batch=") for n in catalog.storage.list_names(root)):
            continue
        events = spark.read.parquet(root)  # `batch` comes from the folder names
        order = Window.partitionBy("__reason").orderBy("batch", "__kafka_topic", "__kafka_partition", "__kafka_offset")
        rows = (
            events.withColumn("__events", F.count(F.lit(1)).over(Window.partitionBy("__reason")))
            .withColumn("__batches", F.collect_set("batch").over(Window.partitionBy("__reason")))
            .withColumn("__n", F.row_number().over(order))
            .where(F.col("__n") <= max(show, 1))
            .collect()  # at most max(show, 1) rows per reason
        )
        by_reason: dict[str, dict] = {}
        for row in sorted(rows, key=lambda r: (-r["__events"], r["__reason"] or "", r["__n"])):
            entry = by_reason.setdefault(row["__reason"], {
                "table": name, "reason": row["__reason"], "events": row["__events"],
                "batches": sorted(row["__batches"]), "samples": [],
            })
            if row["__n"] <= show:
                entry["samples"].append({
                    "batch": row["batch"], "topic": row["__kafka_topic"], "partition": row["__kafka_partition"],
                    "offset": row["__kafka_offset"], "origin": row["__origin"], "key": row["key"],
                    "payload": row["payload"],
                })
        found.extend(by_reason.values())
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
                where = (f"{sample['topic']}[{sample['partition']}]@{sample['offset']}" if sample["topic"] is not None
                         else sample["origin"] or "-")
                say(f"      batch {sample['batch']} {where}: key {_cut(sample['key'])} payload {_cut(sample['payload'])}")


def _cut(text: str | None) -> str:
    if text is None:
        return "null"
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + f"... ({len(text)} chars)"


def _batch_list(batches: list[int]) -> str:
    return "batch " + ", ".join(str(b) for b in batches[:10]) + (", ..." if len(batches) > 10 else "")
