"""The change feed (Hudi RFC-51): what compaction N changed, with before and after images.

`net`: one row per changed key per version, its live row in base N-1 and in base N.
`events`: every applied event in source order, images after TOAST resolution.
Both are computed from what compaction already holds: the touched buckets before and after, and the
pending increments.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecompact import sql
from lakecompact.catalog import semantics_context, semantics_sql
from lakecompact.schema.model import TableSchema

CHANGE_PARTITION = ("__version", "BIGINT")


def change_columns(schema: TableSchema) -> list[tuple[str, str]]:
    """Columns of `<t>_changes`; `before`/`after` are named as in Debezium's envelope."""
    image = "STRUCT<" + ",".join(f"`{name}`:{kind}" for name, kind in schema.columns) + ">"
    columns = [("op", "STRING"), ("before", image), ("after", image)]
    if schema.key:
        key = "STRUCT<" + ",".join(f"`{k}`:{dict(schema.columns)[k]}" for k in schema.key) + ">"
        columns.append(("key", key))
    return columns + [
        ("__source_ts_ms", "BIGINT"),
        ("__position", "DECIMAL(38,0)"),
        ("__seq", "BIGINT"),
        ("__committed_at", "TIMESTAMP"),
    ]


def net_changes(spark: SparkSession, schema: TableSchema, before: DataFrame, after: DataFrame) -> DataFrame:
    """Per key: live row in `before` (base N-1) against the row in `after` (base N, tombstones included)."""
    context = {"before": "{before}", "after": "{after}", "key": list(schema.key), "columns": schema.column_names}
    return _query(spark, "change_net.sql.j2", context, before=before, after=after)


def event_changes(spark: SparkSession, schema: TableSchema, base: DataFrame, increments: DataFrame) -> DataFrame:
    """Every applied event in source order; `base` is base N-1 (the buckets the increments touch)."""
    relations = {"base": "{base}", "increments": "{increments}"}
    late = _query(spark, "late_events.sql.j2", {**relations, "key": list(schema.key)}, base=base, increments=increments)
    repaired = spark.sql(semantics_sql(schema, base="{base}", increments="{late}", live_only=False), base=base, late=late)
    context = semantics_context(schema, **relations, live_only=False, repaired="{repaired}")
    return _query(spark, "change_events.sql.j2", context, base=base, increments=increments, repaired=repaired)


def _query(spark: SparkSession, template: str, context: dict, **relations: DataFrame) -> DataFrame:
    """One template, parse-checked, over DataFrames bound to its `{name}` relations."""
    query = sql.render(template, **context)
    sql.parse_check(query, template)
    return spark.sql(query, **relations)


def appended_changes(schema: TableSchema, new_rows: DataFrame) -> DataFrame:
    """Keyless tables: each appended event is an insert (or, for a delete event, a delete)."""
    image = F.struct(*[F.col(c) for c in schema.column_names])
    rows = new_rows.where(F.col("__op") != "t")
    return rows.select(
        F.when(F.col("__op") == "d", "d").otherwise("i").alias("op"),
        F.when(F.col("__op") == "d", image).alias("before"),
        F.when(F.col("__op") != "d", image).alias("after"),
        "__source_ts_ms",
        "__position",
        F.row_number().over(_seq_window()).cast("bigint").alias("__seq"),
    )


def _seq_window():
    from pyspark.sql import Window

    return Window.orderBy("__position", "__kafka_partition", "__kafka_offset")


def feed(
    spark: SparkSession,
    schema: TableSchema,
    mode: str,
    *,
    before: DataFrame,
    after: DataFrame,
    increments: DataFrame,
    committed_at: str,
) -> DataFrame:
    if schema.keyless:
        frame = appended_changes(schema, after)
    elif mode == "events":
        frame = event_changes(spark, schema, before, increments)
    else:
        frame = net_changes(spark, schema, before, after)
    columns = [name for name, _ in change_columns(schema)]
    frame = frame.withColumn("__seq", F.col("__seq").cast("bigint")).withColumn(
        "__committed_at", F.to_timestamp(F.lit(committed_at))
    )
    return frame.select(*columns)
