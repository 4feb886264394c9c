"""The read views for other engines: the same latest-state SQL, transpiled by sqlglot.

Trino, Presto and Athena read the Hive tables directly but cannot run a Spark view; they get the
view's query in their own dialect, typed from the table schema (Trino's ROW needs field types).
"""

from __future__ import annotations

import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from lakecompact.catalog import semantics_sql
from lakecompact.errors import LakecompactError
from lakecompact.schema.model import (
    BASE_EXTRA,
    BASE_PARTITION,
    INCREMENT_PARTITIONS,
    META_COLUMNS,
    TableSchema,
)

DIALECTS = ("spark", "trino", "presto", "athena")


class UnsupportedDialect(LakecompactError):
    pass


def view_sql(schema: TableSchema, database: str, dialect: str) -> str:
    """`CREATE OR REPLACE VIEW` for one table in the given engine's dialect."""
    if dialect not in DIALECTS:
        hint = " (Hive itself has no MAX_BY; query the view through Spark or Trino)" if dialect == "hive" else ""
        raise UnsupportedDialect(f"views --dialect: expected one of {', '.join(DIALECTS)}, got {dialect!r}{hint}")
    query = semantics_sql(
        schema,
        base=f"`{database}`.`{schema.table}_base`",
        increments=f"`{database}`.`{schema.table}_increments`",
        live_only=True,
    )
    expression = sqlglot.parse_one(query, read="spark")
    if dialect != "spark":
        catalog = _sqlglot_schema(schema, database)
        expression = annotate_types(qualify(expression, schema=catalog, dialect="spark"), schema=catalog, dialect="spark")
    body = expression.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    name = sqlglot.exp.Table(this=sqlglot.exp.to_identifier(schema.table), db=sqlglot.exp.to_identifier(database))
    return f"CREATE OR REPLACE VIEW {name.sql(dialect=dialect)} AS\n{body}"


def _sqlglot_schema(schema: TableSchema, database: str) -> dict:
    columns = dict(schema.columns + list(META_COLUMNS))
    return {
        database: {
            f"{schema.table}_base": {**columns, **dict(BASE_EXTRA), BASE_PARTITION[0]: BASE_PARTITION[1]},
            f"{schema.table}_increments": {**columns, **dict(INCREMENT_PARTITIONS)},
        }
    }
