"""Bounded retries with exponential backoff, shared by every client of a remote service."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

# HTTP answers worth another attempt: too many requests, and server errors
RETRY_STATUS = frozenset({429}) | frozenset(range(500, 600))


def attempts(
    retries: int,
    backoff_seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    max_backoff_seconds: float = math.inf,
) -> Iterator[int]:
    """Attempt numbers 0..retries; before attempt n > 0 it sleeps backoff × 2^(n-1), capped.

    >>> slept = []
    >>> list(attempts(3, 0.5, sleep=slept.append, max_backoff_seconds=1.5)), slept
    ([0, 1, 2, 3], [0.5, 1.0, 1.5])
    """
    for attempt in range(retries + 1):
        if attempt:
            sleep(min(backoff_seconds * 2 ** (attempt - 1), max_backoff_seconds))
        yield attempt
