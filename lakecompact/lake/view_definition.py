"""The read view `<db>.<t>`: the latest live row per key over base ∪ pending increments."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Protocol

from lakecompact import sql
from lakecompact.identifiers import qualified
from lakecompact.lake import row_history
from lakecompact.lake.model import TableSchema
from lakecompact.lake.semantics import semantics_context
from lakecompact.naming import base_table, increments_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakecompact.config import Config
    from lakecompact.lake.paths import TablePaths
    from lakecompact.lake.storage import LocalFiles, Storage


class Catalog(Protocol):
    """What making a view needs of `lakecompact.lake.catalog.Catalog`, which makes the views: named here so that the
    views do not import the catalog back."""

    database: str
    config: Config
    spark: SparkSession
    storage: Storage | LocalFiles

    def paths(self, table: str) -> TablePaths: ...

    def require(self, table: str) -> TableSchema: ...

TEMPLATE = "create_view.sql.j2"


def view_context(schema: TableSchema, database: str) -> dict:
    """The inputs of create_view.sql.j2 for one table."""
    return {
        "view": schema.table,
        **semantics_context(
            schema,
            base=qualified(database, base_table(schema.table)),
            increments=qualified(database, increments_table(schema.table)),
            live_only=True,
            read_increments_once=True,
        ),
    }


def view_statement(catalog: Catalog, schema: TableSchema) -> str:
    """The view's `CREATE OR REPLACE VIEW`, as rendered (not yet parse-checked)."""
    return sql.render(TEMPLATE, database=catalog.database, **view_context(schema, catalog.database))


def view_statements(catalog: Catalog, schema: TableSchema) -> list[tuple[str, str]]:
    """(template, SQL) of the view, and with `row_history` of `<t>_events` (if not there) and `<t>_history`."""
    statements = [(TEMPLATE, view_statement(catalog, schema))]
    if catalog.config.table(schema.table).row_history:
        statements += row_history.history_statements(catalog.database, schema, catalog.paths(schema.table).events_root)
    return statements


def create_view(catalog: Catalog, schema: TableSchema, statements: list[tuple[str, str]] | None = None) -> None:
    """Create or replace the view (after the table's schema changed, its SQL follows the columns)."""
    statements = statements or view_statements(catalog, schema)
    for template, statement in statements:
        sql.parse_check(statement, template)
        catalog.spark.sql(statement)
    record_view(catalog, schema.table, _joined(statements))


def _joined(statements: list[tuple[str, str]]) -> str:
    """What view.json's digest is of: the view's SQL alone for a table without history, as it always was."""
    return ";\n".join(statement for _, statement in statements)


def _record_path(catalog: Catalog, table: str) -> str:
    return catalog.paths(table).view_record


def _digest(statement: str) -> str:
    return hashlib.sha256(statement.encode()).hexdigest()


def record_view(catalog: Catalog, table: str, statement: str) -> None:
    """Note which SQL the view was created with (`refresh_view` compares it with this version's)."""
    catalog.storage.write_json(_record_path(catalog, table), {"sha256": _digest(statement)}, overwrite=True)


def refresh_view(catalog: Catalog, schema: TableSchema) -> bool:
    """Create the view again when its SQL is not what this version of lakecompact writes: a lake made by an
    earlier version reads through the view it was given until then (faster view SQL would otherwise reach it
    only with its table's next schema change). True when it did."""
    path = _record_path(catalog, schema.table)
    recorded = catalog.storage.read_json(path)["sha256"] if catalog.storage.exists(path) else None
    statements = view_statements(catalog, schema)
    if recorded == _digest(_joined(statements)):
        return False
    create_view(catalog, schema, statements)
    return True


def refresh_view_as_saved(catalog: Catalog, table: str) -> None:
    """`refresh_view` with the table's schema as saved, for a job that does not change the schema (compaction): a
    land (its own lock) may save a newer schema and make its view between this job's read and its view, which
    would then lack the land's new columns. The schema is read again after each view this makes, until it holds
    still (a land saves its schema before it makes its view, so either this sees it or that view comes last)."""
    schema = catalog.require(table)
    while refresh_view(catalog, schema):
        latest = catalog.require(table)
        if latest == schema:
            return
        schema = latest
