"""Fixtures of the landing tests."""

from __future__ import annotations

import pytest

from lakecompact.landing.land import Landing


@pytest.fixture
def careful_calls(monkeypatch) -> list[str]:
    """One entry per time a land took the careful way (`Landing._land_careful`): none, every topic took one pass."""
    calls: list[str] = []
    careful = Landing._land_careful

    def spied(self, *args, **kwargs):
        calls.append("careful")
        return careful(self, *args, **kwargs)

    monkeypatch.setattr(Landing, "_land_careful", spied)
    return calls
