"""Reading the lake. The view reads the pending increments once per query: Spark would otherwise inline the
`increments` CTE into each of its references, list `<t>_increments`' partitions in the metastore for each copy, and
a batch landed between two listings could reach some references and not others. `sql` and `changes` print the
rows as stored."""

from __future__ import annotations

import io
import json
from pathlib import Path

from lakecompact.views.read import print_changes, run_sql
from tests.support.debezium import INT, MICRO_TS, TEXT, Topic

T = Topic("pg.public.readers", [("id", INT), ("name", TEXT)], ["id"])
TABLE = "public_readers"


def test_the_view_reads_the_pending_increments_once_per_query(lake):
    lake.write([T.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in range(1, 5)])
    lake.land()
    lake.compact()
    lake.write([T.event("u", {"id": 1, "name": "one"}, 200), T.event("d", {"id": 2, "name": ""}, 210),
                T.tombstone({"id": 2})], name="b2.jsonl")
    lake.land()
    lake.write([T.event("c", {"id": 9, "name": "nine"}, 300), T.event("u", {"id": 3, "name": "three"}, 310)],
               name="b3.jsonl")
    lake.land()  # two batches pending over a compacted base

    assert lake.view(TABLE) == [{"id": 1, "name": "one"}, {"id": 3, "name": "three"}, {"id": 4, "name": "n4"},
                                {"id": 9, "name": "nine"}]
    # each copy of the CTE would list the table's partitions again: 2 pending batches, fetched once; and the
    # base's 4 bucket partitions, fetched once to find its merge-on-read deltas (`__bucket >= 1000000`: the
    # embedded metastore filters integer partition values after fetching them)
    metrics = lake.spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics
    before = metrics.METRIC_PARTITIONS_FETCHED().getCount()
    lake.spark.table(f"`{lake.database}`.`{TABLE}`")._jdf.queryExecution().executedPlan()
    assert metrics.METRIC_PARTITIONS_FETCHED().getCount() - before == 2 + 4


def test_a_view_made_by_an_earlier_version_is_created_again_at_the_next_land(lake):
    lake.write([T.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in range(1, 4)])
    lake.land()
    view = f"`{lake.database}`.`{TABLE}`"
    # what an earlier lakecompact left: another view text, and no note of which SQL it was made with
    lake.spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT 0 AS id, 'stale' AS name")
    record = Path(lake.tmp, "warehouse", lake.database, TABLE, "_state", "view.json")
    record.unlink()
    assert lake.view(TABLE) == [{"id": 0, "name": "stale"}]

    assert lake.land().batch is None  # nothing new to land, and still the view is brought up to date

    assert lake.view(TABLE) == [{"id": 1, "name": "n1"}, {"id": 2, "name": "n2"}, {"id": 3, "name": "n3"}]
    assert record.exists()
    # once in line with this version's SQL, a land leaves the view alone
    lake.spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT 0 AS id, 'kept' AS name")
    lake.write([T.event("u", {"id": 3, "name": "three"}, 300)], name="b3.jsonl")
    lake.land()
    assert lake.view(TABLE) == [{"id": 0, "name": "kept"}]


def test_sql_and_changes_print_timestamps_to_the_microsecond(lake):
    """`lakecompact sql` and `lakecompact changes` print what is stored: a timestamp's microseconds too (Spark's JSON
    text stops at milliseconds unless told otherwise)."""
    topic = Topic("pg.public.ticks", [("id", INT), ("at", MICRO_TS)], ["id"])
    lake.write([topic.event("c", {"id": 1, "at": 1_700_000_000_123_456}, 100)])
    lake.land()
    lake.compact()
    printed = io.StringIO()
    assert run_sql(lake.spark, lake.config, "SELECT id, at FROM public_ticks", out=printed) == 1
    assert [json.loads(line) for line in printed.getvalue().splitlines()] == [
        {"id": 1, "at": "2023-11-14T22:13:20.123456Z"}]
    printed = io.StringIO()
    assert print_changes(lake.spark, lake.config, "public_ticks", 1, None, "json", None, out=printed) == 1
    [change] = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert change["after"]["at"] == "2023-11-14T22:13:20.123456Z"


def test_changes_print_null_columns_and_images_as_debeziums_envelope_does(lake):
    """A null column is in the JSON line as null, as `sql` prints it and as the envelope has it; so is an insert's
    `before`."""
    topic = Topic("pg.public.nulls", [("id", INT), ("note", TEXT)], ["id"])
    lake.write([topic.event("c", {"id": 1, "note": None}, 100)])
    lake.land()
    lake.compact()
    printed = io.StringIO()
    assert print_changes(lake.spark, lake.config, "public_nulls", 1, None, "jsonl", None, out=printed) == 1
    [change] = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert (change["op"], change["before"], change["after"], change["key"]) == ("i", None, {"id": 1, "note": None},
                                                                               {"id": 1})
