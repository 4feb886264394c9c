"""Waiting in tests: a condition polled with a timeout, never a bare sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float, what: str, *, interval: float = 0.25,
         gone: Callable[[], str | None] | None = None, detail: Callable[[], str] | None = None) -> T:
    """Call `check` until it returns something truthy, and return that. An AssertionError naming `what` after
    `timeout` seconds, or at once when `gone` returns a reason (what the test waits on has exited); `detail`
    adds what the failure message should show (a process's last output)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if gone is not None and (reason := gone()):
            raise AssertionError(f"{what}: {reason}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s" + (f"\n{detail()}" if detail else ""))
        time.sleep(interval)  # polling the condition, not waiting for it
