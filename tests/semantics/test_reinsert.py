"""Insert → delete → insert at higher positions leaves the row present with the new values (docs/design.md "Semantics").

Within one batch, across batches, across compactions, and whatever the arrival order. The re-inserted row
takes nothing from the row that was deleted (a null in the new insert stays null).
"""

from tests.support.debezium import INT, TEXT, Topic
from tests.support.rows import base_reader, base_row_maker, row_maker

T = Topic("pg.public.members", [("id", INT), ("name", TEXT), ("qty", INT)], ["id"])
TABLE = "public_members"


_row = row_maker("id", "name", "qty", drop_nulls=True)  # a row as the view gives it: JSON without its null fields


def _partial(id_):
    return {"id": id_, "name": "", "qty": 0}


_base = base_reader(TABLE, "id", "name", "qty", "__op", "__deleted", "__position")
_b = base_row_maker("id", "name", "qty")  # (id, name, qty, op, position, deleted=False)


def test_reinsert_within_and_across_batches_and_compactions(lake):
    lake.write([
        # 1: insert, delete, insert in one batch
        T.event("c", _row(1, "one", 1), 100), T.event("d", _partial(1), 200), T.tombstone({"id": 1}),
        T.event("c", _row(1, "one again", 11), 300),
        # 2: insert here; delete in batch 2; insert again in batch 3 (a compaction between each)
        T.event("c", _row(2, "two", 2), 100),
        # 3: insert here (compacted), then delete + insert together in batch 2
        T.event("c", _row(3, "three", 3), 100),
        # 4: insert, delete, insert, delete: deleted
        T.event("c", _row(4, "four", 4), 100), T.event("d", _partial(4), 200),
        T.event("c", _row(4, "four again", 44), 300), T.event("d", _partial(4), 400),
        # 5: the new insert has nulls: they stay null, nothing comes back from before the delete
        T.event("c", _row(5, "five", 5), 100), T.event("d", _partial(5), 200),
        T.event("c", _row(5, None, None), 300),
        # 6: the re-insert arrives before the delete it follows (arrival order reversed)
        T.event("c", _row(6, "six again", 66), 300), T.event("c", _row(6, "six", 6), 100),
        T.event("d", _partial(6), 200),
        # 7: deleted here; re-inserted in batch 2, after compaction
        T.event("c", _row(7, "seven", 7), 100), T.event("d", _partial(7), 200),
    ])
    batch1 = [
        _row(1, "one again", 11), _row(2, "two", 2), _row(3, "three", 3), _row(5, None, None),
        _row(6, "six again", 66),
    ]
    lake.land_then_compact(TABLE, batch1)
    assert _base(lake) == [
        _b(1, "one again", 11, "c", 300), _b(2, "two", 2, "c", 100), _b(3, "three", 3, "c", 100),
        _b(4, "four again", 44, "d", 400, deleted=True), _b(5, None, None, "c", 300),
        _b(6, "six again", 66, "c", 300), _b(7, "seven", 7, "d", 200, deleted=True),
    ]

    lake.write([
        T.event("d", _partial(2), 200), T.tombstone({"id": 2}),
        T.event("d", _partial(3), 200), T.event("c", _row(3, "three again", 33), 300),
        T.event("c", _row(7, None, 77), 300),
        T.event("d", _partial(1), 200),  # redelivered old delete: older than the re-insert
    ])
    batch2 = [
        _row(1, "one again", 11), _row(3, "three again", 33), _row(5, None, None), _row(6, "six again", 66),
        _row(7, None, 77),
    ]
    lake.land_then_compact(TABLE, batch2)
    assert _base(lake) == [
        _b(1, "one again", 11, "c", 300), _b(2, "two", 2, "d", 200, deleted=True),
        _b(3, "three again", 33, "c", 300), _b(4, "four again", 44, "d", 400, deleted=True),
        _b(5, None, None, "c", 300), _b(6, "six again", 66, "c", 300), _b(7, None, 77, "c", 300),
    ]

    lake.write([
        T.event("c", _row(2, "two again", 22), 300),
        T.event("u", _row(7, "seven updated", 78), 400),
    ])
    batch3 = [
        _row(1, "one again", 11), _row(2, "two again", 22), _row(3, "three again", 33), _row(5, None, None),
        _row(6, "six again", 66), _row(7, "seven updated", 78),
    ]
    lake.land_then_compact(TABLE, batch3)
    assert _base(lake) == [
        _b(1, "one again", 11, "c", 300), _b(2, "two again", 22, "c", 300), _b(3, "three again", 33, "c", 300),
        _b(4, "four again", 44, "d", 400, deleted=True), _b(5, None, None, "c", 300),
        _b(6, "six again", 66, "c", 300), _b(7, "seven updated", 78, "u", 400),
    ]
