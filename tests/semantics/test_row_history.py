"""Row history (docs/design.md "Row history"): `<t>_history` follows the reference model in time.

For random PostgreSQL-like histories (tests/semantics/histories.py, with truncates: late, duplicate and TOAST
events, re-inserts, snapshots, compactions at random points), after every land and every compaction:
- the current versions (`__valid_to IS NULL`) equal the view, and the reference model;
- for every moment T at which the source changed (and just before each), the rows of the history live at T
  (`__valid_from <= T AND (__valid_to IS NULL OR T < __valid_to)`) equal the model's table as of T, the
  state after every change with a source time <= T; for a few of those moments the query that
  `sql --as-of` rewrites (views/as_of.py) is run by Spark itself.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given

from lakecompact.compaction import compact as compact_module
from lakecompact.lake import catalog as catalog_module
from lakecompact.lake import semantics
from lakecompact.lake.model import META_COLUMNS
from lakecompact.report import iso_ms
from lakecompact.views.as_of import as_of_query, moment_of
from lakecompact.views.history import history as versions
from lakecompact.views.status import status
from tests.semantics.histories import (
    COLUMNS,
    TABLE,
    TOPIC_NAME,
    actual_view,
    data,
    made,
    model_events,
    property_settings,
    same,
    scenarios,
)
from tests.semantics.reference import expected_as_of, expected_view
from tests.support.crash import killed_after
from tests.support.databases import database_name
from tests.support.debezium import PLACEHOLDER, Topic
from tests.support.lake import Lake

_examples = itertools.count()
SPARK_MOMENTS = 3  # as-of queries run by Spark per check; every moment is checked against the fetched history

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


def history(lake: Lake) -> list[dict]:
    for table in (f"{TABLE}_events", f"{TABLE}_increments"):
        lake.spark.catalog.refreshTable(f"`{lake.database}`.`{table}`")
    return lake.rows(f"SELECT *, unix_millis(__valid_from) AS __from_ms, unix_millis(__valid_to) AS __to_ms "
                     f"FROM `{lake.database}`.`{TABLE}_history`")


def live_at(rows: list[dict], moment: int) -> dict:
    live = [r for r in rows if r["__from_ms"] <= moment and (r.get("__to_ms") is None or moment < r["__to_ms"])]
    ids = [r["id"] for r in live]
    assert len(ids) == len(set(ids)), f"two versions of a key live at {moment}: {sorted(ids)}"
    return {r["id"]: data(r) for r in live}


def as_of_sql(lake: Lake, moment: int) -> dict:
    text = datetime.fromtimestamp(moment / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    query = as_of_query(f"SELECT id, note, qty FROM {TABLE}", moment_of(text), lake.database, {TABLE})
    lake.spark.sql(f"USE `{lake.database}`")
    return {r["id"]: data(r) for r in lake.rows(query)}


def check(lake: Lake, events: list[dict], where: str) -> None:
    if not made(lake):  # its events so far are truncates: the model has no row at any moment either
        times = {e["ts"] for e in events}
        same({}, expected_view(events), f"{where}: no table yet, against the model")
        for moment in sorted({t for ts in times for t in (ts - 1, ts)}):
            same({}, expected_as_of(events, moment), f"{where}: no table yet, as of {moment}")
        return
    rows = history(lake)
    current = {r["id"]: data(r) for r in rows if r.get("__valid_to") is None}
    same(current, expected_view(events), f"{where}: current versions against the model")
    same(current, actual_view(lake), f"{where}: current versions against the view")
    times = sorted({e["ts"] for e in events})
    moments = sorted({t for ts in times for t in (ts - 1, ts)})
    for moment in moments:
        same(live_at(rows, moment), expected_as_of(events, moment), f"{where}: as of {moment}")
    for moment in moments[:: max(1, len(moments) // SPARK_MOMENTS)][:SPARK_MOMENTS]:
        same(as_of_sql(lake, moment), expected_as_of(events, moment), f"{where}: sql --as-of {moment}")


def check_counts(lake: Lake, where: str) -> None:
    """What status says of the history, with nothing pending: its rows and the moment the oldest began."""
    if not made(lake):
        (row,) = status(None, lake.config)
        assert row["table"].endswith(TABLE) and row["held_truncates"] > 0 and "base_version" not in row, where
        return
    rows = history(lake)
    (row,) = status(None, lake.config)
    assert (row["history_rows"], row["history_from"]) == (
        len(rows), iso_ms(min((r["__from_ms"] for r in rows), default=None))), where


@property_settings(4)
@given(scenario=scenarios(truncates=True))
def test_history_follows_the_reference_model_in_time(spark, tmp_path_factory, scenario):
    lake = Lake(spark, tmp_path_factory.mktemp(f"history{next(_examples)}"), database_name(),
                defaults={"row_history": True})
    landed = []
    for n, batch in enumerate(scenario.batches):
        lake.write([d.line() for d in batch.deliveries], name=batch.file)
        lake.land()
        landed += batch.deliveries
        events = model_events(landed)
        check(lake, events, f"after landing batch {n}")
        if batch.compact_after:
            lake.compact()
            check(lake, events, f"after compacting batch {n}")
            check_counts(lake, f"after compacting batch {n}")


COMPACTION_STEPS = ("version-written", "manifest", "swap", "changes-published", "archive", "garbage-collected")


@property_settings(1)
@given(scenario=scenarios(truncates=True))
def test_a_compaction_crashed_at_each_step_and_run_again_keeps_the_history_exact(spark, tmp_path_factory,
                                                                                 monkeypatch, scenario):
    """The scenario's deliveries, in their order, land in one batch per step of the compaction protocol; each
    batch's compaction dies right after its step (as a kill -9 there would: what it wrote stays, nothing after it
    runs), is checked as it was left, and then runs again."""
    lake = Lake(spark, tmp_path_factory.mktemp(f"history{next(_examples)}"), database_name(),
                defaults={"row_history": True, "keep_versions": 2})
    deliveries = [d for batch in scenario.batches for d in batch.deliveries]
    size = -(-len(deliveries) // len(COMPACTION_STEPS))
    for n, step in enumerate(COMPACTION_STEPS):
        lake.write([d.line() for d in deliveries[n * size:(n + 1) * size]], name=f"part-{n}.jsonl")
        lake.land()
        events = model_events(deliveries[:(n + 1) * size])
        with killed_after(monkeypatch, step):
            lake.compact()
        check(lake, events, f"killed after {step}")
        lake.compact()
        check(lake, events, f"compacted again after a kill after {step}")
        check_counts(lake, f"compacted again after a kill after {step}")


def _topic() -> Topic:
    return Topic(TOPIC_NAME, COLUMNS, ["id"])


def test_a_late_event_is_spliced_in_after_a_compaction_and_the_placeholder_after_it_takes_its_value(lake):
    lake.configure(defaults={"buckets": 4, "row_history": True})
    t, ts = _topic(), 1_700_000_000_000
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, ts_ms=ts),
                t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300, ts_ms=ts + 3000)])
    lake.land()
    lake.compact()
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, ts_ms=ts + 2000)])  # late
    lake.land()
    expected = [("a", 1, ts, ts + 2000), ("b", 2, ts + 2000, ts + 3000), ("b", 3, ts + 3000, None)]
    for when in ("landed", "compacted"):
        rows = sorted(history(lake), key=lambda r: r["__from_ms"])
        assert [(r["note"], r["qty"], r["__from_ms"], r.get("__to_ms")) for r in rows] == expected, when
        assert [r["__op"] for r in rows] == ["c", "u", "u"] and [r["__position"] for r in rows] == [100, 200, 300]
        lake.compact()
    # a redelivery of the late event, after its compaction: one more event kept, no more versions
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, ts_ms=ts + 2000)])
    lake.land()
    lake.compact()
    assert len(history(lake)) == 3
    # what status and `history --json` say: the events kept by the compactions, the versions they give, and the
    # moment the oldest began
    assert [(v["version"], v["history_events"], v["history_rows"], v["history_from"])
            for v in versions(None, lake.config, TABLE)] == [
        (1, 2, 2, iso_ms(ts)), (2, 3, 3, iso_ms(ts)), (3, 4, 3, iso_ms(ts))]
    (row,) = status(None, lake.config)
    assert (row["history_events"], row["history_rows"], row["history_from"]) == (4, 3, iso_ms(ts))


def test_versions_begin_at_the_sources_microsecond_and_as_of_reads_between_two_changes_of_one_millisecond(lake):
    lake.configure(defaults={"buckets": 4, "row_history": True})
    t, ts = _topic(), 1_700_000_000_000
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, ts_ms=ts, ts_us=ts * 1000 + 100),
                t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, ts_ms=ts, ts_us=ts * 1000 + 700)])
    lake.land()
    for when in ("landed", "compacted"):
        assert len(history(lake)) == 2  # (and the tables refreshed)
        rows = lake.rows(f"SELECT note, unix_micros(__valid_from) AS f, unix_micros(__valid_to) AS t "
                         f"FROM `{lake.database}`.`{TABLE}_history` ORDER BY f")
        assert rows == [{"note": "a", "f": ts * 1000 + 100, "t": ts * 1000 + 700},
                        {"note": "b", "f": ts * 1000 + 700}], when  # (to_json leaves out a null)
        lake.spark.sql(f"USE `{lake.database}`")
        between = datetime.fromtimestamp(ts / 1000, UTC).replace(microsecond=400)
        assert lake.rows(as_of_query(f"SELECT note FROM {TABLE}", between, lake.database, {TABLE})) == [
            {"note": "a"}], when
        lake.compact()


def test_a_table_made_before_the_microsecond_column_gets_it_when_it_is_next_read(lake, monkeypatch):
    """A table as an older lakecompact made it (its tables and view without `__source_ts_us`, its state naming meta
    revision 1): the next land appends the column to its tables and makes its view again."""
    t, ts = _topic(), 1_700_000_000_000
    old_meta = tuple((name, kind) for name, kind in META_COLUMNS if name != "__source_ts_us")
    with monkeypatch.context() as older:
        for module, name, value in ((catalog_module, "META_COLUMNS", old_meta), (semantics, "META_COLUMNS", old_meta),
                                    (compact_module, "META_COLUMNS", old_meta),
                                    (semantics, "VISIBLE_META", [n for n, _ in old_meta if n != "__toast"]),
                                    (catalog_module, "META_REVISION", 1)):
            older.setattr(module, name, value)
        lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, ts_ms=ts)])
        lake.land()
        lake.compact()
    lake_format = lake.tmp / "warehouse" / lake.database / TABLE / "_state" / "format.json"
    assert json.loads(lake_format.read_text()) == {"format": 1, "meta": 1}
    tables = [f"{TABLE}_base", f"{TABLE}_increments"]

    def columns(table: str) -> list[str]:
        return [c.name for c in lake.spark.catalog.listColumns(f"`{lake.database}`.`{table}`")]

    assert not any("__source_ts_us" in columns(table) for table in [*tables, TABLE])

    lake.write([t.event("c", {"id": 2, "note": "b", "qty": 2}, 200, ts_ms=ts + 1, ts_us=ts * 1000 + 1500)])
    lake.land()
    assert all(columns(table).count("__source_ts_us") == 1 for table in [*tables, TABLE])
    assert json.loads(lake_format.read_text()) == {"format": 1, "meta": 2}
    # the older base's row has no microseconds; the new event's are kept, before and after its compaction
    for when in ("landed", "compacted"):
        assert {r["id"]: r.get("__source_ts_us") for r in lake.view(TABLE, meta=True)} == {
            1: None, 2: ts * 1000 + 1500}, when
        lake.compact()


def test_retention_drops_versions_that_ended_before_it_and_keeps_the_current_values(lake):
    day = 86_400_000
    lake.configure(defaults={"buckets": 4, "row_history": True, "row_history_days": 1})
    t, ts = _topic(), 1_700_000_000_000
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, ts_ms=ts),
                t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, ts_ms=ts + day // 2),
                t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300, ts_ms=ts + day),
                t.event("c", {"id": 2, "note": "z", "qty": 9}, 400, ts_ms=ts + 3 * day)])
    lake.land()
    assert len(history(lake)) == 4
    lake.compact()
    rows = sorted(history(lake), key=lambda r: r["__from_ms"])
    # the cutoff is a day before the latest change (ts + 3 days): key 1's first two versions ended before it
    assert [(r["id"], r["note"], r["qty"]) for r in rows] == [(1, "b", 3), (2, "z", 9)]
    assert {r["id"]: data(r) for r in rows} == lake.state(TABLE)
    # the events kept: key 1's update that began the version live at the cutoff, and key 2's insert
    (row,) = status(None, lake.config)
    assert (row["history_events"], row["history_rows"], row["history_from"]) == (2, 2, iso_ms(ts + day))


def test_turning_history_on_starts_it_from_the_current_rows(lake):
    t, ts = _topic(), 1_700_000_000_000
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, ts_ms=ts),
                t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, ts_ms=ts + 1000),
                t.event("c", {"id": 2, "note": "z", "qty": 9}, 300, ts_ms=ts + 2000)])
    lake.land()
    lake.compact()
    lake.configure(defaults={"buckets": 4, "row_history": True})
    lake.write([t.event("u", {"id": 2, "note": PLACEHOLDER, "qty": 10}, 400, ts_ms=ts + 3000)])
    lake.land()
    lake.compact()
    rows = sorted(history(lake), key=lambda r: r["__from_ms"])
    assert [(r["id"], r["note"], r["qty"], r["__from_ms"], r.get("__to_ms")) for r in rows] == [
        (1, "b", 2, ts + 1000, None), (2, "z", 9, ts + 2000, ts + 3000), (2, "z", 10, ts + 3000, None)]
    # back to the version before history was on: only the pending events are history again, as before that compaction
    lake.rollback(TABLE)
    assert [(r["id"], r["qty"]) for r in history(lake)] == [(2, 10)]
