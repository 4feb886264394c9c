"""A small pure-Python model of docs/design.md "Semantics" for keyed tables, to check the view and the base against.

An event is a dict:
    {"op": "c" | "r" | "u" | "d",     # snapshot reads (r) are inserts
     "id": 1,                           # the key
     "row": {"note": "...", "qty": 1},  # the after image; for op d the (partial) before image
     "position": 120,                   # the source position (LSN), comparable as a number
     "arrival": 7}                      # arrival order (line landed earlier = smaller)
A column whose value is PLACEHOLDER was TOASTed: unchanged, value unavailable.

The rules, per key:
- events apply in order of (position, op priority c < r < u < d, arrival);
- c / r / u make the row live with the event's image; a TOAST placeholder keeps the value the column had in
  the key's previous state (which may itself come from a placeholder: chains resolve), or null when no
  earlier state of the key is known at all;
- d makes the key deleted; the deleted row keeps the last values known for the key (the delete's
  before image is partial), or the before image when nothing else is known;
- an older event that sorts before a delete never resurrects the key, whenever it arrives;
- exact duplicates apply twice at the same place in the order, which changes nothing;
- a truncate {"op": "t", "position": ...} (no key) deletes every key whose events sort before it (an event at its
  own position comes after it), and no value from before it fills a placeholder after it.
Row history: events carry their source time "ts" (ms); the table as of a moment T is the state after every event
with ts <= T (`expected_as_of`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER = "__debezium_unavailable_value"
OP_RANK = {"c": 0, "r": 1, "u": 2, "d": 3}


def order_key(event: dict) -> tuple:
    return (event["position"], OP_RANK[event["op"]], event["arrival"])


@dataclass
class KeyState:
    deleted: bool = False
    row: dict[str, Any] = field(default_factory=dict)  # last values known (the live row when not deleted)
    known: bool = False  # some insert/update/snapshot was applied, so `row` holds real values


def replay(events: Iterable[dict], key: str = "id") -> dict[Any, KeyState]:
    """The state of every key that has at least one event: live or deleted, with its row."""
    by_key: dict[Any, list[dict]] = {}
    truncates = []
    for event in events:
        if event["op"] == "t":
            truncates.append(event)
            continue
        if event["op"] not in OP_RANK:
            raise ValueError(f"reference model handles ops c, r, u, d and t only, not {event['op']!r}")
        by_key.setdefault(event[key], []).append(event)
    states = {}
    for k, history in by_key.items():
        state = KeyState()
        # a truncate sorts before the events at its own position
        for event in sorted(history + truncates, key=lambda e: (e["position"], OP_RANK.get(e["op"], -1), e["arrival"])):
            if event["op"] == "t":
                state = KeyState(deleted=True)
                continue
            image = {key: k, **event["row"]}
            if event["op"] == "d":
                state.deleted = True
                if not state.known:
                    # nothing better is known than the partial before image
                    state.row = {c: (None if v == PLACEHOLDER else v) for c, v in image.items()}
                continue
            previous = state.row if state.known else {}
            state.row = {c: (previous.get(c) if v == PLACEHOLDER else v) for c, v in image.items()}
            state.deleted = False
            state.known = True
        states[k] = state
    return states


def expected_view(events: Iterable[dict], key: str = "id") -> dict[Any, dict]:
    """{key: row} of the live keys: what `SELECT * FROM db.table` must return (data columns)."""
    return {k: dict(s.row) for k, s in replay(events, key).items() if not s.deleted}


def expected_base(events: Iterable[dict], key: str = "id") -> dict[Any, tuple[bool, dict]]:
    """{key: (deleted, row)} of every key seen, tombstones included: what the compacted base must hold."""
    return {k: (s.deleted, dict(s.row)) for k, s in replay(events, key).items()}


def expected_as_of(events: Iterable[dict], moment: int, key: str = "id") -> dict[Any, dict]:
    """{key: row} of the keys live as of source time `moment` (ms): the view of the events with ts <= moment."""
    return expected_view([e for e in events if e["ts"] <= moment], key)
