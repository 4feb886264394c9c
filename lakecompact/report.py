"""What a command prints: one line per step, with counts and the time it took."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


def say(message: str) -> None:
    print(message, flush=True)


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


@contextmanager
def timed(what: str):
    """Print `what ... done in 1.2s` around a step, so long work shows progress."""
    started = time.monotonic()
    say(f"{what} ...")
    yield
    say(f"{what}: done in {time.monotonic() - started:.1f}s")


def seconds_since(started: float) -> str:
    return f"{time.monotonic() - started:.1f}s"
