"""`lakecompact sql` and `lakecompact changes`."""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakecompact import sql
from lakecompact.catalog import Catalog
from lakecompact.config import Config
from lakecompact.errors import LakecompactError, QueryError
from lakecompact.naming import changes_table
from lakecompact.report import say


def run_sql(spark: SparkSession, config: Config, query: str, out=sys.stdout) -> int:
    """Print the rows as JSON lines, as `DataFrame.toJSON()` writes them but for timestamps, to the microsecond."""
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
    for row in frame.select(F.to_json(F.struct("*"), sql.EXACT_JSON_OPTIONS)).toLocalIterator():
        out.write(row[0] + "\n")
        count += 1
    out.flush()
    print(f"{count} {noun}", file=sys.stderr)
    return count


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
