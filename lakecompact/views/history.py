"""`lakecompact history --table T`: every base version a table had, from its manifests (docs/design.md "Commit protocols").

A manifest records what its compaction did; kept, expired and rolled-back manifests are all read, so the history
goes back to the table's first compaction. It reads files only: on a local warehouse no JVM starts.
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql import SparkSession

from lakecompact.config import Config
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.manifest import Manifests
from lakecompact.lake.partitions import MARKER_BUCKET
from lakecompact.report import iso_ms, shown


def history(spark: SparkSession | None, config: Config, table: str) -> list[dict[str, Any]]:
    """One row per base version, oldest first; `state` is current, kept (rollback can return to it), expired
    or rolled back; `change_feed` names the feed version readable for it, if any. Without a session (None) a
    local warehouse is read from the disk."""
    catalog = Catalog(spark, config)
    catalog.require(table)
    paths = catalog.paths(table)
    entries = Manifests(catalog.storage, paths.manifests).history()
    current = max((m.version for m, fate, _ in entries if fate == "kept"), default=None)
    rows = []
    for manifest, fate, rolled_back_at in entries:
        stats = manifest.stats
        readable = fate == "kept" and catalog.storage.exists(paths.changes(manifest.version))
        rows.append({
            "version": manifest.version,
            "state": "current" if fate == "kept" and manifest.version == current else fate,
            # not the number before it when a rollback came in between (docs/change-feed.md)
            "compacted_from": manifest.previous,
            "rolled_back_at": rolled_back_at,
            "created_at": stats.get("created_at"),
            "batches": len(manifest.consumed),
            "events_in": stats.get("events_in"),
            "rows_written": stats.get("rows_written"),
            "buckets_rewritten": len([b for b in stats.get("buckets_rewritten", []) if b != MARKER_BUCKET]),
            "deltas_written": len(stats.get("deltas_written", [])),
            "rows": stats.get("rows"),
            "live_rows": stats.get("live_rows"),
            "seconds": stats.get("seconds"),
            "change_feed": manifest.version if readable else None,
            # row history (`row_history`), as this version left it: the events kept, the versions (rows) they give,
            # and the source time the oldest version began
            "history_events": stats.get("history_events") if manifest.events is not None else None,
            "history_rows": stats.get("history_rows") if manifest.events is not None else None,
            "history_from": iso_ms(stats.get("history_from_ms")) if manifest.events is not None else None,
        })
    return rows


def _state(row: dict[str, Any]) -> str:
    state = f"rolled back at {_when(row['rolled_back_at'])}" if row.get("rolled_back_at") else row["state"]
    if row["compacted_from"] != row["version"] - 1:
        state += f", compacted from v{row['compacted_from']}"
    return state


def _when(iso: str) -> str:
    """An ISO time as the writers record it (UTC) to the second, as people read it."""
    return f"{iso[:10]} {iso[11:19]} UTC" if iso.endswith("+00:00") and len(iso) >= 19 else iso


def print_history(table: str, rows: list[dict[str, Any]], out=sys.stdout) -> None:
    if not rows:
        print(f"{table}: no base version yet (nothing compacted)", file=out)
        return

    for row in rows:
        feed = f"change feed v{row['change_feed']}" if row["change_feed"] is not None else "no change feed"
        print(
            f"{table} v{row['version']} ({_state(row)}): {shown(row['created_at'])}, {row['events_in']} events from "
            f"{row['batches']} batch(es), {row['rows_written']} rows written to {row['buckets_rewritten']} bucket(s)"
            f"{f' and {d} delta(s)' if (d := row['deltas_written']) else ''} "
            f"in {shown(row['seconds'])}s; {shown(row['live_rows'])} live of {shown(row['rows'])} rows; {feed}",
            file=out,
        )
