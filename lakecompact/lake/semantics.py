"""The semantic core as SQL: the inputs of latest_rows.sql.j2 / appended_rows.sql.j2, shared by the view
and compaction, so that both compute the same latest state per key."""

from __future__ import annotations

from lakecompact import sql
from lakecompact.lake.model import (
    BASE_EXTRA,
    META_COLUMNS,
    ORDER_TYPE,
    ORIGINS_TYPE,
    VISIBLE_META,
    TableSchema,
)
from lakecompact.lake.partitions import DELTA_BUCKETS_FROM


def columns_context(schema: TableSchema) -> dict:
    """The columns a template of the view's rules reads: the key, the data columns, those a TOAST placeholder can
    stand for, and the landed meta columns."""
    return {
        "key": list(schema.key),
        "columns": schema.column_names,
        "toastable": [f.name for f in schema.fields if f.toastable and f.name not in schema.key],
        "meta": [name for name, _ in META_COLUMNS],
    }


def semantics_context(schema: TableSchema, *, base: str, increments: str, live_only: bool, **extra) -> dict:
    """The inputs of latest_rows.sql.j2 / appended_rows.sql.j2 for one table."""
    types = dict(schema.columns + list(META_COLUMNS) + list(BASE_EXTRA))
    return {
        "query": "appended_rows.sql.j2" if schema.keyless else "latest_rows.sql.j2",
        "base": base,
        "increments": increments,
        **columns_context(schema),
        "visible_meta": VISIBLE_META,
        "types": types,
        "maps": schema.map_columns,  # the meta columns a latest value holds have none
        "origins_type": ORIGINS_TYPE,
        "order_type": ORDER_TYPE,
        "live_only": live_only,
        "new_rows_only": False,
        "mark_carried": False,
        "read_increments_once": False,
        "dialect": "spark",
        "no_truncate": False,  # compaction: the inputs hold no truncate (clauses/inputs.sql.j2: truncation)
        "touched_keys": None,  # compaction: the keys the increments name, found once (latest_rows.sql.j2)
        "bucket_of": None,  # compaction: a value per bucket, by which latest_rows.sql.j2 groups (version_rows.sql.j2)
        "with_before": False,  # compaction: each resolved row holds its key's live base row (latest_rows.sql.j2)
        # the view (live_only) reads the `<t>_base` table, deltas included; compaction is given the base it reads
        "deltas_from": DELTA_BUCKETS_FROM if live_only and not schema.keyless else None,
        **extra,
    }


def semantics_sql(schema: TableSchema, **kwargs) -> str:
    """The latest state of every key (or, keyless, every appended row) as one parse-checked query."""
    context = semantics_context(schema, **kwargs)
    return sql.render_checked(context["query"], parse_as=context["dialect"], **context)
