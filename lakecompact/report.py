"""What a command prints: one line per step, with counts and the time it took."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime


def say(message: str) -> None:
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def shown(value: object) -> str:
    """A count or time, or `?` where it is unknown (not recorded by the lakecompact version that wrote it)."""
    return "?" if value is None else str(value)


def plain(number: float) -> str:
    """A number as people write it: 3600 rather than 3600.0, 37.326 rather than 37.32612."""
    return str(int(number)) if float(number).is_integer() else str(round(number, 3))


def seconds_since(started: float) -> str:
    return f"{time.monotonic() - started:.1f}s"


def iso_ms(ts_ms: int | None) -> str | None:
    """A source time in epoch milliseconds as ISO 8601, UTC (None stays None)."""
    return None if ts_ms is None else datetime.fromtimestamp(ts_ms / 1000, UTC).isoformat(timespec="milliseconds")
