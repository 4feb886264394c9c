"""The read views for other engines: the same latest-state SQL, transpiled by sqlglot.

Trino, Presto and Athena read the Hive tables directly but cannot run a Spark view; they get the
view's query in their own dialect, typed from the table schema (Trino's ROW needs field types).
Hive has no MAX_BY, no lambdas and no to_json: its view is rendered from the same template in the form Hive
runs (MAX over named_struct(order, row), which compares the order first; a keyless table's events are told
apart by their columns, matched null-safe, rather than by their JSON image).
A table's row history (`<t>_history`) is transpiled the same way for Trino and Athena (engine 3, Trino's
functions); Hive has no lambdas over arrays and Presto no exact microsecond timestamps, so they have none.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from lakecompact import sql
from lakecompact.errors import LakecompactError
from lakecompact.identifiers import qualified
from lakecompact.lake import row_history
from lakecompact.lake.model import (
    BASE_EXTRA,
    BASE_PARTITION,
    INCREMENT_PARTITIONS,
    META_COLUMNS,
    TableSchema,
)
from lakecompact.lake.semantics import semantics_sql
from lakecompact.naming import base_table, events_table, history_table, increments_table
from lakecompact.views import DIALECTS, Dialect

HISTORY_DIALECTS = ("spark", "trino", "athena")
# sqlglot types MAX_BY's value as nothing; it is the value's type, as MAX's is (Trino's ROW needs field types)
_SPARK_TYPES = Spark().EXPRESSION_METADATA
_TYPES = {**_SPARK_TYPES, exp.ArgMax: _SPARK_TYPES[exp.Max]}


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
        body = _transpiled(query, schema, database, dialect)
    return _create_view(schema.table, query=body, dialect=dialect, database=view_database or database)


def history_view_sql(schema: TableSchema, database: str, dialect: Dialect, view_database: str | None = None) -> str:
    """`CREATE OR REPLACE VIEW <t>_history` (`row_history`) in the given engine's dialect, over `<t>_events` and
    `<t>_increments` of `database`."""
    if dialect not in HISTORY_DIALECTS:
        raise UnsupportedDialect(
            f"views --dialect {dialect}: {schema.table}_history (row_history) has a form for "
            f"{', '.join(HISTORY_DIALECTS)} only; expected one of those, or read the history through Spark"
        )
    query = sql.render(row_history.QUERY, **row_history.history_context(
        schema, events=qualified(database, events_table(schema.table)),
        increments=qualified(database, increments_table(schema.table))))
    return _create_view(history_table(schema.table), query=_transpiled(query, schema, database, dialect),
                        dialect=dialect, database=view_database or database)


def _create_view(view: str, *, query: str, dialect: Dialect, database: str) -> str:
    name = exp.Table(this=exp.to_identifier(view), db=exp.to_identifier(database))
    return sql.render("create_view_as.sql.j2", name=name.sql(dialect=dialect), query=query)


def _transpiled(query: str, schema: TableSchema, database: str, dialect: Dialect) -> str:
    expression = sqlglot.parse_one(query, read="spark")
    if dialect != "spark":
        # Spark's to_json options (timestamps to the microsecond) have no place in JSON_FORMAT, which writes
        # a timestamp at its type's precision
        for text in expression.find_all(exp.JSONFormat):
            text.set("options", None)
        catalog = _sqlglot_schema(schema, database)
        expression = annotate_types(qualify(expression, schema=catalog, dialect="spark"), schema=catalog,
                                    dialect="spark", expression_metadata=_TYPES)
        _portable_functions(expression)
    return expression.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)


def _portable_functions(expression: exp.Expression) -> None:
    """Spark's functions that sqlglot writes wrongly or not at all for Trino: LAST(x, TRUE) over a window is the
    last non-null value (LAST_VALUE … IGNORE NULLS, not ARBITRARY); timestamp_micros is exact in Trino's
    from_unixtime_nanos, at UTC."""
    for last in list(expression.find_all(exp.Last)):
        last.replace(exp.LastValue(this=last.this))
    for call in list(expression.find_all(exp.Anonymous)):
        if call.name.lower() == "timestamp_micros":
            [micros] = call.expressions
            nanos = exp.Anonymous(this="from_unixtime_nanos", expressions=[exp.Mul(this=micros.copy(),
                                                                                   expression=exp.Literal.number(1000))])
            call.replace(exp.AtTimeZone(this=nanos, zone=exp.Literal.string("UTC")))
def _sqlglot_schema(schema: TableSchema, database: str) -> dict:
    columns = dict(schema.columns + list(META_COLUMNS))
    return {
        database: {
            base_table(schema.table): {**columns, **dict(BASE_EXTRA), BASE_PARTITION[0]: BASE_PARTITION[1]},
            increments_table(schema.table): {**columns, **dict(INCREMENT_PARTITIONS)},
            events_table(schema.table): {**dict(row_history.event_columns(schema)),
                                         row_history.EVENTS_PARTITION[0]: row_history.EVENTS_PARTITION[1]},
        }
    }
