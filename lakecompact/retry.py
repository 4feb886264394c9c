"""Bounded retries with exponential backoff, shared by every client of a remote service."""

from __future__ import annotations

import math
import socket
import sys
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


def wait_until_reachable(
    addresses: list[tuple[str, int]],
    timeout_seconds: float,
    *,
    waiting: Callable[[str], None],
    connect: Callable[..., socket.socket] = socket.create_connection,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """None once one of the addresses accepts a TCP connection; after `timeout_seconds` without one, the last
    failure ("host:port: reason"). `waiting(last)` is called once, when the first round failed."""
    deadline = clock() + timeout_seconds
    last = ""
    # backoff bounded by the deadline rather than by a number of attempts
    for attempt in attempts(sys.maxsize, 0.5, max_backoff_seconds=5.0,
                            sleep=lambda seconds: sleep(max(0.0, min(seconds, deadline - clock())))):
        for host, port in addresses:
            try:
                connect((host, port), timeout=5).close()
                return None
            except OSError as exc:
                last = f"{host}:{port}: {exc.strerror or exc}"
        if clock() >= deadline:
            return last
        if attempt == 0:
            waiting(last)
    raise AssertionError("unreachable: attempts() never ends")
