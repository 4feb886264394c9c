"""`lakecompact sql` and `lakecompact status`."""

from __future__ import annotations

import sys
from datetime import UTC

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakecompact import sql
from lakecompact.catalog import UNPLACED, VERSION_PROPERTY, Catalog
from lakecompact.config import Config
from lakecompact.errors import LakecompactError, QueryError
from lakecompact.naming import base_table, changes_table, increments_table
from lakecompact.report import say


def run_sql(spark: SparkSession, config: Config, query: str, out=sys.stdout) -> int:
    """Print the rows as JSON lines, as `DataFrame.toJSON()` writes them."""
    from pyspark.errors import AnalysisException

    if spark.catalog.databaseExists(config.database):
        sql.run(spark, "use_database.sql.j2", database=config.database)
    try:
        frame = spark.sql(query)
    except AnalysisException as exc:  # ParseException is one too
        raise QueryError(str(exc)) from None
    return print_json_lines(frame, out, "row(s)")


def print_json_lines(frame, out, noun: str) -> int:
    """One JSON object per row, streamed from the executors a partition at a time."""
    count = 0
    for row in frame.select(F.to_json(F.struct("*"))).toLocalIterator():
        out.write(row[0] + "\n")
        count += 1
    out.flush()
    print(f"{count} {noun}", file=sys.stderr)
    return count


def status(spark: SparkSession, config: Config) -> list[dict]:
    """Per table: base version, rows, pending batches, quarantined events, last source timestamp."""
    catalog = Catalog(spark, config)
    rows = []
    for table in catalog.tables():
        schema = catalog.require(table)
        version = catalog.properties(base_table(table)).get(VERSION_PROPERTY, "0")
        base = catalog.table(base_table(table)).agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum(F.when(~F.col("__deleted") & (F.col("__op") != "t"), 1).otherwise(0)).alias("live"),
            F.max("__source_ts_ms").alias("ts"),
        ).first()
        pending = catalog.partitions(increments_table(table))
        increments = catalog.table(increments_table(table)).agg(
            F.count(F.lit(1)).alias("events"), F.max("__source_ts_ms").alias("ts")
        ).first()
        quarantine_root = catalog.paths(table).quarantine
        quarantined = spark.read.parquet(quarantine_root).count() if catalog.storage.list_names(quarantine_root) else 0
        last_ts = max([t for t in (base.ts, increments.ts) if t is not None], default=None)
        rows.append(
            {
                "table": f"{config.database}.{table}",
                "key": list(schema.key) or None,
                "base_version": int(version),
                "base_rows": base.rows,
                "live_rows": base.live or 0,
                "pending_batches": len(pending),
                "pending_events": increments.events,
                "quarantined": quarantined,
                "last_source_ts": _iso(last_ts),
            }
        )
    unknown_root = catalog.unplaced_quarantine
    if catalog.storage.list_names(unknown_root):
        rows.append({"table": UNPLACED, "quarantined": spark.read.parquet(unknown_root).count()})
    return rows


def _iso(ts_ms: int | None) -> str | None:
    if ts_ms is None:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(ts_ms / 1000, UTC).isoformat(timespec="milliseconds")


def print_status(rows: list[dict]) -> None:
    if not rows:
        say("status: no tables yet")
    for row in rows:
        if "base_version" not in row:
            say(f"{row['table']}: {row['quarantined']} quarantined events")
            continue
        say(
            f"{row['table']}: base v{row['base_version']}, {row['base_rows']} base rows ({row['live_rows']} live), "
            f"{row['pending_batches']} pending batch(es) with {row['pending_events']} events, "
            f"{row['quarantined']} quarantined, last source change {row['last_source_ts'] or '-'}"
        )


def read_changes(spark: SparkSession, config: Config, table: str, from_version: int, to_version: int | None):
    """The change feed of versions [from, to], in commit then source order."""
    catalog = Catalog(spark, config)
    catalog.require(table)
    frame = catalog.table(changes_table(table)).where(F.col("__version") >= from_version)
    if to_version is not None:
        frame = frame.where(F.col("__version") <= to_version)
    return frame.orderBy("__version", "__seq")


def print_changes(spark, config, table, from_version, to_version, fmt: str, output: str | None, out=sys.stdout) -> int:
    frame = read_changes(spark, config, table, from_version, to_version)
    if fmt == "parquet":
        if not output:
            raise LakecompactError("changes --format parquet: expected --output DIR for the parquet files")
        frame.write.mode("overwrite").parquet(output)
        count = spark.read.parquet(output).count()
        say(f"changes {table}: {count} change(s) of versions {from_version}..{to_version or 'latest'} written to {output}")
        return count
    return print_json_lines(frame, out, "change(s)")
