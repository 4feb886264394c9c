"""Row history (`row_history`): `<db>.<t>_history`, every version of every key by source time, over the events
compactions keep (`<t>_events`) and the pending increments (docs/design.md "Row history")."""

from __future__ import annotations

from lakecompact import sql
from lakecompact.errors import ConfigError
from lakecompact.identifiers import qualified
from lakecompact.lake.model import BASE_EXTRA, META_COLUMNS, TableSchema
from lakecompact.lake.semantics import columns_context
from lakecompact.naming import events_table, history_table, increments_table

QUERY = "history_rows.sql.j2"
EVENTS_PARTITION = ("__part", "INT")  # the version whose compaction wrote the partition's events
# `<t>_history`'s own columns, after the table's: what `sql --as-of` filters on, and the change that began the row
HISTORY_COLUMNS = ("__valid_from", "__valid_to", "__position", "__op")
DAY_MS = 86_400_000
BEGINS = "__op IN ('c', 'r', 'u')"  # an event that begins a version


def require_keyed(schema: TableSchema) -> None:
    """A keyless table appends every event as a row of its own: it has no versions to keep."""
    if schema.keyless:
        raise ConfigError(f"tables.{schema.table}.row_history",
                          "false for a table without a key (append-only: every event is a row, there are no versions)",
                          True)


def event_columns(schema: TableSchema) -> list[tuple[str, str]]:
    """The columns of `<t>_events`: an increment's, and the batch its event landed in."""
    return schema.columns + list(META_COLUMNS) + [BASE_EXTRA[0]]


def history_context(schema: TableSchema, *, events: str, increments: str | None, store: bool = False,
                    cutoff_us: int | None = None) -> dict:
    """The inputs of history_rows.sql.j2."""
    return {
        "events": events,
        "increments": increments,
        **columns_context(schema),
        "store": store,
        "cutoff_us": cutoff_us,
        "begins": BEGINS,
    }


def history_statements(database: str, schema: TableSchema, events_root: str) -> list[tuple[str, str]]:
    """(template, SQL) of `<t>_events` (if not there, its folders under `events_root`) and the view `<t>_history`,
    parse-checked."""
    require_keyed(schema)
    events = sql.render_checked(
        "create_table.sql.j2", database=database, table=events_table(schema.table), columns=event_columns(schema),
        partitions=[EVENTS_PARTITION], location=events_root, properties={},
    )
    view = sql.render_checked(
        "create_view.sql.j2", database=database, view=history_table(schema.table), query=QUERY,
        **history_context(schema, events=qualified(database, events_table(schema.table)),
                          increments=qualified(database, increments_table(schema.table))),
    )
    return [("create_table.sql.j2", events), ("create_view.sql.j2", view)]


def retention_cutoff_us(days: float, latest_source_ts_ms: int | None) -> int | None:
    """The source time (µs) before which ended versions are dropped (None: every version kept)."""
    if not days or latest_source_ts_ms is None:
        return None
    return (latest_source_ts_ms - round(days * DAY_MS)) * 1000
