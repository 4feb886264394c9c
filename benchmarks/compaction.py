"""Compaction speed against references measured in the same run, on the same files.

    python benchmarks/compaction.py [--rows 2000000] [--change 0.01] [--buckets 16]

1. A base of N keys (one insert each) is compacted into v1.
2. An increment updating a fraction of the keys (with TOAST placeholders in a third of them) is
   compacted into v2: lakecompact rewrites only the buckets the changed keys hash to.
3. References on the same parquet files: DuckDB computing the same latest-row-per-key merge of
   base ∪ increment (full rewrite), and lakecompact forced to rewrite every bucket (what a full
   MERGE-by-rewrite costs on the same Spark).
Prints seconds and ratios. Numbers from a loaded machine are noise: run it alone.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import duckdb
from pyspark.sql import functions as F

from lakecompact import config as config_module
from lakecompact.catalog import Catalog
from lakecompact.compaction.compact import Compactor
from lakecompact.schema.connect import Field
from lakecompact.schema.model import META_COLUMNS, TableSchema
from lakecompact.spark import create_session


def events(spark, start: int, count: int, position: int, op: str, batch: int, toast_every: int = 0):
    frame = spark.range(start, start + count).select(
        F.col("id").cast("bigint").alias("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string"), F.lit(f"-{position}")).alias("name"),
        (F.col("id") % 1000).cast("int").alias("qty"),
        F.repeat(F.lit("x"), 200).alias("bio"),
    )
    toast = (F.col("id") % toast_every == 0) if toast_every else F.lit(False)
    meta = {
        "__op": F.lit(op), "__source_ts_ms": F.lit(1_700_000_000_000 + position), "__lsn": F.lit(position).cast("bigint"),
        "__binlog_file": F.lit(None).cast("string"), "__binlog_pos": F.lit(None).cast("bigint"),
        "__binlog_row": F.lit(None).cast("int"), "__position": (F.lit(position) * 10_000_000 + F.col("id")).cast("decimal(38,0)"),
        "__kafka_topic": F.lit("bench.public.items"), "__kafka_partition": F.lit(0),
        "__kafka_offset": (F.col("id") + batch * 10_000_000).cast("bigint"), "__deleted": F.lit(False),
        "__landed_at": F.current_timestamp(),
        "__toast": F.when(toast, F.array(F.lit("bio"))).otherwise(F.array().cast("array<string>")),
    }
    frame = frame.withColumn("bio", F.when(toast, F.lit(None)).otherwise(F.col("bio")))
    return frame.select("id", "name", "qty", "bio", *[meta[n].cast(t).alias(n) for n, t in META_COLUMNS])


def land_synthetic(catalog: Catalog, frame, table: str, batch: int) -> None:
    location = catalog.paths(table).increment("2026010100", batch)
    frame.write.mode("overwrite").parquet(location)
    catalog.add_partitions(f"{table}_increments", [([("__hour", "2026010100"), ("__batch", batch)], location)])


def timed(what: str, action) -> float:
    started = time.monotonic()
    action()
    seconds = time.monotonic() - started
    print(f"{what}: {seconds:.1f}s")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--change", type=float, default=0.01)
    parser.add_argument("--buckets", type=int, default=16)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lakecompact-bench-"))
    config = config_module.from_dict({
        "warehouse": str(root / "warehouse"), "database": "bench",
        "source": {"kind": "files", "paths": [str(root / "none")]},
        "defaults": {"buckets": args.buckets, "change_feed": "off", "keep_versions": 5},
        "spark": {"conf": {"spark.sql.shuffle.partitions": str(args.buckets), "spark.ui.enabled": "false"}},
    })
    spark = create_session(config)
    catalog = Catalog(spark, config)
    catalog.ensure_database()
    schema = TableSchema("items", "bench.public.items", (
        Field("id", {"type": "int64"}), Field("name", {"type": "string"}),
        Field("qty", {"type": "int32"}), Field("bio", {"type": "string"})), ("id",))
    catalog.create(schema)
    changed = max(1, int(args.rows * args.change))
    print(f"rows {args.rows}, changed {changed} ({args.change:.1%}), buckets {args.buckets}, warehouse {root}")

    land_synthetic(catalog, events(spark, 0, args.rows, 1, "r", 1), "items", 1)
    timed("v1: initial compaction of the base", lambda: Compactor(spark, config, "items").compact())
    base_files = str(root / "warehouse/bench/items/base/v=1/**/*.parquet")

    step = args.rows // changed
    updates = events(spark, 0, args.rows, 2, "u", 2, toast_every=3).where(F.col("id") % step == 0)
    land_synthetic(catalog, updates, "items", 2)
    inc_files = str(root / "warehouse/bench/items/increments/hour=2026010100/batch=2/*.parquet")

    duck = duckdb.connect()
    duck_out = root / "duckdb.parquet"
    merge = f"""
        COPY (
          WITH events AS (
            SELECT id, name, qty, bio, __position, __op, TRUE AS base FROM read_parquet('{base_files}')
            UNION ALL
            SELECT id, name, qty, bio, __position, __op, FALSE FROM read_parquet('{inc_files}')
          )
          SELECT id, arg_max(name, __position) AS name, arg_max(qty, __position) AS qty,
                 arg_max(bio, CASE WHEN bio IS NOT NULL THEN __position END) AS bio, max(__position) AS __position
          FROM events GROUP BY id
        ) TO '{duck_out}' (FORMAT PARQUET)"""
    duck_seconds = timed("reference: DuckDB merge of base + increment (full rewrite)", lambda: duck.execute(merge))

    ours = timed("v2: lakecompact incremental compaction", lambda: Compactor(spark, config, "items").compact())
    live = spark.sql("SELECT count(*) FROM bench.items").first()[0]
    assert live == args.rows, f"view has {live} rows, expected {args.rows}"
    mismatches = spark.sql(
        f"SELECT count(*) FROM bench.items v JOIN parquet.`{duck_out}` d USING (id) "
        "WHERE NOT (v.name <=> d.name AND v.qty <=> d.qty AND v.bio <=> d.bio)"
    ).first()[0]
    assert mismatches == 0, f"{mismatches} rows differ from DuckDB's merge"

    # the same change forced through every bucket: the cost of a full rewrite on the same Spark
    land_synthetic(catalog, events(spark, 0, args.rows, 3, "u", 3).where(F.col("id") % step == 0)
                   .withColumn("__position", (F.lit(3) * 10_000_000 + F.col("id")).cast("decimal(38,0)")), "items", 3)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.buckets))
    full = Compactor(spark, config, "items")
    original = full._write_version

    def rewrite_all(current, version, increments, pending):
        truncate_marker = increments.limit(1).withColumn("__op", F.lit("t")).withColumn("__position", F.lit(0).cast("decimal(38,0)"))
        return original(current, version, increments.unionByName(truncate_marker), pending)

    full._write_version = rewrite_all  # a truncate at position 0 touches every bucket and deletes nothing
    full_seconds = timed("reference: lakecompact rewriting every bucket", full.compact)

    print(f"\nincremental vs DuckDB full merge: {ours / duck_seconds:.2f}x the time")
    print(f"incremental vs full-bucket rewrite on Spark: {ours / full_seconds:.2f}x the time")
    spark.stop()
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
