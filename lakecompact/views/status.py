"""`lakecompact status`: per table, the base version and its rows, what is pending, quarantined and readable.

Everything comes from files the writers keep beside the data: the latest manifest (rows and live rows per
bucket, the last source change seen), the counts file of each pending increment and quarantine batch, and the
lander's state. So status reads a few small files; on a local warehouse no JVM starts. A count that an
older lakecompact did not record shows as unknown (None).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from lakecompact.config import Config, is_local
from lakecompact.lake.catalog import UNPLACED, Catalog, published_feed_versions
from lakecompact.lake.manifest import Manifests
from lakecompact.lake.storage import VersionedState, folder_stats
from lakecompact.report import iso_ms, say, shown


def status(spark: SparkSession | None, config: Config) -> list[dict[str, Any]]:
    """One row per table, and one for the events of no table if any were quarantined. Without a session
    (None) a local warehouse is read from the disk."""
    catalog = Catalog(spark, config)
    _, land_state = VersionedState(catalog.storage, catalog.database_paths.land_state).latest()
    landed_batches = (land_state or {}).get("batch", 0)  # a batch above it was never committed (a crashed land)
    rows = []
    for table in catalog.tables():
        schema = catalog.require(table)
        paths = catalog.paths(table)
        manifests = Manifests(catalog.storage, paths.manifests)
        kept = manifests.versions()  # listed once: the current version and the feed's published ones
        current = manifests.read(kept[-1]) if kept else None  # none: never compacted
        stats = current.stats if current else {}
        archived_up_to = current.last_batch if current else 0
        pending = [
            folder for (_, batch), folder in batch_folders(catalog, paths.increments)
            if archived_up_to < batch <= landed_batches
        ]
        pending_stats = [folder_counts(catalog, folder) for folder in pending]
        seen = [stats.get("max_source_ts_ms"), *(s.get("max_source_ts_ms") for s in pending_stats if s)]
        verified = catalog.storage.read_json(paths.verified) if catalog.storage.exists(paths.verified) else {}
        rows.append({
            "table": f"{catalog.database}.{table}",
            "key": list(schema.key) or None,
            "base_version": current.version if current else 0,
            "base_rows": stats.get("rows") if current else 0,
            "live_rows": stats.get("live_rows") if current else 0,
            "pending_batches": len(pending),
            "pending_events": _total(pending_stats),
            "quarantined": _quarantined(catalog, paths.quarantine),
            "change_feed_versions": published_feed_versions(catalog.storage.list_names(paths.changes_root), kept),
            "last_compaction": stats.get("created_at"),
            "last_compaction_seconds": stats.get("seconds"),
            "last_compaction_rows_written": stats.get("rows_written"),
            "oldest_pending_landed_at": min((s["landed_at"] for s in pending_stats if s and "landed_at" in s), default=None),
            "last_source_ts": iso_ms(max((t for t in seen if t is not None), default=None)),
            "verified_at": verified.get("verified_at"),  # the latest `verify`, if one ran
            "verify_divergent": verified.get("divergent"),
            # row history (`<t>_history`), as of the last compaction: the events it keeps, the versions (rows) they
            # give, and the source time the oldest version began
            "history_events": stats.get("history_events") if current and current.events is not None else None,
            "history_rows": stats.get("history_rows") if current and current.events is not None else None,
            "history_from": iso_ms(stats.get("history_from_ms")) if current and current.events is not None else None,
        })
    for table in catalog.not_made():  # no table yet: none of its events could land, or all were truncates
        paths = catalog.paths(table)
        rows.append({"table": f"{catalog.database}.{table}", "quarantined": _quarantined(catalog, paths.quarantine),
                     "held_truncates": _total([folder_counts(catalog, folder) for folder in catalog.held_truncates(table)])})
    unplaced = _quarantined(catalog, catalog.unplaced_quarantine)
    if unplaced:
        rows.append({"table": UNPLACED, "quarantined": unplaced})
    return rows


def unfolded_rows(config: Config, tables: list[str] | None = None) -> int | None:
    """The rows of increments the next `compact` of these tables (default: all) folds in, as `status` reports them
    pending, read without a JVM so that the command's JVM can be started for them; None when the warehouse is not
    on the local disk (or a count was not recorded)."""
    if not is_local(config.warehouse):
        return None
    # a name with quarantined events and no table (and the events of none) has no increments to fold
    pending = [row["pending_events"] for row in status(None, config)
               if "pending_events" in row and (tables is None or table_of(row) in tables)]
    return None if None in pending else sum(pending)


def table_of(row: dict[str, Any]) -> str:
    """The table a status row is about, without the database (`_unknown` for the events of no table)."""
    return row["table"].split(".", 1)[-1]


def print_status(rows: list[dict[str, Any]]) -> None:
    if not rows:
        say("status: no tables yet")
    for row in rows:
        if row["table"] == UNPLACED:
            say(f"{row['table']}: {row['quarantined']} quarantined events")
            continue
        # held_truncates is None (not 0) when a held folder's counts are missing: a crash cut its write short
        if "base_version" not in row and row["held_truncates"] == 0:
            say(f"{row['table']}: {row['quarantined']} quarantined events (no table yet: none of its events could land)")
            continue
        if "base_version" not in row:
            quarantined = f", {row['quarantined']} quarantined events" if row["quarantined"] else ""
            say(f"{row['table']}: {shown(row['held_truncates'])} truncate(s) held{quarantined} (no table yet: its key "
                f"is known once an event other than a truncate comes)")
            continue
        feed = ", ".join(f"v{v}" for v in row["change_feed_versions"]) or "none"
        compacted = (f"last compaction {row['last_compaction']} ({shown(row['last_compaction_seconds'])}s)"
                     if row["last_compaction"] else "never compacted")
        say(
            f"{row['table']}: base v{row['base_version']}, {shown(row['base_rows'])} base rows "
            f"({shown(row['live_rows'])} live), {row['pending_batches']} pending batch(es) with "
            f"{shown(row['pending_events'])} events, {shown(row['quarantined'])} quarantined, "
            f"change feed {feed}, {compacted}, last source change {row['last_source_ts'] or '-'}{_verified(row)}"
            f"{_row_history(row)}"
        )


def _row_history(row: dict[str, Any]) -> str:
    """A status row's row history, if the table keeps one (as of its last compaction)."""
    if row.get("history_events") is None:
        return ""
    return (f", row history of {shown(row.get('history_rows'))} versions ({row['history_events']} events) "
            f"from {row['history_from'] or '-'}")


def _verified(row: dict[str, Any]) -> str:
    """The latest `verify` of a status row's table, if one ran."""
    if not row.get("verified_at"):
        return ""
    found = "equal" if not row["verify_divergent"] else f"{row['verify_divergent']} keys differ"
    return f", verified {row['verified_at']}: {found}"


def batch_folders(catalog: Catalog, root: str) -> list[tuple[tuple[str, int], str]]:
    """((hour, batch), folder) of the `hour=H/batch=N` folders under root (increments, or their archive)."""
    found = []
    for hour_dir in (n for n in catalog.storage.list_names(root) if n.startswith("hour=")):
        hour = hour_dir.removeprefix("hour=")
        for batch_dir in catalog.storage.list_names(f"{root}/{hour_dir}"):
            if batch_dir.startswith("batch="):
                found.append(((hour, int(batch_dir.removeprefix("batch="))), f"{root}/{hour_dir}/{batch_dir}"))
    return found


def folder_counts(catalog: Catalog, folder: str) -> dict[str, Any] | None:
    """The counts file of an increment or quarantine batch folder (None: none yet, its write was interrupted
    before the counts, which come after the rows)."""
    path = folder_stats(folder)
    return catalog.storage.read_json(path) if catalog.storage.exists(path) else None


def _total(counts: list[dict[str, Any] | None]) -> int | None:
    return None if any(c is None for c in counts) else sum(c["rows"] for c in counts)


def _quarantined(catalog: Catalog, root: str) -> int | None:
    batches = [f"{root}/{name}" for name in catalog.storage.list_names(root) if name.startswith("batch=")]
    return _total([folder_counts(catalog, folder) for folder in batches])
