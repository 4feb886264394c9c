"""When `lakecompact run` compacts a table: as soon as one trigger of `[run]` holds for its status row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lakecompact.config import RunConfig


def epoch_seconds(iso: str | None) -> float | None:
    return None if iso is None else datetime.fromisoformat(iso).timestamp()


def compaction_due(row: dict[str, Any], policy: RunConfig, now: float) -> str | None:
    """Why the table of a status row is due for compaction now (epoch seconds), or None when it is not.

    Nothing pending is never due. A count an older lakecompact did not record (None) triggers nothing."""
    batches = row.get("pending_batches") or 0
    if not batches:
        return None
    events = row.get("pending_events")
    oldest = epoch_seconds(row.get("oldest_pending_landed_at"))
    last = epoch_seconds(row.get("last_compaction"))
    if policy.compact_after_batches and batches >= policy.compact_after_batches:
        return f"{batches} pending batches (compact_after_batches = {policy.compact_after_batches})"
    if policy.compact_after_events and events is not None and events >= policy.compact_after_events:
        return f"{events} pending events (compact_after_events = {policy.compact_after_events})"
    if policy.compact_after_seconds and oldest is not None and now - oldest >= policy.compact_after_seconds:
        return f"oldest pending batch landed {now - oldest:.0f}s ago (compact_after_seconds = {policy.compact_after_seconds:g})"
    if policy.compact_every_seconds and (last is None or now - last >= policy.compact_every_seconds):
        return f"scheduled (compact_every_seconds = {policy.compact_every_seconds:g})"
    return None
