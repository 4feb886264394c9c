"""What a command prints: one line per step, with counts and the time it took."""

from __future__ import annotations

import sys
import time


def say(message: str) -> None:
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def seconds_since(started: float) -> str:
    return f"{time.monotonic() - started:.1f}s"
