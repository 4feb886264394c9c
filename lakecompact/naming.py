"""Names: a topic's table, and the metastore objects of a table."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakecompact.config import Config

_UNSAFE_CHARS = re.compile(r"[^a-z0-9_]")


def table_for_topic(topic: str, config: Config) -> str:
    """`server.schema.table` → `schema_table`, lower-cased, other characters → `_` (see docs/design.md "Contract")."""
    for name, table in config.tables.items():
        if table.topic == topic:
            return name
    naming = config.naming
    name = re.sub(naming.regexp, naming.replacement, topic) if naming.regexp else topic
    parts = name.split(".")
    if naming.drop_server and len(parts) >= 2:
        parts = parts[1:]
    name = naming.prefix + "_".join(parts)
    if naming.case == "lower":
        name = name.lower()
    elif naming.case == "upper":
        name = name.upper()
    name = _UNSAFE_CHARS.sub("_", name) if naming.case == "lower" else re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"t_{name}" if name[:1].isdigit() else name


def base_table(table: str) -> str:
    """The current base version of `table` (every key, tombstones included)."""
    return f"{table}_base"


def increments_table(table: str) -> str:
    """The committed, not yet compacted increment batches of `table`."""
    return f"{table}_increments"


def changes_table(table: str) -> str:
    """The change feed of `table`, one partition per base version."""
    return f"{table}_changes"


def verify_table(table: str) -> str:
    """What each `verify` of `table` found different from its source table, with the run's time."""
    return f"{table}_verify"


def events_table(table: str) -> str:
    """Every event compactions folded into `table`'s base, kept for its row history (`row_history`)."""
    return f"{table}_events"


def history_table(table: str) -> str:
    """The view of every version of every key of `table` by source time (`row_history`); not to be confused with
    `lakecompact history`, which lists the base versions compactions wrote."""
    return f"{table}_history"
