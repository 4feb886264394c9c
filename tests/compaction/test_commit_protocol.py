"""Compaction's commit protocol: a crash at any step is finished by the next run, the view stays right
throughout, one compactor per table, rollback, and collection of old versions (DESIGN "Commit protocols")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakecompact.catalog import Catalog
from lakecompact.compaction.compact import VERSION_PROPERTY, Compactor
from lakecompact.compaction.lock import table_lock
from lakecompact.errors import LockHeld
from tests.support.debezium import INT, TEXT, Topic

T = "public_items"


class Crash(RuntimeError):
    pass


def crash_once(monkeypatch, owner, name: str, when=lambda *args, **kwargs: True):
    """Make owner.name raise Crash the first time it is called with arguments `when` accepts."""
    original = getattr(owner, name)
    crashed = []

    def patched(*args, **kwargs):
        if not crashed and when(*args, **kwargs):
            crashed.append(True)
            raise Crash(f"simulated crash in {owner.__name__}.{name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)
    return crashed


def topic() -> Topic:
    return Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])


def table_dir(lake) -> Path:
    return lake.tmp / "warehouse" / lake.database / T


def base_version(lake) -> int:
    return int(Catalog(lake.spark, lake.config).properties(f"{T}_base")[VERSION_PROPERTY])


def pending(lake) -> list[int]:
    return sorted(int(p["__batch"]) for p in Catalog(lake.spark, lake.config).partitions(f"{T}_increments"))


def manifest(lake, version: int) -> dict:
    return json.loads((table_dir(lake) / "_state" / "manifests" / f"{version:012d}.json").read_text())


def manifest_versions(lake) -> list[int]:
    return sorted(int(p.stem) for p in (table_dir(lake) / "_state" / "manifests").glob("*.json"))


def archived(lake) -> list[int]:
    return sorted(int(p.name.split("=")[1]) for p in (table_dir(lake) / "archive").glob("hour=*/batch=*"))


def base_ids(lake) -> list[int]:
    """Keys in the base (soft-deleted ones included): each exactly once."""
    return sorted(r["id"] for r in lake.base(T))


V1 = {i: f"n{i}" for i in range(1, 7)}
V2 = {1: "n1 v2", 2: "n2", 3: "n3", 4: "n4 v2", 5: "n5", 7: "n7"}


def as_rows(state: dict) -> list[dict]:
    return [{"id": k, "name": v} for k, v in sorted(state.items())]


def land_two_batches_compact_first(lake) -> Topic:
    """Batch 1 (keys 1..6) compacted into v1; batch 2 (updates 1 and 4, deletes 6, creates 7) landed."""
    pg = topic()
    lake.write([pg.event("c", {"id": i, "name": n}, 100 + i) for i, n in V1.items()])
    lake.land()
    lake.compact()
    assert base_version(lake) == 1
    lake.write([
        pg.event("u", {"id": 1, "name": "n1 v2"}, 201),
        pg.event("u", {"id": 4, "name": "n4 v2"}, 204),
        pg.event("d", {"id": 6, "name": "n6"}, 206),
        pg.event("c", {"id": 7, "name": "n7"}, 207),
    ])
    lake.land()
    assert pending(lake) == [2]
    return pg


@pytest.mark.parametrize(
    "crash_at",
    [
        # the manifest of v2 is written, the metastore still names v1
        pytest.param((Compactor, "_point_base_at", lambda self, m: m.version == 2), id="before-swap"),
        # half-way through the swap: one bucket already points at v2, the others still at v1
        pytest.param((Catalog, "set_partition_location", lambda self, table, spec, location: "v=2" in location
                      and not spec == [("__bucket", min_bucket_holder[0])]), id="mid-swap"),
    ],
)
def test_crash_after_manifest_before_swap_is_finished_by_next_run(lake, monkeypatch, crash_at):
    land_two_batches_compact_first(lake)
    owner, name, when = crash_at
    crash_once(monkeypatch, owner, name, when)
    with pytest.raises(Crash):
        lake.compact()
    assert manifest_versions(lake) == [1, 2]
    assert base_version(lake) == 1
    assert pending(lake) == [2]
    assert lake.view(T) == as_rows(V2)

    monkeypatch.undo()
    assert lake.compact() == []  # converging finishes v2; nothing else is pending
    assert base_version(lake) == 2
    assert pending(lake) == [] and archived(lake) == [1, 2]
    assert lake.view(T) == as_rows(V2)
    assert base_ids(lake) == [1, 2, 3, 4, 5, 6, 7]
    changes = lake.rows(f"SELECT __version, count(*) AS n FROM `{lake.database}`.`{T}_changes` GROUP BY __version")
    assert sorted((r["__version"], r["n"]) for r in changes) == [(1, 6), (2, 4)]


# the mid-swap crash lets the first bucket move; filled in by the test before compacting
min_bucket_holder = [None]
