"""A table whose events have no key is append-only: every event is a row (docs/design.md "Keys and keyless tables").

MySQL emits updates and deletes for a table without a primary key; their events have a null Kafka key and
no key schema. Every event is kept once: a redelivered event (same position, op and row) collapses into the
row already there, whether it arrives in the same batch, a later one, or after compaction. Deletes are kept
in the base but not shown by the view.
"""


from lakecompact.lake.catalog import Catalog
from tests.support.debezium import INT, MICRO_TS, TEXT, Topic
from tests.support.rows import base_reader, picked, row_maker

T = Topic("my.inventory.audit", [("msg", TEXT), ("amount", INT)], None, connector="mysql")
TABLE = "inventory_audit"
FILE = "mysql-bin.000001"


_row = row_maker("msg", "amount")


def _ev(op, msg, amount, pos, row=0, before=None):
    return T.event(op, _row(msg, amount), (FILE, pos, row), before=before)


EVENTS = {
    1: ("c", "a", 1, 100),
    2: ("c", "b", 2, 200),
    3: ("c", "a", 1, 300),  # same values as 1, another event: both are rows
    4: ("u", "c", 3, 400, 0, _row("b", 2)),
    5: ("d", "a", 1, 500),
    6: ("c", "x", 6, 600, 0),
    7: ("c", "x", 6, 600, 1),  # the next row of the same binlog event
    8: ("c", "e", 8, 800),
}


def events(*numbers):
    """The numbered events, each time as a new delivery (new Kafka offsets, same positions)."""
    return [_ev(*EVENTS[n]) for n in numbers]


def _shown(msg, amount, op, pos, row=0):
    return {"msg": msg, "amount": amount, "__op": op, "__binlog_pos": pos, "__binlog_row": row}


VIEW_1 = [
    _shown("a", 1, "c", 100), _shown("b", 2, "c", 200), _shown("a", 1, "c", 300), _shown("c", 3, "u", 400),
    _shown("x", 6, "c", 600, 0), _shown("x", 6, "c", 600, 1),
]
VIEW_2 = VIEW_1 + [_shown("e", 8, "c", 800)]


def _sorted(rows):
    return sorted(rows, key=lambda r: (r["__binlog_pos"], r["__binlog_row"], r["__op"]))


def _view(lake):
    return _sorted(picked(lake.view(TABLE, meta=True), ("msg", "amount", "__op", "__binlog_pos", "__binlog_row")))


_base_rows = base_reader(TABLE, "msg", "amount", "__op", "__binlog_pos", "__binlog_row", "__deleted")


def _base(lake):
    return _sorted(_base_rows(lake))


def _with_deleted(rows):
    return _sorted([{**r, "__deleted": False} for r in rows] + [{**_shown("a", 1, "d", 500), "__deleted": True}])


def test_keyless_events_are_appended_once(lake):
    lake.write(events(1, 2, 2, 3, 4, 5, 6, 7))
    lake.land()
    assert Catalog(lake.spark, lake.config).require(TABLE).key == ()  # no key: append-only
    assert _view(lake) == VIEW_1
    lake.compact()
    assert _view(lake) == VIEW_1
    assert _base(lake) == _with_deleted(VIEW_1)
    lake.compact()  # nothing pending: nothing changes
    assert _base(lake) == _with_deleted(VIEW_1)

    lake.write(events(1, 4, 5, 8, 8))  # redelivered after compaction, plus one new event
    lake.land()
    assert _view(lake) == VIEW_2


def test_redelivered_keyless_events_stay_once_after_compaction(lake):
    lake.write(events(1, 2, 2, 3, 4, 5, 6, 7))
    lake.land()
    lake.compact()
    assert _base(lake) == _with_deleted(VIEW_1)
    lake.write(events(1, 4, 5, 8, 8))  # redelivered after compaction, plus one new event
    lake.land()
    assert _view(lake) == VIEW_2
    lake.compact()
    assert _view(lake) == VIEW_2
    assert _base(lake) == _with_deleted(VIEW_2)

    lake.write(events(2, 6, 7, 8))  # only redeliveries
    lake.land()
    assert _view(lake) == VIEW_2
    lake.compact()
    assert _view(lake) == VIEW_2
    assert _base(lake) == _with_deleted(VIEW_2)


def test_keyless_rows_that_differ_below_the_millisecond_are_two_rows(lake):
    """A snapshot gives every row the same binlog position, so a keyless table's rows are told apart by their
    values: two log rows written within one millisecond are two rows, in the view and after compaction (as
    JSON text Spark writes timestamps to the millisecond unless told otherwise)."""
    log = Topic("my.inventory.log", [("at", MICRO_TS), ("kind", TEXT)], None, connector="mysql")
    table = "inventory_log"
    at = 1_700_000_000_123_000  # microseconds: .123000, .123456 and .123789 share their millisecond
    lines = [log.event("r", {"at": at + micros, "kind": "tick"}, (FILE, 4, 0)) for micros in (0, 456, 789)]
    lake.write(lines + lines[1:2])  # the middle one delivered twice: still one row

    def rows(relation=table, where="TRUE"):  # microseconds past the second (the rows' JSON stops at milliseconds)
        return sorted(r["us"] for r in lake.rows(
            f"SELECT unix_micros(at) % 1000000 AS us FROM `{lake.database}`.`{relation}` WHERE {where}"))

    lake.land()
    assert rows() == [123000, 123456, 123789]
    lake.compact()
    assert rows() == [123000, 123456, 123789]
    assert rows(f"{table}_base", "__op <> 't'") == [123000, 123456, 123789]
    lake.write(lines)  # redelivered after compaction
    lake.land()
    assert rows() == [123000, 123456, 123789]
