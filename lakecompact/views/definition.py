"""The read view `<db>.<t>`: the latest live row per key over base ∪ pending increments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakecompact.identifiers import qualified
from lakecompact.naming import base_table, increments_table
from lakecompact.schema.model import TableSchema
from lakecompact.semantics import semantics_context

if TYPE_CHECKING:
    from lakecompact.catalog import Catalog

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


def create_view(catalog: Catalog, schema: TableSchema) -> None:
    """Create or replace the view (after the table's schema changed, its SQL follows the columns)."""
    catalog.run(TEMPLATE, **view_context(schema, catalog.database))
