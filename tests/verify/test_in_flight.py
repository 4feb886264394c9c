"""verify while the source moves (docs/design.md "Verify"): the source's log position as the lake's `__position`
counts it, each key's latest event in the lake, and a difference whose key the lake changed after the read began
told apart from one that stays."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import functions as F

from lakecompact.landing.decode import _position_meta
from lakecompact.verify.position import from_binlog, from_lsn
from lakecompact.verify.verify import (
    appended_in_flight_marked,
    comparable_rows,
    compared_buckets,
    differences_of,
    in_flight_marked,
    latest_positions,
)

EVENTS = "id INT, __position DECIMAL(38,0), __op STRING"


def test_a_wal_lsn_is_its_two_halves():
    assert from_lsn("16/B374D848").value == (0x16 << 32) + 0xB374D848
    assert from_lsn("0/0").value == 0 and from_lsn("1/0").value > from_lsn("0/FFFFFFFF").value


def test_a_binlog_position_compares_with_the_positions_landing_gives_its_events(spark):
    """Packed as decode.py packs an event's: an event at the offset SHOW MASTER STATUS gave, or in a later file,
    is at or past it; an event before it is not."""
    events = spark.createDataFrame(
        [("mysql-bin.000003", 154, 0), ("mysql-bin.000003", 154, 2), ("mysql-bin.000003", 153, 9),
         ("mysql-bin.000004", 4, 0), ("mysql-bin.000002", 99_999, 0)], "file STRING, pos BIGINT, row INT")
    meta = _position_meta(op=F.lit("u"), ts_ms=F.lit(0), ts_fine=F.lit(0), ts_us=F.lit(0),
                          lsn=F.lit(None).cast("bigint"), file=F.col("file"), pos=F.col("pos"), row=F.col("row"))
    landed = [row["p"] for row in events.select(meta["__position"].alias("p")).collect()]
    at = from_binlog("mysql-bin.000003", 154)
    assert at.text == "mysql-bin.000003:154"
    assert [p >= at.value for p in landed] == [True, True, False, True, False]
    assert landed[0] == Decimal(at.value)


def test_each_keys_latest_event_counts_tombstones_and_truncates(spark):
    base = spark.createDataFrame([(1, Decimal(10), "r"), (2, Decimal(20), "u"), (3, Decimal(30), "d")], EVENTS)
    increments = spark.createDataFrame([(2, Decimal(50), "u"), (4, Decimal(60), "c")], EVENTS)
    keys = spark.createDataFrame([('["1"]',), ('["2"]',), ('["3"]',), ('["4"]',), ('["5"]',)], "__key STRING")

    def latest(incr, named):
        rows = latest_positions(spark, base, incr, [("id", "text")], named).collect()
        return {r["__key"]: r["__position"] for r in rows} if named is not None else rows[0]["__position"]

    assert latest(increments, keys) == {'["1"]': 10, '["2"]': 50, '["3"]': 30, '["4"]': 60, '["5"]': None}
    assert latest(increments, None) == 60
    truncated = increments.union(spark.createDataFrame([(None, Decimal(55), "t")], EVENTS))
    # key 5 has no event left (the truncate compacted away its rows): the truncate still moved it
    assert latest(truncated, keys) == {'["1"]': 55, '["2"]': 55, '["3"]': 55, '["4"]': 60, '["5"]': 55}


def test_a_composite_keys_text_is_the_one_verify_compares_by(spark):
    """The key of a position is written as verify_rows.sql.j2 writes `__key`: in the key's order, each value as
    verify's text (a timestamp to the microsecond, a decimal without trailing zeros)."""
    import datetime as dt

    schema = "region STRING, at TIMESTAMP, amount DECIMAL(10,2), note STRING"
    rows = spark.createDataFrame([("eu", dt.datetime(2026, 11, 29, 1, 2, 3, 450000), Decimal("12.50"), "x")], schema)
    kinds = [("at", "timestamp"), ("region", "text"), ("amount", "decimal")]  # the key's order, not the columns'
    written = comparable_rows(spark, rows, [*kinds, ("note", "text")], ["at", "region", "amount"], 4).first()["__key"]
    events = rows.withColumn("__position", F.lit(Decimal(7))).withColumn("__op", F.lit("u"))
    keys = spark.createDataFrame([(written,)], "__key STRING")
    found = latest_positions(spark, events, events.limit(0), kinds, keys).collect()
    assert [(r["__key"], r["__position"]) for r in found] == [(written, 7)]
    assert written == '["2026-11-29 01:02:03.450000","eu","12.5"]'


def test_a_key_the_lake_changed_after_the_read_began_is_in_flight_and_one_that_stays_is_not(spark):
    """Read from position 100 on: the lake then lacked key 5's update (it lands by the recheck: equal, gone),
    key 6 differs and its last event is older than the read (divergent), key 7 changed again once the read
    began (at its first position: in flight), key 20 was inserted after the read (in flight)."""
    schema = "id INT, note STRING"
    source = spark.createDataFrame([(i, f"n{i}") for i in range(20)] + [(5, "new")], schema).where("note <> 'n5'")
    lake_then = spark.createDataFrame([(i, f"n{i}") for i in range(20) if i != 6] + [(6, "damaged")], schema)
    lake_now = (lake_then.where("id NOT IN (5, 7)")
                .union(spark.createDataFrame([(5, "new"), (7, "newer"), (20, "inserted")], schema)))
    positions = spark.createDataFrame([('["6"]', Decimal(40)), ('["7"]', Decimal(100)), ('["20"]', Decimal(130))],
                                      "__key STRING, __position DECIMAL(38,0)")  # 7: at the read's first position

    comparison = compared_buckets(spark, source, lake_then, table="t", key=["id"], buckets=1)  # 20's bucket too
    assert comparison.differing == [0]
    marked = in_flight_marked(differences_of(spark, comparison, lake_now), positions, 100)
    found = {(r["kind"], r["key"], r["in_flight"]) for r in marked.collect()}
    assert found == {("different values", '["6"]', False), ("different values", '["7"]', True),
                     ("extra in the lake", '["20"]', True)}


def test_a_keyless_tables_rows_landed_while_it_was_read_are_in_flight(spark):
    """Appended only: rows the lake landed between the read's first and last position are in flight when the
    source read lacks them; a row the lake landed before the read but the source lacks, or a source row the lake
    lacks once it landed past the read, differs."""
    schema = "seq INT, kind STRING"
    source = spark.createDataFrame([(i, "old") for i in range(8)] + [(8, "during")], schema)
    lake_then = spark.createDataFrame([(i, "old") for i in range(8) if i != 3] + [(50, "lost delete")], schema)
    lake_now = spark.createDataFrame(
        [(i, "old", Decimal(10)) for i in range(8) if i != 3] + [(50, "lost delete", Decimal(20)),
                                                                  (8, "during", Decimal(105)), (9, "during", Decimal(100)),
                                                                  (10, "after", Decimal(300))],
        schema + ", __position DECIMAL(38,0)")
    comparison = compared_buckets(spark, source, lake_then, table="t", key=[], buckets=1)
    marked = appended_in_flight_marked(spark, comparison, lake_now, 100, 200)
    found = sorted((r["kind"], r["source_row"] or r["lake_row"], r["in_flight"]) for r in marked.collect())
    assert found == [("extra in the lake", '{"seq":"50","kind":"lost delete"}', False),
                     ("extra in the lake", '{"seq":"9","kind":"during"}', True),
                     ("missing in the lake", '{"seq":"3","kind":"old"}', False)]
