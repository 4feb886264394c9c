"""What a command prints: one line per step, with counts and the time it took."""

from __future__ import annotations

import sys
import time


def say(message: str) -> None:
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def shown(value: object) -> str:
    """A count or time, or `?` where it is unknown (not recorded by the lakecompact version that wrote it)."""
    return "?" if value is None else str(value)


def seconds_since(started: float) -> str:
    return f"{time.monotonic() - started:.1f}s"
