"""Deletes leave a tombstone that keeps its position (docs/design.md "Deletes and tombstones",
docs/design.md "Partial images and soft deletes").

An older update or insert that arrives in a later batch, before or after compaction, must never bring a
deleted row back (Hudi's documented limitation). Soft mode keeps the deleted row with `__deleted` true and
the last values known for the key, never the delete's partial before image; hard mode purges tombstones.
"""


from tests.support.debezium import INT, TEXT, Topic
from tests.support.rows import base_reader, base_row_maker, row_maker

COLUMNS = [("id", INT), ("name", TEXT), ("qty", INT)]


def _topic(table: str) -> Topic:
    return Topic(f"pg.public.{table}", COLUMNS, ["id"])


_row = row_maker("id", "name", "qty")


def _partial(id_):
    """A delete's before image under REPLICA IDENTITY DEFAULT: the key, NOT NULL columns get fallbacks."""
    return {"id": id_, "name": "", "qty": 0}


_base = base_reader(None, "id", "name", "qty", "__op", "__deleted", "__position")  # (lake, table)
_live = base_row_maker("id", "name", "qty")  # (id, name, qty, op, position): not deleted


def _deleted(id_, name, qty, position):
    return _live(id_, name, qty, "d", position, deleted=True)


def test_soft_delete_is_never_resurrected_by_older_events(lake):
    t = _topic("accounts")
    lake.write([
        # 1: created, updated, deleted; then its Kafka tombstone (skipped)
        t.event("c", _row(1, "a", 1), 100), t.event("u", _row(1, "b", 2), 200), t.event("d", _partial(1), 300),
        t.tombstone({"id": 1}),
        # 2: deleted in batch 2
        t.event("c", _row(2, "x", 10), 100),
        # 3: never deleted
        t.event("c", _row(3, "keep", 30), 100),
        # 4: an older update arrives after the delete, in the same batch
        t.event("c", _row(4, "four", 4), 100), t.event("d", _partial(4), 200), t.event("u", _row(4, "older", 15), 150),
        t.tombstone({"id": 4}),
    ])
    lake.land()
    assert lake.view("public_accounts") == [_row(2, "x", 10), _row(3, "keep", 30)]

    # batch 2, not compacted yet: an older update of 1 (later batch), the delete of 2
    lake.write([
        t.event("u", _row(1, "late", 25), 250),
        t.event("d", _partial(2), 300),
        t.tombstone({"id": 2}),
    ])
    lake.land()
    assert lake.view("public_accounts") == [_row(3, "keep", 30)]

    lake.compact()
    assert lake.view("public_accounts") == [_row(3, "keep", 30)]
    # the last values known in source order, not the delete's "" / 0 fallbacks
    compacted = [
        _deleted(1, "late", 25, 300),
        _deleted(2, "x", 10, 300),
        _live(3, "keep", 30, "c", 100),
        _deleted(4, "older", 15, 200),
    ]
    assert _base(lake, "public_accounts") == compacted

    # batch 3, after compaction: older inserts/updates of every deleted key
    lake.write([
        t.event("c", _row(1, "ancient", 0), 50),  # older than the values the tombstone keeps
        t.event("u", _row(2, "older2", 11), 200),  # between 2's insert and its delete: now the last known
        t.event("c", _row(4, "four", 4), 100),  # redelivered insert
        t.event("r", _row(2, "snapshot", 9), 90),
    ])
    lake.land()
    assert lake.view("public_accounts") == [_row(3, "keep", 30)]
    lake.compact()
    assert lake.view("public_accounts") == [_row(3, "keep", 30)]
    compacted[1] = _deleted(2, "older2", 11, 300)
    assert _base(lake, "public_accounts") == compacted


def test_soft_deleted_values_do_not_depend_on_when_compaction_ran(lake):
    """The same events give the same soft-deleted row whether or not a compaction ran between the batches.

    Source order for key 1: c@100 'a', u@200 'b', u@250 'late' (delivered last), d@300. The last values
    known before the delete are those of u@250.
    """
    early, once = _topic("early"), _topic("once")
    for t in (early, once):
        lake.write([
            t.event("c", _row(1, "a", 1), 100),
            t.event("u", _row(1, "b", 2), 200),
            t.event("d", _partial(1), 300),
        ])
    lake.land()
    lake.compact("public_early")  # public_once stays uncompacted
    assert _base(lake, "public_early") == [_deleted(1, "b", 2, 300)]
    for t in (early, once):
        lake.write([t.event("u", _row(1, "late", 25), 250)])
    lake.land()
    lake.compact()
    assert lake.view("public_early") == lake.view("public_once") == []
    assert _base(lake, "public_once") == [_deleted(1, "late", 25, 300)]
    assert _base(lake, "public_early") == [_deleted(1, "late", 25, 300)]


def test_hard_mode_purges_tombstones(lake):
    lake.configure(
        defaults={"delete_mode": "hard", "tombstone_retention_hours": 0},
        # same mode, but a retention that has not run out: the tombstone stays and still guards the key
        tables={"public_kept": {"tombstone_retention_hours": 1000}},
    )
    hard, kept = _topic("hard"), _topic("kept")
    for t in (hard, kept):
        lake.write([
            t.event("c", _row(1, "gone", 1), 100), t.event("d", _partial(1), 200), t.tombstone({"id": 1}),
            t.event("c", _row(2, "stays", 2), 100),
            t.event("c", _row(3, "later gone", 3), 100), t.event("u", _row(3, "updated", 33), 200),
        ])
    lake.land()
    for table in ("public_hard", "public_kept"):
        assert lake.view(table) == [_row(2, "stays", 2), _row(3, "updated", 33)]
    lake.compact()
    for table in ("public_hard", "public_kept"):
        assert lake.view(table) == [_row(2, "stays", 2), _row(3, "updated", 33)]
    assert _base(lake, "public_hard") == [_live(2, "stays", 2, "c", 100), _live(3, "updated", 33, "u", 200)]
    assert _base(lake, "public_kept") == [
        _deleted(1, "gone", 1, 200), _live(2, "stays", 2, "c", 100), _live(3, "updated", 33, "u", 200),
    ]

    for t in (hard, kept):
        lake.write([t.event("d", _partial(3), 300), t.tombstone({"id": 3})])
    lake.write([kept.event("u", _row(1, "older", 15), 150)])  # older than the kept tombstone
    lake.land()
    for table in ("public_hard", "public_kept"):
        assert lake.view(table) == [_row(2, "stays", 2)]
    lake.compact()
    for table in ("public_hard", "public_kept"):
        assert lake.view(table) == [_row(2, "stays", 2)]
    assert _base(lake, "public_hard") == [_live(2, "stays", 2, "c", 100)]
    # the late update happened before the delete: its values are the last known, the key stays deleted
    assert _base(lake, "public_kept") == [
        _deleted(1, "older", 15, 200), _live(2, "stays", 2, "c", 100), _deleted(3, "updated", 33, 300),
    ]
