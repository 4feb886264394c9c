"""The change feed (RFC-51): net and event granularity, replay, and consistency across rollback."""

from __future__ import annotations

import pytest

from lakecompact.compaction import compact
from tests.support.debezium import DOUBLE, INT, MICRO_TS, PLACEHOLDER, TEXT, Topic
from tests.support.rows import row_maker

COLUMNS = [("id", INT), ("note", TEXT), ("qty", INT)]


_row = row_maker("id", "note", "qty")


def _history(topic):
    """Two windows of events; the comments say what each window changes."""
    first = [
        topic.event("c", _row(1, "one", 1), 100),
        topic.event("c", _row(2, "two", 2), 110),
        topic.event("c", _row(3, "three", 3), 120),
        topic.event("u", _row(1, "one", 10), 130),
        topic.event("u", _row(6, PLACEHOLDER, 6), 150),       # TOAST with nothing known yet: note unknown
    ]
    second = [
        topic.event("u", _row(1, PLACEHOLDER, 11), 200),      # TOAST: note stays "one"
        topic.event("d", _row(2, "", 0), 210),                 # delete
        topic.event("c", _row(4, "four", 4), 220),             # insert then delete in one window
        topic.event("d", _row(4, "", 0), 230),
        topic.event("c", _row(5, "five", 5), 240),             # insert
        topic.event("u", _row(3, "three", 3), 120 - 1),        # late: older than the base row, discarded
        topic.event("c", _row(1, "one", 1), 100),              # duplicate of an applied event, discarded
        topic.event("c", _row(6, "six", 5), 140),              # late, but it knows the note: repairs key 6
        topic.event("u", _row(6, PLACEHOLDER, 7), 250),
    ]
    return first, second


def _feed(lake, table):
    rows = lake.rows(f"SELECT op, before, after, key, __version, __seq FROM {lake.database}.{table}_changes "
                     f"ORDER BY __version, __seq")
    return [(r["__version"], r["op"], r.get("key", {}).get("id"), r.get("before"), r.get("after")) for r in rows]


@pytest.mark.parametrize("events_per_file", [None, 2], ids=["one file", "many files"])
def test_net_and_event_feeds(lake, monkeypatch, events_per_file):
    if events_per_file:  # a big change's feed: numbered and written in range partitions, one file each
        monkeypatch.setattr(compact, "FEED_EVENTS_PER_FILE", events_per_file)
    net, events = Topic("pg.public.net", COLUMNS, ["id"]), Topic("pg.public.ev", COLUMNS, ["id"])
    lake.configure(tables={"public_ev": {"change_feed": "events"}})
    (net1, net2), (ev1, ev2) = _history(net), _history(events)
    lake.write(net1 + ev1)
    lake.land()
    lake.compact()
    lake.write(net2 + ev2)
    lake.land()
    lake.compact()

    # in source order within a version
    assert _feed(lake, "public_net") == [
        (1, "i", 2, None, _row(2, "two", 2)),
        (1, "i", 3, None, _row(3, "three", 3)),
        (1, "i", 1, None, _row(1, "one", 10)),
        (1, "i", 6, None, {"id": 6, "qty": 6}),
        (2, "u", 1, _row(1, "one", 10), _row(1, "one", 11)),
        (2, "d", 2, _row(2, "two", 2), None),
        (2, "i", 5, None, _row(5, "five", 5)),
        (2, "u", 6, {"id": 6, "qty": 6}, _row(6, "six", 7)),
    ]
    assert _feed(lake, "public_ev") == [
        (1, "i", 1, None, _row(1, "one", 1)),
        (1, "i", 2, None, _row(2, "two", 2)),
        (1, "i", 3, None, _row(3, "three", 3)),
        (1, "u", 1, _row(1, "one", 1), _row(1, "one", 10)),
        (1, "i", 6, None, {"id": 6, "qty": 6}),
        # the late insert of key 6 is not an event of version 2, but its note repairs the row first
        (2, "u", 6, {"id": 6, "qty": 6}, _row(6, "six", 6)),
        (2, "u", 1, _row(1, "one", 10), _row(1, "one", 11)),
        (2, "d", 2, _row(2, "two", 2), None),
        (2, "i", 4, None, _row(4, "four", 4)),
        (2, "d", 4, _row(4, "four", 4), None),
        (2, "i", 5, None, _row(5, "five", 5)),
        (2, "u", 6, _row(6, "six", 6), _row(6, "six", 7)),
    ]
    files = list((lake.tmp / "warehouse").glob(f"{lake.database}/public_ev/**/v=2/*.parquet"))
    assert len(files) > 1 if events_per_file else len(files) == 1  # 9 events: 5 range partitions, some may be empty

    # replaying the net feed from version 0 onto an empty table gives the current base
    replayed = {}
    for _, op, key, _, after in _feed(lake, "public_net"):
        if op == "d":
            replayed.pop(key)
        else:
            replayed[key] = after
    live = {r["id"]: r for r in lake.view("public_net")}
    assert replayed == live

    # rollback removes the version's feed; compacting again writes the same changes once, under a new number
    rolled_back = [change[1:] for change in _feed(lake, "public_net") if change[0] == 2]
    lake.rollback("public_net")
    assert {v for v, *_ in _feed(lake, "public_net")} == {1}
    lake.compact("public_net")
    feed = _feed(lake, "public_net")
    assert {v for v, *_ in feed} == {1, 3} and [change[1:] for change in feed if change[0] == 3] == rolled_back


def test_a_structured_stream_tails_the_feed(lake, tmp_path):
    """The streaming recipe of docs/change-feed.md: each run picks up the versions committed since the last one, once."""
    from lakecompact.lake.catalog import Catalog

    topic = Topic("pg.public.tail", COLUMNS, ["id"])
    first, second = _history(topic)
    changes = Catalog(lake.spark, lake.config).paths("public_tail").changes(0).rsplit("/", 1)[0]
    schema = None
    seen = []

    def run_stream():
        nonlocal schema
        schema = schema or lake.spark.read.parquet(changes).schema
        got = []

        def take(frame, _batch_id):
            got.extend((r.v, r.op, r.id) for r in frame.orderBy("v", "__seq").select("v", "op", "key.id").collect())

        stream = (lake.spark.readStream.schema(schema).parquet(changes)
                  .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
                  .trigger(availableNow=True).foreachBatch(take).start())
        stream.awaitTermination(300)
        assert stream.exception() is None, stream.exception()
        return got

    for events in (first, second):
        lake.write(events)
        lake.land()
        lake.compact()
        seen.append(run_stream())
    assert seen == [
        [(1, "i", 2), (1, "i", 3), (1, "i", 1), (1, "i", 6)],
        [(2, "u", 1), (2, "d", 2), (2, "i", 5), (2, "u", 6)],
    ]


def test_values_from_before_a_truncate_never_fill_values_after_it(lake):
    """A TOAST placeholder after a truncate has no earlier value to keep: in the view, the base and the feeds."""
    net, events = Topic("pg.public.tnet", COLUMNS, ["id"]), Topic("pg.public.tev", COLUMNS, ["id"])
    lake.configure(tables={"public_tev": {"change_feed": "events"}})

    def both(make):
        return make(net) + make(events)

    lake.write(both(lambda t: [t.event("c", _row(1, "old", 1), 5), t.event("t", None, 7)]))
    lake.land()
    lake.compact()
    lake.write(both(lambda t: [t.event("u", _row(1, PLACEHOLDER, 2), 10)]))  # truncate in an earlier version
    lake.land()
    lake.compact()
    lake.write(both(lambda t: [t.event("c", _row(2, "two", 2), 20), t.event("t", None, 25),
                               t.event("u", _row(2, PLACEHOLDER, 3), 30)]))  # truncate in the same version
    lake.land()
    lake.compact()

    for table in ("public_tnet", "public_tev"):
        assert lake.view(table, order="id") == [{"id": 2, "qty": 3}], table
    assert _feed(lake, "public_tev") == [
        (1, "i", 1, None, _row(1, "old", 1)),
        (1, "d", 1, _row(1, "old", 1), None),
        (2, "i", 1, None, {"id": 1, "qty": 2}),
        (3, "i", 2, None, _row(2, "two", 2)),
        (3, "d", 1, {"id": 1, "qty": 2}, None),
        (3, "d", 2, _row(2, "two", 2), None),
        (3, "i", 2, None, {"id": 2, "qty": 3}),
    ]
    assert _feed(lake, "public_tnet") == [
        (2, "i", 1, None, {"id": 1, "qty": 2}),
        (3, "d", 1, {"id": 1, "qty": 2}, None),
        (3, "i", 2, None, {"id": 2, "qty": 3}),
    ]


@pytest.mark.parametrize("extra", [[], [("ratio", DOUBLE)]], ids=["images as structs", "images as JSON (a double)"])
def test_an_update_of_a_timestamps_microseconds_is_in_the_net_feed(lake, extra):
    """The net feed leaves out a key whose images are equal, told apart by the finest value: a timestamp changed in
    its microseconds only is an update; an update that changes nothing is none. Images compare as structs, or, in a
    table with a double column (0.0 = -0.0), as JSON texts, whose timestamps then need their microseconds (Spark's
    default text stops at milliseconds). The event feed has every applied event either way."""
    columns = [("id", INT), ("at", MICRO_TS), *extra]
    net, events = Topic("pg.public.tsnet", columns, ["id"]), Topic("pg.public.tsev", columns, ["id"])
    lake.configure(tables={"public_tsev": {"change_feed": "events"}})

    def row(key, micros):
        return {"id": key, "at": 1_700_000_000_000_000 + micros, **({"ratio": 0.5} if extra else {})}

    lake.write([topic.event("c", row(k, 0), 100 + k) for topic in (net, events) for k in (1, 2)])
    lake.land()
    lake.compact()
    lake.write([topic.event("u", change, position) for topic in (net, events)
                for change, position in ((row(1, 7), 200), (row(2, 0), 210))])  # 7 microseconds later; nothing
    lake.land()
    lake.compact()
    changed = {table: [(op, key) for version, op, key, *_ in _feed(lake, table) if version == 2]
               for table in ("public_tsnet", "public_tsev")}
    assert changed == {"public_tsnet": [("u", 1)], "public_tsev": [("u", 1), ("u", 2)]}


def test_keys_that_differ_below_the_millisecond_keep_their_order_in_the_net_feed(lake):
    """The net feed is in source order, and within one position (a snapshot's rows share it) in key order, keys
    compared to the microsecond: a timestamp key's text stops at milliseconds unless told otherwise, which made
    such keys tie (and come in the order they arrived)."""
    topic = Topic("pg.public.tskey", [("at", MICRO_TS), ("note", TEXT)], ["at"])
    at = 1_700_000_000_123_000
    lake.write([topic.event("r", {"at": at + micros, "note": str(micros)}, 100) for micros in (789, 456, 0)])
    lake.land()
    lake.compact()
    rows = lake.rows(f"SELECT after.note AS note FROM {lake.database}.public_tskey_changes ORDER BY __seq")
    assert [r["note"] for r in rows] == ["0", "456", "789"]
