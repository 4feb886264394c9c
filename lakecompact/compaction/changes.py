"""The change feed (Hudi RFC-51): what compaction N changed, with before and after images.

`net`: one row per changed key per version, its live row in base N-1 and in base N.
`events`: every applied event in source order, images after TOAST resolution.
Both are computed from what compaction already holds: the touched buckets before and after, and the
pending increments. A keyed table's net feed of a change without a truncate comes from the version's own
resolution, which holds each touched key's row before beside its row after (`resolved_changes`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DoubleType, FloatType, MapType, StructType, VariantType

from lakecompact.config import ChangeFeedMode
from lakecompact.errors import LakecompactError
from lakecompact.lake.model import TableSchema, change_columns
from lakecompact.lake.semantics import semantics_context, semantics_sql
from lakecompact.sql import query


def net_changes(
    spark: SparkSession, schema: TableSchema, before: DataFrame, after: DataFrame, changed: DataFrame | None = None
) -> DataFrame:
    """Per key: live row in `before` (base N-1) against the row in `after` (base N, tombstones included).

    `changed`: the keys the increments name (touched_keys.sql.j2), when only those can have changed (no truncate
    among them).
    """
    context = {
        "before": "{before}", "after": "{after}", "key": list(schema.key), "columns": schema.column_names,
        "comparable": _images_compare_as_values(schema, before),
    }
    if changed is not None:
        context["changed"] = "{changed}"
    relations = {"before": before, "after": after, **({"changed": changed} if changed is not None else {})}
    return query(spark, "change_net.sql.j2", context, **relations)


def resolved_changes(spark: SparkSession, schema: TableSchema, resolved: DataFrame) -> DataFrame:
    """The net changes from the version's rows of the keys the change touches, each with its key's live row in base
    N-1 (`__before`, latest_rows.sql.j2: with_before): the pairs `net_changes` would find, without pairing again."""
    context = {"resolved": "{resolved}", "key": list(schema.key), "columns": schema.column_names,
               "comparable": _images_compare_as_values(schema, resolved)}
    return query(spark, "change_net.sql.j2", context, resolved=resolved)


def event_changes(spark: SparkSession, schema: TableSchema, base: DataFrame, increments: DataFrame) -> DataFrame:
    """Every applied event in source order; `base` is base N-1 (the buckets the increments touch)."""
    relations = {"base": "{base}", "increments": "{increments}"}
    late = query(spark, "late_events.sql.j2", {**relations, "key": list(schema.key)}, base=base, increments=increments)
    repaired = spark.sql(semantics_sql(schema, base="{base}", increments="{late}", live_only=False), base=base, late=late)
    context = {**semantics_context(schema, **relations, live_only=False, repaired="{repaired}"),
               "comparable": _images_compare_as_values(schema, base)}
    return query(spark, "change_events.sql.j2", context, base=base, increments=increments, repaired=repaired)


def appended_changes(schema: TableSchema, new_rows: DataFrame) -> DataFrame:
    """Keyless tables: each appended event is an insert (or, for a delete event, a delete)."""
    image = F.struct(*[F.col(c) for c in schema.column_names])
    rows = new_rows.where(F.col("__op") != "t")
    deleted = F.col("__op") == "d"
    return rows.select(
        F.when(deleted, "d").otherwise("i").alias("op"),
        F.when(deleted, image).alias("before"),
        F.when(~deleted, image).alias("after"),
        "__source_ts_ms",
        "__position",
        F.struct("__position", "__kafka_partition", "__kafka_offset").alias("__seq_order"),
    )


def feed(
    spark: SparkSession,
    schema: TableSchema,
    mode: ChangeFeedMode,
    *,
    before: DataFrame,
    after: DataFrame | None,
    increments: DataFrame,
    touched: DataFrame | None,
    truncated: bool,
    committed_at: str,
    files: int = 1,
    resolved: DataFrame | None = None,
) -> DataFrame:
    """The rows of `<t>_changes` for one version (`mode` "off" writes no feed: the caller does not ask), in `files`
    range partitions, each holding a stretch of the version's order (`__seq` grows across them). `touched`: the
    keys the increments name (keyed tables). `resolved`: the version's rows of those keys with their `__before`
    (keyed, no truncate), from which the net feed is taken."""
    if schema.keyless:
        frame = appended_changes(schema, after)
    elif mode == "events":
        frame = event_changes(spark, schema, before, increments)
    elif mode == "net" and resolved is not None:
        frame = resolved_changes(spark, schema, resolved)
    elif mode == "net":
        frame = net_changes(spark, schema, before, after, changed=None if truncated else touched)
    else:
        raise LakecompactError(f"change_feed of table {schema.table}: expected net or events, got {mode!r}")
    # `__seq` grows with `__seq_order` over the whole version: a range-partitioned sort numbers the rows in parallel
    # (ids grow within a partition and from one partition to the next), where a ROW_NUMBER over the version sorts
    # every row in one task (a first compaction's feed holds the whole table). The numbers are not consecutive.
    order = _leaf_fields(frame.schema["__seq_order"].dataType, F.col("__seq_order"))
    # the resolved rows are held in memory (the version's checkpoint): for one file, one task reads them in, sorts
    # and writes them, where a range partitioning to one partition would shuffle them first
    one_task = resolved is not None and files == 1
    ordered = (frame.coalesce(1) if one_task else frame.repartitionByRange(files, *order)).sortWithinPartitions(*order)
    computed = {"__seq": F.monotonically_increasing_id(), "__committed_at": F.to_timestamp(F.lit(committed_at))}
    return ordered.select(*[computed.get(name, F.col(name)).alias(name) for name, _ in change_columns(schema)])


def _images_compare_as_values(schema: TableSchema, rows: DataFrame) -> bool:
    """Whether two images of the table's rows (of `rows`' column types) are told apart by comparing them as structs:
    that costs less than two JSON texts per compared row, and tells a timestamp's microseconds apart."""
    return all(_compares_as_value(rows.schema[name].dataType) for name in schema.column_names)


def _compares_as_value(data_type: DataType) -> bool:
    """Whether `=` tells values of this type apart wherever their JSON texts differ (and finer: a timestamp's
    microseconds): not for a map (no equality), a float or double (0.0 = -0.0) or a variant."""
    if isinstance(data_type, StructType):
        return all(_compares_as_value(field.dataType) for field in data_type.fields)
    if isinstance(data_type, ArrayType):
        return _compares_as_value(data_type.elementType)
    return not isinstance(data_type, (MapType, FloatType, DoubleType, VariantType))


def _leaf_fields(data_type: DataType, column: Column) -> list[Column]:
    """A struct's fields in its order, nested structs flattened: sorted by these, the rows are in the struct's
    order, and Spark's sort compares most of them by a prefix, where a struct is compared field by field."""
    if not isinstance(data_type, StructType):
        return [column]
    return [leaf for field in data_type.fields for leaf in _leaf_fields(field.dataType, column.getField(field.name))]
