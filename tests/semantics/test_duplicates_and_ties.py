"""Redelivery is harmless; ties at one position go by op priority c < r < u < d, then by arrival (docs/design.md "Order of events").

Redelivered events are exact copies (same source positions) with new Kafka offsets, as after a connector
or job restart: in the same batch, in later batches, and after compaction.
"""

from tests.support.debezium import INT, TEXT, Topic
from tests.support.rows import base_reader, base_row_maker, row_maker

T = Topic("pg.public.ledger", [("id", INT), ("name", TEXT)], ["id"])
TABLE = "public_ledger"


_row = row_maker("id", "name")
_base = base_reader(TABLE, "id", "name", "__op", "__deleted", "__position")
_b = base_row_maker("id", "name")  # (id, name, op, position, deleted=False)


def _history():
    """Keys 1-3: the events that a restart redelivers."""
    return [
        T.event("c", _row(1, "one"), 100), T.event("u", _row(1, "one updated"), 200),
        T.event("c", _row(2, "two"), 100), T.event("d", {"id": 2, "name": ""}, 200), T.tombstone({"id": 2}),
        T.event("c", _row(3, "three"), 100), T.event("d", {"id": 3, "name": ""}, 200),
        T.event("c", _row(3, "three again"), 300),
    ]


def test_redelivery_is_harmless(lake):
    lake.write(_history() + _history())  # redelivered within the batch
    lake.land()
    state = [_row(1, "one updated"), _row(3, "three again")]
    assert lake.view(TABLE) == state
    lake.write(_history())  # redelivered in a later batch, before compaction
    lake.land_then_compact(TABLE, state)
    base = [_b(1, "one updated", "u", 200), _b(2, "two", "d", 200, deleted=True), _b(3, "three again", "c", 300)]
    assert _base(lake) == base
    lake.write(_history() + _history())  # after compaction
    lake.land_then_compact(TABLE, state)
    assert _base(lake) == base


def test_ties_by_op_priority_then_arrival(lake):
    lake.write([
        # equal positions, different ops: the arrival order is the reverse of the op priority
        T.event("u", _row(1, "u wins over c"), 500), T.event("c", _row(1, "c"), 500),
        T.event("d", {"id": 2, "name": ""}, 500), T.event("u", _row(2, "u loses to d"), 500),
        T.event("u", _row(3, "u wins over r"), 500), T.event("r", _row(3, "r"), 500),
        T.event("r", _row(4, "r wins over c"), 500), T.event("c", _row(4, "c"), 500),
        T.event("d", {"id": 5, "name": ""}, 500), T.event("c", _row(5, "c loses to d"), 500),
        # equal position and op: the later arrival wins, in one batch ...
        T.event("u", _row(6, "first"), 600), T.event("u", _row(6, "second"), 600),
        # ... across batches (7) and across a compaction (8)
        T.event("u", _row(7, "batch 1"), 600),
        T.event("u", _row(8, "batch 1"), 600),
        # higher op priority across batches: the r of batch 1 still wins over the c of batch 2 (9)
        T.event("r", _row(9, "r in batch 1"), 700),
    ])
    lake.land()
    lake.write([T.event("u", _row(7, "batch 2"), 600), T.event("c", _row(9, "c in batch 2"), 700)])
    lake.land()
    state = [
        _row(1, "u wins over c"), _row(3, "u wins over r"), _row(4, "r wins over c"), _row(6, "second"),
        _row(7, "batch 2"), _row(8, "batch 1"), _row(9, "r in batch 1"),
    ]
    assert lake.view(TABLE) == state
    lake.compact()
    assert lake.view(TABLE) == state
    lake.write([T.event("u", _row(8, "batch 3"), 600), T.event("u", _row(6, "first"), 500)])
    lake.land()
    state[5] = _row(8, "batch 3")
    assert lake.view(TABLE) == state
    lake.compact()
    assert lake.view(TABLE) == state
    assert _base(lake) == [
        _b(1, "u wins over c", "u", 500), _b(2, "u loses to d", "d", 500, deleted=True),
        _b(3, "u wins over r", "u", 500), _b(4, "r wins over c", "r", 500),
        _b(5, "c loses to d", "d", 500, deleted=True), _b(6, "second", "u", 600), _b(7, "batch 2", "u", 600),
        _b(8, "batch 3", "u", 600), _b(9, "r in batch 1", "r", 700),
    ]
