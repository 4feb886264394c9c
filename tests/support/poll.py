"""Waiting in tests: a condition polled with a timeout, never a bare sleep. The loop is the stack's
(stack/processes.py `poll`); a test's wait fails with an AssertionError, and an exception from the check is the
test's failure, not "not yet"."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from stack.processes import poll as _poll

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float, what: str, *, interval: float = 0.25,
         gone: Callable[[], str | None] | None = None, detail: Callable[[], str] | None = None,
         not_yet: tuple[type[BaseException], ...] = ()) -> T:
    """Call `check` until it returns something truthy, and return that. An AssertionError naming `what` after
    `timeout` seconds, or at once when `gone` returns a reason (what the test waits on has exited); `detail`
    adds what the failure message should show (a process's last output); exceptions of `not_yet` from `check`
    count as not yet."""
    return _poll(check, timeout, what, interval, fail_fast=gone, not_yet=not_yet, failure=AssertionError,
                 detail=detail)
