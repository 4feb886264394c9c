"""Merge-on-read (`merge_on_read = true`): a small change writes each touched bucket's delta, and leaves the
bucket's own files as they are; the delta is folded in when it grows past `delta_share` of the bucket
(docs/configuration.md "Merge-on-read"). Readers, row counts, the change feed and rollback see one row per key."""

from __future__ import annotations

import pytest

from lakecompact.compaction import compact as compact_module
from lakecompact.config import TableConfig
from lakecompact.lake.partitions import DELTA_BUCKETS_FROM
from lakecompact.views.status import status
from tests.support.buckets import bucket_locations, files_of
from tests.support.debezium import INT, TEXT, Topic

T = "public_items"
BUCKETS = 2
KEYS = range(1, 201)


def view_state(lake) -> dict[int, str]:
    return {r["id"]: r["name"] for r in lake.view(T)}


def base_state(lake) -> dict[int, tuple[bool, str]]:
    rows = lake.base(T)
    assert len(rows) == len({r["id"] for r in rows}), "a key twice in the base"
    return {r["id"]: (r["__deleted"], r["name"]) for r in rows}


def counts(lake) -> tuple[int, int]:
    [row] = [r for r in status(lake.spark, lake.config) if r["table"].endswith(f".{T}")]
    return row["base_rows"], row["live_rows"]


def changes(lake, version: int) -> dict[str, list[int]]:
    rows = lake.rows(f"SELECT op, key.id AS id FROM `{lake.database}`.`{T}_changes` WHERE __version = {version}")
    found: dict[str, list[int]] = {}
    for r in rows:
        found.setdefault(r["op"], []).append(r["id"])
    return {op: sorted(ids) for op, ids in found.items()}


@pytest.mark.parametrize("counted", ["while-writing", "read-back"])
def test_a_small_change_writes_deltas_and_a_large_one_folds_them_in(lake, monkeypatch, counted):
    assert TableConfig().delta_share == 0.25  # the sizes below are chosen around the default
    if counted == "read-back":  # as a version of many rows into many partitions is counted
        monkeypatch.setattr(compact_module, "COUNTED_WHILE_WRITING", 0)
    lake.configure(defaults={"buckets": BUCKETS, "merge_on_read": True})
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    state = {i: f"n{i}" for i in KEYS}
    lake.write([pg.event("c", {"id": i, "name": n}, 1000 + i) for i, n in state.items()])
    lake.land()
    [first] = lake.compact()
    assert (first.buckets_rewritten, first.deltas_written) == (BUCKETS, 0)  # nothing to shadow yet
    v1_files = files_of(lake, T, 1)

    # v2: 10 updates, 5 deletes, 3 inserts (about 9 events per bucket of about 100 rows): deltas
    updated, deleted, inserted = list(range(1, 11)), list(range(11, 16)), [201, 202, 203]
    lake.write([pg.event("u", {"id": i, "name": f"n{i} v2"}, 2000 + i) for i in updated]
               + [pg.event("d", {"id": i, "name": state[i]}, 2100 + i) for i in deleted]
               + [pg.event("c", {"id": i, "name": f"n{i}"}, 2200 + i) for i in inserted])
    lake.land()
    state |= {i: f"n{i} v2" for i in updated} | {i: f"n{i}" for i in inserted}
    for i in deleted:
        del state[i]
    assert view_state(lake) == state
    [second] = lake.compact()
    assert (second.version, second.buckets_rewritten, second.deltas_written) == (2, 0, BUCKETS)
    assert second.rows_out == 18  # the delta rows: one per touched key
    assert view_state(lake) == state
    v2_base = {i: (False, n) for i, n in state.items()} | {i: (True, f"n{i}") for i in deleted}
    assert base_state(lake) == v2_base
    assert counts(lake) == (203, 198)
    assert changes(lake, 2) == {"u": updated, "d": deleted, "i": inserted}
    # the buckets' files are untouched; the deltas are partitions of `<t>_base` beside them
    assert files_of(lake, T, 1) == v1_files
    locations = bucket_locations(lake, T)
    assert sorted(locations) == [0, 1, DELTA_BUCKETS_FROM, DELTA_BUCKETS_FROM + 1]
    for b, location in locations.items():
        assert location.rstrip("/").endswith(f"/v={1 if b < DELTA_BUCKETS_FROM else 2}/__bucket={b}"), (b, location)

    # v3: a delta chain: a key updated again (its row moves from the old delta to the new), one more update
    lake.write([pg.event("u", {"id": 1, "name": "n1 v3"}, 3001), pg.event("u", {"id": 20, "name": "n20 v3"}, 3020)])
    lake.land()
    state |= {1: "n1 v3", 20: "n20 v3"}
    [third] = lake.compact()
    assert third.buckets_rewritten == 0 and third.deltas_written >= 1
    assert view_state(lake) == state
    v3_base = v2_base | {1: (False, "n1 v3"), 20: (False, "n20 v3")}
    assert base_state(lake) == v3_base
    assert counts(lake) == (203, 198)
    assert changes(lake, 3) == {"u": [1, 20]}

    # v4: 80 updates (about 40 per bucket): past delta_share, so every bucket is rewritten with its delta folded
    lake.write([pg.event("u", {"id": i, "name": f"n{i} v4"}, 4000 + i) for i in range(101, 181)])
    lake.land()
    state |= {i: f"n{i} v4" for i in range(101, 181)}
    [fourth] = lake.compact()
    assert (fourth.buckets_rewritten, fourth.deltas_written) == (BUCKETS, 0)
    assert view_state(lake) == state
    assert base_state(lake) == v3_base | {i: (False, f"n{i} v4") for i in range(101, 181)}
    assert counts(lake) == (203, 198)
    assert sorted(bucket_locations(lake, T)) == [0, 1]  # the deltas folded in: their partitions are gone
    assert lake.rows(f"SELECT COUNT(*) AS n FROM `{lake.database}`.`{T}_base` WHERE __op <> 't'") == [{"n": 203}]

    # back to v3: the deltas are partitions again, and the rolled-back change is pending
    assert lake.rollback(T) == 3
    assert sorted(bucket_locations(lake, T)) == [0, 1, DELTA_BUCKETS_FROM, DELTA_BUCKETS_FROM + 1]
    assert base_state(lake) == v3_base
    assert view_state(lake) == state
    assert counts(lake) == (203, 198)


def one_bucket_then_one_event(lake, defaults: dict, op: str, name: str):
    """KEYS compacted into one bucket, then one event on key 1 compacted: the second compaction's report."""
    lake.configure(defaults={"buckets": 1, **defaults})
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    lake.write([pg.event("c", {"id": i, "name": f"n{i}"}, 1000 + i) for i in KEYS])
    lake.land()
    lake.compact()
    lake.write([pg.event(op, {"id": 1, "name": name}, 2001)])
    lake.land()
    [second] = lake.compact()
    return second


def test_hard_deletes_rewrite_whole_buckets(lake):
    """A tombstone purged from a delta would let the bucket's older row show again: hard deletes write no delta."""
    second = one_bucket_then_one_event(lake, {"merge_on_read": True, "delete_mode": "hard"}, "d", "n1")
    assert (second.buckets_rewritten, second.deltas_written) == (1, 0)
    assert 1 not in view_state(lake) and len(view_state(lake)) == len(KEYS) - 1


def test_merge_on_read_is_the_default(lake):
    second = one_bucket_then_one_event(lake, {}, "u", "n1 v2")
    assert (second.buckets_rewritten, second.deltas_written) == (0, 1)
    assert sorted(bucket_locations(lake, T)) == [0, DELTA_BUCKETS_FROM]
    assert view_state(lake) == {i: ("n1 v2" if i == 1 else f"n{i}") for i in KEYS}


def test_copy_on_write_rewrites_the_touched_bucket(lake):
    second = one_bucket_then_one_event(lake, {"merge_on_read": False}, "u", "n1 v2")
    assert (second.buckets_rewritten, second.deltas_written) == (1, 0)
    assert sorted(bucket_locations(lake, T)) == [0]
    assert view_state(lake) == {i: ("n1 v2" if i == 1 else f"n{i}") for i in KEYS}
