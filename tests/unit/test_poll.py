"""tests/support/poll.py: what a test that waits gets back, and how it fails."""

from __future__ import annotations

import itertools

import pytest

from tests.support.poll import poll


def test_the_first_truthy_result_is_returned():
    calls = itertools.count()
    assert poll(lambda: next(calls) >= 2 and "ready", 5, "ready", interval=0.01) == "ready"


def test_a_condition_never_met_fails_naming_it_and_the_detail():
    with pytest.raises(AssertionError, match=r"^timed out after 0s waiting for the lock renewed\nlast lines$"):
        poll(lambda: False, 0.05, "the lock renewed", interval=0.01, detail=lambda: "last lines")


def test_what_it_waits_on_gone_fails_at_once_with_the_reason():
    reasons = iter([None, "exited 1"])
    with pytest.raises(AssertionError, match=r"^the stop point: exited 1$"):
        poll(lambda: False, 60, "the stop point", interval=0.01, gone=lambda: next(reasons))
