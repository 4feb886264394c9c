"""`status`'s line for a name that has no table yet: its quarantined events, or its held truncates, also when a
crash cut a held folder's counts short (the count is then unknown, not zero)."""

from __future__ import annotations

import pytest

from lakecompact.views.status import print_status

WAITING = "(no table yet: its key is known once an event other than a truncate comes)"


@pytest.mark.parametrize(("held", "line"), [
    (0, "lake.t: 1 quarantined events (no table yet: none of its events could land)"),
    (2, f"lake.t: 2 truncate(s) held, 1 quarantined events {WAITING}"),
    (None, f"lake.t: ? truncate(s) held, 1 quarantined events {WAITING}"),
])
def test_a_name_without_a_table_says_what_it_holds(capsys, held, line):
    print_status([{"table": "lake.t", "quarantined": 1, "held_truncates": held}])
    assert capsys.readouterr().out.splitlines() == [line]
