"""Snapshot reads (op r) are inserts; a truncate (op t) deletes every key whose position is lower (docs/design.md "Snapshot reads and truncates").

A truncate event has a null key and null before/after. Keys written after it survive; an older event that
arrives after it (in the same batch, a later one, or after compaction) stays truncated. A truncate of one
table leaves the other tables alone.
"""


import pytest

from lakecompact.lake.catalog import Catalog
from lakecompact.landing.increments import IncrementWriter
from lakecompact.views.status import print_status, status
from tests.support.crash import Crash, crash_once, killed_after
from tests.support.debezium import INT, TEXT, Topic
from tests.support.rows import base_reader, base_row_maker, row_maker

T = Topic("pg.public.stock", [("id", INT), ("name", TEXT)], ["id"])
OTHER = Topic("pg.public.other", [("id", INT), ("name", TEXT)], ["id"])
TABLE = "public_stock"
SNAPSHOT_LSN = 50


_row = row_maker("id", "name")
_base = base_reader(TABLE, "id", "name", "__op", "__deleted", "__position")
_live = base_row_maker("id", "name")  # (id, name, op, position): not deleted


def _truncated(lake):
    """The keys that the base holds as deleted, and the truncate marker(s) it keeps."""
    deleted = sorted(r["id"] for r in lake.base(TABLE) if r["__deleted"])
    markers = lake.rows(f"SELECT __op, __position, __deleted FROM `{lake.database}`.`{TABLE}_base` WHERE __op = 't'")
    return deleted, markers


def test_snapshot_reads_are_inserts_and_truncate_deletes_older_keys(lake):
    lake.write([
        *(T.event("r", _row(i, f"snap {i}"), SNAPSHOT_LSN) for i in (1, 2, 3, 4)),
        T.event("u", _row(2, "two updated"), 100),
        OTHER.event("c", _row(1, "other table"), 100),
        OTHER.event("r", _row(2, "other snapshot"), SNAPSHOT_LSN),
    ])
    lake.land()
    snapshot = [_row(1, "snap 1"), _row(2, "two updated"), _row(3, "snap 3"), _row(4, "snap 4")]
    assert lake.view(TABLE) == snapshot
    lake.compact()
    assert lake.view(TABLE) == snapshot
    assert _base(lake) == [
        _live(1, "snap 1", "r", 50), _live(2, "two updated", "u", 100), _live(3, "snap 3", "r", 50),
        _live(4, "snap 4", "r", 50),
    ]

    truncate = T.event("t", None, 200)
    assert truncate["key"] is None and '"before":null,"after":null' in truncate["payload"]
    lake.write([
        T.event("u", _row(1, "one before truncate"), 150),
        truncate,
        T.event("c", _row(5, "five"), 300),
        T.event("c", _row(3, "three again"), 250),
        T.event("u", _row(4, "older, arrives after the truncate"), 180),
    ])
    lake.land()
    after_truncate = [_row(3, "three again"), _row(5, "five")]
    assert lake.view(TABLE) == after_truncate
    lake.compact()
    assert lake.view(TABLE) == after_truncate
    assert [r for r in _base(lake) if not r["__deleted"]] == [
        _live(3, "three again", "c", 250), _live(5, "five", "c", 300),
    ]
    assert _truncated(lake) == ([1, 2, 4], [{"__op": "t", "__position": 200, "__deleted": True}])
    assert lake.view("public_other") == [_row(1, "other table"), _row(2, "other snapshot")]

    # after compaction: older events of truncated keys, a late snapshot read of a new key, new writes
    lake.write([
        T.event("u", _row(1, "late update"), 150),
        T.event("u", _row(2, "late update"), 120),
        T.event("r", _row(6, "late snapshot read"), SNAPSHOT_LSN),
        T.event("c", _row(7, "seven"), 400),
        T.event("u", _row(5, "five updated"), 350),
        T.event("c", _row(8, "late insert"), 199),
    ])
    lake.land()
    final = [_row(3, "three again"), _row(5, "five updated"), _row(7, "seven")]
    assert lake.view(TABLE) == final
    lake.compact()
    assert lake.view(TABLE) == final
    assert [r for r in _base(lake) if not r["__deleted"]] == [
        _live(3, "three again", "c", 250), _live(5, "five updated", "u", 350), _live(7, "seven", "c", 400),
    ]
    assert _truncated(lake) == ([1, 2, 4, 6, 8], [{"__op": "t", "__position": 200, "__deleted": True}])
    assert lake.view("public_other") == [_row(1, "other table"), _row(2, "other snapshot")]


def test_truncated_key_stays_deleted_in_the_base_when_compacted_without_the_marker_bucket(lake):
    """With 4 buckets the truncate marker (null key) is in bucket 2; keys 1 and 4 hash to buckets 1 and 0."""
    lake.write([T.event("c", _row(1, "one"), 100), T.event("c", _row(4, "four"), 100), T.event("t", None, 200),
                T.event("c", _row(3, "three"), 300)])
    lake.land()
    lake.compact()
    assert lake.view(TABLE) == [_row(3, "three")]
    assert _truncated(lake) == ([1, 4], [{"__op": "t", "__position": 200, "__deleted": True}])
    lake.write([T.event("u", _row(1, "late update"), 150), T.event("c", _row(4, "late insert"), 199)])
    lake.land()
    assert lake.view(TABLE) == [_row(3, "three")]
    lake.compact()
    assert lake.view(TABLE) == [_row(3, "three")]
    assert _truncated(lake) == ([1, 4], [{"__op": "t", "__position": 200, "__deleted": True}])


def _increment_ops(lake) -> list[tuple[str, int]]:
    return sorted((r["__op"], r["__position"]) for r in lake.rows(
        f"SELECT __op, __position FROM `{lake.database}`.`{TABLE}_increments`"))


def _held_folders(lake) -> list[str]:
    return [folder.rsplit("/", 1)[-1] for folder in Catalog(lake.spark, lake.config).held_truncates(TABLE)]


def test_a_truncate_alone_in_a_new_tables_first_batch_keeps_the_tables_key(lake, capsys):
    """A truncate carries no key: the table waits for an event that shows it, and the truncate lands with it."""
    lake.write([T.event("t", None, 200)], name="part-0.jsonl")
    held = lake.land()
    assert (held.events_in, held.rows_out, held.held, held.skipped, held.quarantined) == (1, {}, {TABLE: 1}, 0, {})
    assert Catalog(lake.spark, lake.config).tables() == [] and _held_folders(lake) == ["batch=1"]
    lake.write([T.event("t", None, 250)], name="part-1.jsonl")
    assert lake.land().held == {TABLE: 1}
    assert [(r["table"], r["held_truncates"], r["quarantined"]) for r in status(None, lake.config)] == [
        (f"{lake.database}.{TABLE}", 2, 0)]
    print_status(status(None, lake.config))
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{lake.database}.{TABLE}: 2 truncate(s) held (no table yet: its key is known once an event other than a "
        "truncate comes)")
    lake.write([T.event("c", _row(1, "older than the truncate"), 150), T.event("c", _row(2, "two"), 300),
                T.event("u", _row(2, "two updated"), 310)], name="part-2.jsonl")
    landed = lake.land()
    assert (landed.events_in, landed.rows_out, landed.held, landed.held_landed) == (3, {TABLE: 5}, {}, {TABLE: 2})
    assert Catalog(lake.spark, lake.config).require(TABLE).key == ("id",)
    assert lake.view(TABLE) == [_row(2, "two updated")]
    assert _increment_ops(lake) == [("c", 150), ("c", 300), ("t", 200), ("t", 250), ("u", 310)]
    assert _held_folders(lake) == []
    lake.compact()
    assert lake.view(TABLE) == [_row(2, "two updated")]


def test_a_keyless_tables_first_truncate_is_held_until_its_rows_show_it_has_no_key(lake):
    keyless = Topic(T.name, T.columns, None)
    lake.write([keyless.event("t", None, 200)], name="part-0.jsonl")
    assert lake.land().held == {TABLE: 1}
    lake.write([keyless.event("c", _row(1, "older than the truncate"), 150),
                keyless.event("c", _row(2, "two"), 300)], name="part-1.jsonl")
    assert lake.land().held_landed == {TABLE: 1}
    assert Catalog(lake.spark, lake.config).require(TABLE).key == ()
    assert lake.view(TABLE) == [_row(2, "two")]


def test_a_table_whose_keys_are_no_json_objects_is_not_held_but_keyless_as_before(lake):
    """A key that names no columns (a string converter's `Struct{id=1}`) is no truncate: the table is made."""
    events = [T.event("c", _row(1, "one"), 100), T.event("t", None, 200), T.event("c", _row(2, "two"), 300)]
    lake.write([{**e, "key": f"Struct{{id={n}}}"} if e["key"] else e for n, e in enumerate(events)])
    landed = lake.land()
    assert (landed.held, landed.rows_out) == ({}, {TABLE: 3})
    assert Catalog(lake.spark, lake.config).require(TABLE).key == ()
    assert lake.view(TABLE) == [_row(2, "two")]


@pytest.mark.parametrize("killed", [None, "increments-written"])
def test_a_truncate_on_one_shard_lands_with_the_rows_another_shard_makes_its_table_with(lake, monkeypatch, killed):
    """Two topics of one table (a sharded source) in one batch: the first holds only a truncate, the second makes
    the table; the truncate lands once with the rows, also when the batch dies and runs again."""
    one, two = Topic("s1.public.stock", T.columns, ["id"]), Topic("s2.public.stock", T.columns, ["id"])
    lake.write([one.event("t", None, 200), two.event("c", _row(1, "older than the truncate"), 150),
                two.event("c", _row(2, "two"), 300)])
    if killed:
        with killed_after(monkeypatch, killed):
            lake.land()
    landed = lake.land()
    assert (landed.events_in, landed.rows_out, landed.held, landed.held_landed) == (3, {TABLE: 3}, {}, {})
    assert _increment_ops(lake) == [("c", 150), ("c", 300), ("t", 200)] and _held_folders(lake) == []
    assert lake.view(TABLE) == [_row(2, "two")]


def test_held_truncates_land_when_the_batch_that_made_the_table_dies_before_its_increment(lake, monkeypatch):
    lake.write([T.event("t", None, 200)], name="part-0.jsonl")
    lake.land()
    lake.write([T.event("c", _row(1, "older than the truncate"), 150), T.event("c", _row(2, "two"), 300)],
               name="part-1.jsonl")
    crash_once(monkeypatch, IncrementWriter, "write_rows")
    with pytest.raises(Crash):
        lake.land()
    assert TABLE in Catalog(lake.spark, lake.config).tables()  # made by the attempt that died
    assert lake.land().held_landed == {TABLE: 1}
    assert _increment_ops(lake) == [("c", 150), ("c", 300), ("t", 200)] and _held_folders(lake) == []
    assert lake.view(TABLE) == [_row(2, "two")]


@pytest.mark.parametrize("step", ["increments-written", "partitions-added", "offsets-recorded"])
def test_held_truncates_land_once_whatever_step_the_batch_that_takes_them_dies_after(lake, monkeypatch, step):
    lake.write([T.event("t", None, 200)], name="part-0.jsonl")
    lake.land()
    lake.write([T.event("c", _row(1, "older than the truncate"), 150), T.event("c", _row(2, "two"), 300)],
               name="part-1.jsonl")
    with killed_after(monkeypatch, step):
        lake.land()
    lake.land()
    lake.write([T.event("c", _row(3, "three"), 400)], name="part-2.jsonl")
    lake.land()
    assert _increment_ops(lake) == [("c", 150), ("c", 300), ("c", 400), ("t", 200)]
    assert _held_folders(lake) == []
    assert lake.view(TABLE) == [_row(2, "two"), _row(3, "three")]
