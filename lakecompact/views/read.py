"""`lakecompact sql` and `lakecompact changes`."""

from __future__ import annotations

import csv
import io
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakecompact import sql
from lakecompact.config import Config
from lakecompact.errors import LakecompactError, QueryError
from lakecompact.lake.catalog import Catalog
from lakecompact.naming import changes_table
from lakecompact.report import say
from lakecompact.views.as_of import as_of_query, moment_of

# RFC 4180, as `sql --format csv` promises: a quote doubled, an empty string quoted (""), a null empty, spaces kept
CSV_OPTIONS = {"escape": '"', "ignoreLeadingWhiteSpace": "false", "ignoreTrailingWhiteSpace": "false"}

def run_sql(spark: SparkSession, config: Config, query: str, out=sys.stdout, fmt: str = "json", as_of: str | None = None) -> int:
    """Print the rows: `json`, one JSON object per row as `DataFrame.toJSON()` writes it but for timestamps (to the
    microsecond) and nulls (printed, not left out: a reader tells a null from a column not selected); `table`,
    aligned columns (`null` for a null); `csv`, a header line, then the rows (an empty field is a null, `""` an
    empty string). `as_of`: every table the query reads, read as of that moment from its row history (as_of.py)."""
    from pyspark.errors import AnalysisException

    if as_of is not None:
        catalog = Catalog(spark, config)
        history = {t for t in catalog.tables() if config.table(t).row_history}
        query = as_of_query(query, moment_of(as_of), config.database, history)
    if spark.catalog.databaseExists(config.database):
        sql.run(spark, "use_database.sql.j2", database=config.database)
    try:
        frame = spark.sql(query)
    except AnalysisException as exc:  # ParseException is one too
        raise QueryError(str(exc)) from None
    if fmt == "json":
        return print_json_lines(frame, out, "row(s)", nulls=True)
    if fmt not in ("table", "csv"):
        raise LakecompactError(f"sql --format: expected json, table or csv, got {fmt!r}")
    names = frame.columns
    # by position, as text: two columns of one name stay apart
    texts = [F.col(f"_{n}").cast("string") for n in range(len(names))]
    frame = frame.toDF(*[f"_{n}" for n in range(len(names))])
    if fmt == "csv":
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(names)
        out.write(header.getvalue())
        lines = frame.select(F.to_csv(F.struct(*texts), CSV_OPTIONS))
    else:
        shown = [F.coalesce(text, F.lit("null")) for text in texts]
        # the widths first (one aggregate), so that the rows stream as they come, never all on the driver
        longest = frame.agg(*[F.max(F.length(value)) for value in shown]).first()
        widths = [max(len(name), longest[n] or 0) for n, name in enumerate(names)]
        out.write(_aligned(names, widths) + "\n" + _aligned(["-" * width for width in widths], widths) + "\n")
        # rpad cuts a longer value: one the query gives this time and did not give the aggregate is shown whole
        padded = [F.when(F.length(value) < width, F.rpad(value, width, " ")).otherwise(value)
                  for value, width in zip(shown, widths, strict=True)]
        lines = frame.select(F.concat_ws(" | ", *padded))
    count = 0
    for count, row in enumerate(lines.toLocalIterator(), 1):
        out.write((row[0] if fmt == "csv" else row[0].rstrip()) + "\n")
    out.flush()
    print(f"{count} row(s)", file=sys.stderr)
    return count


def _aligned(values: list[str], widths: list[int]) -> str:
    return " | ".join(value.ljust(width) for value, width in zip(values, widths, strict=True)).rstrip()


def print_json_lines(frame, out, noun: str, *, nulls: bool = False) -> int:
    """One JSON object per row, streamed from the executors a partition at a time; `nulls`: a null value is printed
    (as null), not left out."""
    count = 0
    options = {**sql.EXACT_JSON_OPTIONS, **({"ignoreNullFields": "false"} if nulls else {})}
    for row in frame.select(F.to_json(F.struct("*"), options)).toLocalIterator():
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
    return print_json_lines(frame, out, "change(s)", nulls=True)  # as Debezium's envelope: before and after whole
