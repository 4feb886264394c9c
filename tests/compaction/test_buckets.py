"""Incremental compaction of copy-on-write tables (`merge_on_read = false`): only the buckets the pending
increments touch are rewritten; the others are carried forward as they are, file for file (docs/design.md
"Incremental compaction"). Merge-on-read, the default, writes those buckets' deltas instead
(test_merge_on_read.py)."""

from __future__ import annotations

import json
import re

from pyspark.sql import functions as F

from lakecompact.lake.catalog import Catalog
from tests.support.buckets import bucket_locations, files_of, table_dir
from tests.support.debezium import INT, TEXT, Topic

T = "public_items"
BUCKETS = 8
KEYS = range(1, 201)


def bucket_of_keys(lake) -> dict[int, int]:
    return {r["id"]: r["__bucket"] for r in lake.rows(f"SELECT id, __bucket FROM `{lake.database}`.`{T}_base`")}


def view_state(lake) -> dict[int, str]:
    return {r["id"]: r["name"] for r in lake.view(T)}


def test_second_compaction_rewrites_only_the_touched_buckets(lake, monkeypatch):
    lake.configure(defaults={"buckets": BUCKETS, "merge_on_read": False})
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    state = {i: f"n{i}" for i in KEYS}
    lake.write([pg.event("c", {"id": i, "name": n}, 1000 + i) for i, n in state.items()])
    lake.land()
    assert view_state(lake) == state
    [first] = lake.compact()
    assert first.version == 1 and first.buckets_rewritten == BUCKETS
    assert view_state(lake) == state

    bucket = bucket_of_keys(lake)
    assert sorted(set(bucket.values())) == list(range(BUCKETS))
    before_files = files_of(lake, T, 1)
    assert sorted(before_files) == list(range(BUCKETS))
    assert all(loc.rstrip("/").endswith(f"/v=1/__bucket={b}") for b, loc in bucket_locations(lake, T).items())

    # a few keys, in two buckets: an update, a delete, and an update of another key of the first bucket
    first_bucket = [k for k in KEYS if bucket[k] == bucket[1]]
    second_key = next(k for k in KEYS if bucket[k] != bucket[1])
    touched_keys = [1, first_bucket[1], second_key]
    lake.write([
        pg.event("u", {"id": 1, "name": "n1 v2"}, 5001),
        pg.event("d", {"id": first_bucket[1], "name": state[first_bucket[1]]}, 5002),
        pg.event("u", {"id": second_key, "name": f"n{second_key} v2"}, 5003),
    ])
    lake.land()
    state[1] = "n1 v2"
    del state[first_bucket[1]]
    state[second_key] = f"n{second_key} v2"
    assert view_state(lake) == state  # during: base v1 + pending increments

    swaps = []  # the swap's metastore calls: one, moving the rewritten buckets and none of the others
    set_locations = Catalog.set_partition_locations
    monkeypatch.setattr(Catalog, "set_partition_locations",
                        lambda self, table, locations: swaps.append([dict(spec)["__bucket"] for spec, _ in locations])
                        or set_locations(self, table, locations))
    [second] = lake.compact()
    touched = {bucket[k] for k in touched_keys}
    assert len(swaps) == 1 and sorted(swaps[0]) == sorted(touched)
    untouched = set(range(BUCKETS)) - touched
    assert len(touched) == 2
    assert second.version == 2 and second.buckets_rewritten == 2
    assert view_state(lake) == state

    # the untouched buckets' files are the very same files, not rewritten
    after_v1 = files_of(lake, T, 1)
    for b in untouched:
        assert after_v1[b] == before_files[b]
    assert sorted(files_of(lake, T, 2)) == sorted(touched)

    # the metastore points the untouched buckets at v1 still, the touched ones at v2
    locations = bucket_locations(lake, T)
    assert sorted(locations) == list(range(BUCKETS))
    for b, location in locations.items():
        assert location.rstrip("/").endswith(f"/v={2 if b in touched else 1}/__bucket={b}"), (b, location)
    manifest = json.loads((table_dir(lake, T) / "_state" / "manifests" / f"{2:012d}.json").read_text())
    assert manifest["buckets"] == {str(b): 2 if b in touched else 1 for b in range(BUCKETS)}

    # every key once in the base (the delete as a soft-deleted row), in the bucket it hashes to
    assert sorted(bucket_of_keys(lake).items()) == sorted(bucket.items())
    deleted = lake.rows(f"SELECT id FROM `{lake.database}`.`{T}_base` WHERE __deleted")
    assert deleted == [{"id": first_bucket[1]}]


def test_the_touched_keys_are_shuffled_once_to_their_bucket(lake, monkeypatch):
    """Keyed, without a truncate: the rows of the keys a change touches meet in their bucket's partition, are
    resolved there and written from there; one shuffle, not one by key and another of the resolved rows. The
    resolved rows are kept (a local checkpoint, with each key's row before them for the change feed) by the write
    that reads them, which shuffles nothing more."""
    from lakecompact.compaction import compact as compact_module

    lake.configure(defaults={"buckets": BUCKETS, "merge_on_read": False})
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    state = {i: f"n{i}" for i in KEYS}
    lake.write([pg.event("c", {"id": i, "name": n}, 1000 + i) for i, n in state.items()])
    lake.land()
    lake.compact()
    lake.write([pg.event("u", {"id": i, "name": f"n{i} v2"}, 5000 + i) for i in KEYS if i % 3 == 0])
    lake.land()
    state.update({i: f"n{i} v2" for i in KEYS if i % 3 == 0})

    plans, placed, parts = [], [], {}

    def latest_rows(self, plan, version, base, increments, touched, part, **kwargs):
        rows = original_latest(self, plan, version, base, increments, touched, part, **kwargs)
        parts[part] = rows._jdf.queryExecution().executedPlan().toString()
        return rows

    def write_rows(self, rows, plan, version):
        plans.append(rows._jdf.queryExecution().executedPlan().toString())
        # the resolved rows come first, in the shuffle's partitions (the carried ones follow, where they were read)
        placed.extend(rows.where(F.spark_partition_id() < len(plan.target)).groupBy(F.spark_partition_id())
                      .agg(F.collect_set("__bucket").alias("buckets")).collect())
        return original(self, rows, plan, version)

    original, original_latest = compact_module.Compactor._write_rows, compact_module.Compactor._latest_rows
    monkeypatch.setattr(compact_module.Compactor, "_write_rows", write_rows)
    monkeypatch.setattr(compact_module.Compactor, "_latest_rows", latest_rows)
    [second] = lake.compact()
    assert second.version == 2 and second.buckets_rewritten == BUCKETS
    [executed] = plans

    def shuffles(plan: str) -> list[str]:
        return [line.strip() for line in plan.splitlines() if re.search(r"(?<!Broadcast)Exchange ", line)]

    assert shuffles(executed) == [], executed
    assert sorted(parts) == ["carried", "resolved"]
    assert shuffles(parts["carried"]) == [], parts["carried"]
    [shuffle] = shuffles(parts["resolved"])
    assert "hashpartitioning" in shuffle and "__bucket_of" in shuffle, parts["resolved"]
    # each bucket resolved and written by a task of its own: hashed as they are, buckets 0-7 would fill 4 partitions
    assert sorted(len(row.buckets) for row in placed) == [1] * BUCKETS
    assert sorted(b for row in placed for b in row.buckets) == list(range(BUCKETS))
    assert view_state(lake) == state
