"""The read views for other engines: the same latest-state SQL, transpiled by sqlglot.

Trino, Presto and Athena read the Hive tables directly but cannot run a Spark view; they get the
view's query in their own dialect, typed from the table schema (Trino's ROW needs field types).
Hive has no MAX_BY, no lambdas and no to_json: its view is rendered from the same template in the form Hive
runs (MAX over named_struct(order, row), which compares the order first; a keyless table's events are told
apart by their columns, matched null-safe, rather than by their JSON image).
"""

from __future__ import annotations

import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from lakecompact.errors import LakecompactError
from lakecompact.identifiers import qualified
from lakecompact.naming import base_table, increments_table
from lakecompact.schema.model import (
    BASE_EXTRA,
    BASE_PARTITION,
    INCREMENT_PARTITIONS,
    META_COLUMNS,
    TableSchema,
)
from lakecompact.semantics import semantics_sql
from lakecompact.sql import render
from lakecompact.views import DIALECTS, Dialect


class UnsupportedDialect(LakecompactError):
    pass


def view_sql(schema: TableSchema, database: str, dialect: Dialect, view_database: str | None = None) -> str:
    """`CREATE OR REPLACE VIEW` for one table in the given engine's dialect, over the tables of `database`; the view
    goes to `view_database` (default: `database`, where the Spark view of the same name is)."""
    if dialect not in DIALECTS:
        raise UnsupportedDialect(f"views --dialect: expected one of {', '.join(DIALECTS)}, got {dialect!r}")
    if dialect == "hive":
        maps = schema.map_columns
        if maps:
            raise UnsupportedDialect(
                f"views --dialect hive: {schema.table} has MAP columns ({', '.join(maps)}), which Hive cannot "
                f"order inside MAX(named_struct(...)); expected a table without MAP columns, or read it through Spark or Trino"
            )
    query = semantics_sql(
        schema,
        base=qualified(database, base_table(schema.table)),
        increments=qualified(database, increments_table(schema.table)),
        live_only=True,
        dialect="hive" if dialect == "hive" else "spark",
        read_increments_once=dialect == "spark",  # as the view lakecompact creates (clauses/inputs.sql.j2)
    )
    if dialect == "hive":
        # sqlglot writes named_struct as Spark's STRUCT(x AS name), which Hive lacks: the Hive form is
        # rendered for Hive by the template (and parse-checked as Hive there)
        body = query
    else:
        expression = sqlglot.parse_one(query, read="spark")
        if dialect != "spark":
            # Spark's to_json options (timestamps to the microsecond) have no place in JSON_FORMAT, which writes
            # a timestamp at its type's precision
            for text in expression.find_all(sqlglot.exp.JSONFormat):
                text.set("options", None)
            catalog = _sqlglot_schema(schema, database)
            expression = annotate_types(qualify(expression, schema=catalog, dialect="spark"), schema=catalog, dialect="spark")
        body = expression.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    name = sqlglot.exp.Table(this=sqlglot.exp.to_identifier(schema.table),
                             db=sqlglot.exp.to_identifier(view_database or database))
    return render("create_view_as.sql.j2", name=name.sql(dialect=dialect), query=body)


def _sqlglot_schema(schema: TableSchema, database: str) -> dict:
    columns = dict(schema.columns + list(META_COLUMNS))
    return {
        database: {
            base_table(schema.table): {**columns, **dict(BASE_EXTRA), BASE_PARTITION[0]: BASE_PARTITION[1]},
            increments_table(schema.table): {**columns, **dict(INCREMENT_PARTITIONS)},
        }
    }
