"""Compaction's commit protocol: a crash at any step is finished by the next run, the view stays right
throughout, one compactor per table, rollback, and collection of old versions (docs/design.md "Compaction protocol")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lakecompact.compaction.commit import TableCommit
from lakecompact.compaction.compact import VERSION_PROPERTY, Compactor
from lakecompact.errors import LockHeld, MissingFile, MissingIncrement, RollbackError
from lakecompact.lake import view_definition as definition
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.manifest import Manifests
from lakecompact.lake.storage import exclusive_lock
from lakecompact.views.history import history
from lakecompact.views.status import status
from tests.support.crash import Crash, crash_once
from tests.support.databases import database_name
from tests.support.debezium import INT, TEXT, Topic
from tests.support.layout import archived_batches

T = "public_items"


def topic() -> Topic:
    return Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])


def topic_with_email(before: Topic) -> Topic:
    """The same topic after the source table gained a column, its offsets going on from `before`'s."""
    after = Topic("pg.public.items", [("id", INT), ("name", TEXT), ("email", TEXT)], ["id"])
    after.next_offset = before.next_offset
    return after


def table_of(lake) -> str:
    """The table a test works in: T, or its own table of the shared lake (OneTable)."""
    return getattr(lake, "table", T)


def table_dir(lake) -> Path:
    return lake.tmp / "warehouse" / lake.database / table_of(lake)


def base_version(lake) -> int:
    return int(Catalog(lake.spark, lake.config).properties(f"{table_of(lake)}_base")[VERSION_PROPERTY])


def pending(lake) -> list[int]:
    return sorted(int(p["__batch"]) for p in Catalog(lake.spark, lake.config).partitions(f"{table_of(lake)}_increments"))


def manifest(lake, version: int) -> dict:
    return json.loads((table_dir(lake) / "_state" / "manifests" / f"{version:012d}.json").read_text())


def manifest_versions(lake) -> list[int]:
    return sorted(int(p.stem) for p in (table_dir(lake) / "_state" / "manifests").glob("*.json"))


def archived(lake) -> list[int]:
    return archived_batches(table_dir(lake))


def base_ids(lake) -> list[int]:
    """Keys in the base (soft-deleted ones included): each exactly once."""
    return sorted(r["id"] for r in lake.base(table_of(lake)))


def without_landed_at(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "__landed_at"} for r in rows]


V1 = {i: f"n{i}" for i in range(1, 7)}
V2 = {1: "n1 v2", 2: "n2", 3: "n3", 4: "n4 v2", 5: "n5", 7: "n7"}


def as_rows(state: dict) -> list[dict]:
    return [{"id": k, "name": v} for k, v in sorted(state.items())]


def batch_2(pg: Topic) -> list[dict]:
    """Updates 1 and 4, deletes 6, creates 7."""
    return [
        pg.event("u", {"id": 1, "name": "n1 v2"}, 201),
        pg.event("u", {"id": 4, "name": "n4 v2"}, 204),
        pg.event("d", {"id": 6, "name": "n6"}, 206),
        pg.event("c", {"id": 7, "name": "n7"}, 207),
    ]


class OneTable:
    """A test's own table in the lake of `two_batches`, which the other tests' tables share: the lake's methods,
    but `compact()` compacts this table only, and the helpers above read this table."""

    def __init__(self, lake, table: str, topic: Topic):
        self._lake, self.table, self.topic = lake, table, topic

    def __getattr__(self, name):
        return getattr(self._lake, name)

    def compact(self, *tables: str):
        return self._lake.compact(*(tables or (self.table,)))


SETTINGS_MERGE_ON_READ = {"merge_on_read": True, "delta_share": 1e9}


@pytest.fixture(scope="module")
def two_batches(spark, tmp_path_factory, request):
    """For each test of this module that uses `items`, a table of its own in one lake, each as the test would have
    made it alone: batch 1 (keys 1..6) compacted into v1; batch 2 (updates 1 and 4, deletes 6, creates 7) landed.
    One land, compaction and land for them all, rather than one each. A test's table, with
    `merge_on_read` among its parameters, has the settings of that parameter; the others the defaults."""
    from tests.support.lake import Lake

    tests = [item for item in request.session.items
             if item.module is request.module and "items" in getattr(item, "fixturenames", ())]
    tables = {item.name: f"{T}_{n}" for n, item in enumerate(tests)}
    merge_on_read = {item.name for item in tests if getattr(item, "callspec", None)
                     and item.callspec.params.get("merge_on_read")}
    lake = Lake(spark, tmp_path_factory.mktemp("two_batches"), database_name(),
                tables={tables[name]: SETTINGS_MERGE_ON_READ for name in merge_on_read})
    topics = {name: Topic(f"pg.public.{table.removeprefix('public_')}", [("id", INT), ("name", TEXT)], ["id"])
              for name, table in tables.items()}
    lake.write([pg.event("c", {"id": i, "name": n}, 100 + i) for pg in topics.values() for i, n in V1.items()])
    lake.land()
    lake.compact()
    handed = {name: OneTable(lake, table, topics[name]) for name, table in tables.items()}
    for one in handed.values():
        assert base_version(one) == 1
    lake.write([event for pg in topics.values() for event in batch_2(pg)])
    lake.land()
    for one in handed.values():
        assert pending(one) == [2]
    return handed


@pytest.fixture
def items(two_batches, request) -> OneTable:
    """This test's table of `two_batches`: v1 compacted, batch 2 pending."""
    return two_batches[request.node.name]


@pytest.mark.parametrize(
    "crash_at",
    [
        # the manifest of v2 is written, the metastore still names v1
        pytest.param((TableCommit, "point_base_at", lambda self, m, *pointed_at: m.version == 2), id="before-swap"),
        # the swap's partitions moved to v2 (one metastore call), the version property still names v1
        pytest.param((Catalog, "set_properties", lambda self, table, properties: properties.get(VERSION_PROPERTY) == "2"),
                     id="partitions-moved"),
    ],
)
@pytest.mark.parametrize("merge_on_read", [False, True], ids=["rewrite", "deltas"])
def test_crash_after_manifest_before_swap_is_finished_by_next_run(items, monkeypatch, crash_at, merge_on_read):
    # merge_on_read: the table's settings are SETTINGS_MERGE_ON_READ (two_batches): v2 writes deltas, and recovery
    # adds their partitions beside the buckets
    lake, T = items, items.table
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
    assert_version_2_committed_once(lake)
    assert bool(manifest(lake, 2)["stats"]["deltas_written"]) == merge_on_read



def assert_version_2_committed_once(lake):
    """After the second compaction, however it was interrupted: base, increments, view and feed as if it had not been."""
    T = table_of(lake)
    assert base_version(lake) == 2
    assert pending(lake) == [] and archived(lake) == [1, 2]
    assert lake.view(T) == as_rows(V2)
    assert base_ids(lake) == [1, 2, 3, 4, 5, 6, 7]
    changes = lake.rows(f"SELECT __version, count(*) AS n FROM `{lake.database}`.`{T}_changes` GROUP BY __version")
    assert sorted((r["__version"], r["n"]) for r in changes) == [(1, 6), (2, 4)]


def test_crash_before_the_manifest_leaves_garbage_the_next_run_replaces(items, monkeypatch):
    lake, T = items, items.table
    crash_once(monkeypatch, Manifests, "write", lambda self, m: m.version == 2)
    with pytest.raises(Crash):
        lake.compact()
    assert manifest_versions(lake) == [1]  # no manifest: v2 does not exist, whatever its folder holds
    assert (table_dir(lake) / "base" / "v=2").exists()
    assert base_version(lake) == 1 and pending(lake) == [2]
    assert lake.view(T) == as_rows(V2)

    monkeypatch.undo()
    [report] = lake.compact()
    assert report.version == 2
    assert_version_2_committed_once(lake)


def test_crash_after_swap_before_archive_is_finished_by_next_run(items, monkeypatch):
    lake, T = items, items.table
    crash_once(monkeypatch, TableCommit, "archive", lambda self, consumed: 2 in [b for _, b in consumed])
    with pytest.raises(Crash):
        lake.compact()
    assert base_version(lake) == 2  # committed
    assert pending(lake) == [2]  # but its increments are still registered: the view reads them twice
    assert lake.view(T) == as_rows(V2)

    monkeypatch.undo()
    assert lake.compact() == []
    assert base_version(lake) == 2
    assert pending(lake) == [] and archived(lake) == [1, 2]
    assert lake.view(T) == as_rows(V2)
    assert base_ids(lake) == [1, 2, 3, 4, 5, 6, 7]


def test_a_second_compactor_exits_with_a_clear_message(lake):
    pg = topic()
    lake.write([pg.event("c", {"id": i, "name": n}, 100 + i) for i, n in V1.items()])
    lake.land()
    catalog = Catalog(lake.spark, lake.config)
    lock_path = catalog.paths(T).compaction_lock
    with exclusive_lock(catalog.storage, lock_path, f"table {T} is being compacted"):
        held_by = catalog.storage.read_text(lock_path)
        with pytest.raises(LockHeld) as caught:
            lake.compact(T)
        message = str(caught.value)
        assert T in message and lock_path in message
        assert held_by in message  # who holds it (pid, host, user, since)
        assert catalog.storage.read_text(lock_path) == held_by  # the loser leaves the holder's lock alone
        assert base_version(lake) == 0 and pending(lake) == [1]
    assert not catalog.storage.exists(lock_path)
    [report] = lake.compact(T)
    assert report.version == 1
    assert lake.view(T) == as_rows(V1)


@pytest.mark.parametrize("merge_on_read", [False, True], ids=["rewrite", "deltas"])
def test_a_column_a_land_adds_while_a_compaction_starts_reaches_the_base_and_the_feed(lake, merge_on_read):
    """Land and compaction take different locks, so a land can add a column and register a batch that has it
    after a compaction started: the compaction folds that batch in, and must keep the column's values."""
    lake.configure(defaults={"merge_on_read": merge_on_read, "delta_share": 1e9})
    v1 = topic()
    lake.write([v1.event("c", {"id": 1, "name": "a"}, 100), v1.event("c", {"id": 3, "name": "d"}, 150)])
    lake.land()
    lake.compact()
    compactor = Compactor(lake.spark, lake.config, T)  # started: the land below runs before it lists the batches
    v2 = topic_with_email(v1)
    lake.write([v2.event("u", {"id": 1, "name": "b", "email": "b@x"}, 200),
                v2.event("c", {"id": 2, "name": "c", "email": "c@x"}, 300)])
    lake.land()
    report = compactor.compact()
    expected = [{"id": 1, "name": "b", "email": "b@x"}, {"id": 2, "name": "c", "email": "c@x"},
                {"id": 3, "name": "d"}]  # (no email: read back as JSON, a null is left out)
    assert (report.version, report.deltas_written > 0, pending(lake)) == (2, merge_on_read, [])
    assert lake.base(T, meta=False) == expected
    assert lake.view(T) == expected
    feed = lake.rows(f"SELECT after.id AS id, after.email AS email FROM {lake.database}.{T}_changes "
                     f"WHERE __version = 2 ORDER BY __seq")
    assert feed == [{"id": 1, "email": "b@x"}, {"id": 2, "email": "c@x"}]


def test_a_column_a_land_adds_while_a_compaction_makes_the_view_stays_in_the_view(lake, monkeypatch):
    """A compaction that writes deltas makes the view again at its swap, from the schema it read a moment before;
    a land (its own lock) that adds a column in that moment makes its own view first: the column must stay."""
    lake.configure(defaults={"merge_on_read": True, "delta_share": 1e9})
    v1 = topic()
    lake.write([v1.event("c", {"id": 1, "name": "a"}, 100), v1.event("c", {"id": 2, "name": "b"}, 150)])
    lake.land()
    lake.compact()
    lake.write([v1.event("u", {"id": 1, "name": "a2"}, 200)])
    lake.land()
    v2 = topic_with_email(v1)
    lake.write([v2.event("c", {"id": 3, "name": "c", "email": "c@x"}, 300)])
    record_path = definition._record_path

    def land_as_the_compaction_makes_the_view(catalog, table):
        if not landed:
            landed.append(True)
            lake.land()  # saves the schema with `email`, makes its view, registers batch 3
        return record_path(catalog, table)

    landed = []
    compactor = Compactor(lake.spark, lake.config, T)
    monkeypatch.setattr(definition, "_record_path", land_as_the_compaction_makes_the_view)
    report = compactor.compact()
    monkeypatch.undo()
    assert (landed, report.version, report.deltas_written > 0, pending(lake)) == ([True], 2, True, [3])
    assert lake.view(T) == [{"id": 1, "name": "a2"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c", "email": "c@x"}]


def test_a_feed_version_a_compaction_publishes_while_a_land_changes_the_schema_stays_in_the_feed(lake, monkeypatch):
    """A schema change recreates `<t>_changes` (its struct columns follow the schema) with the versions it found:
    a compaction that publishes a version in the meantime (under its own lock) must not lose it from the feed."""
    v1 = topic()
    lake.write([v1.event("c", {"id": 1, "name": "a"}, 100)])
    lake.land()
    v2 = topic_with_email(v1)
    lake.write([v2.event("u", {"id": 1, "name": "b", "email": "b@x"}, 200)])
    run = Catalog.run

    def compact_right_before_the_land_drops_the_feed_table(self, template, **context):
        if template == "drop_table.sql.j2" and context["table"] == f"{T}_changes" and not compacted:
            compacted.append(lake.compact(T))  # publishes v1 of the feed (batch 1) into the table being replaced
        return run(self, template, **context)

    compacted = []
    monkeypatch.setattr(Catalog, "run", compact_right_before_the_land_drops_the_feed_table)
    lake.land()
    monkeypatch.undo()
    assert [r.version for r in compacted[0]] == [1]
    feed = lake.rows(f"SELECT __version, after.id AS id, after.name AS name FROM {lake.database}.{T}_changes")
    assert feed == [{"__version": 1, "id": 1, "name": "a"}]
    lake.compact()
    feed = lake.rows(f"SELECT __version, after.id AS id, after.email AS email FROM {lake.database}.{T}_changes "
                     f"ORDER BY __version")
    assert feed == [{"__version": 1, "id": 1}, {"__version": 2, "id": 1, "email": "b@x"}]


def test_a_landed_batch_whose_folder_is_gone_stops_compaction_naming_it_and_how_to_forget_it(items):
    """An increment folder deleted outside lakecompact: compaction changes nothing and names the batch, its folder and
    the statement that forgets it; run in Spark SQL (as `lakecompact sql` runs it), the next compaction folds the
    other pending batch."""
    lake, T = items, items.table
    pg = lake.topic
    lake.write([pg.event("u", {"id": 2, "name": "n2 v3"}, 302)])
    lake.land()
    assert pending(lake) == [2, 3]
    catalog = Catalog(lake.spark, lake.config)
    [hour] = [p["__hour"] for p in catalog.partitions(f"{T}_increments") if int(p["__batch"]) == 2]
    shutil.rmtree(table_dir(lake) / "increments" / f"hour={hour}" / "batch=2")
    with pytest.raises(MissingIncrement) as caught:
        lake.compact(T)
    statement = f"ALTER TABLE `{lake.database}`.`{T}_increments` DROP IF EXISTS PARTITION (`__hour` = '{hour}', `__batch` = 2)"
    assert str(caught.value) == (
        f"compact {T}: batch 2 (hour {hour}) is registered in {lake.database}.{T}_increments but its folder is gone: "
        f"{catalog.paths(T).increment(hour, 2)}; restore the folder, or forget the batch (its events are lost) with "
        f"this statement (`lakecompact sql` runs it): {statement}"
    )
    assert caught.value.exit_code == 7
    assert base_version(lake) == 1 and pending(lake) == [2, 3]
    lake.spark.sql(statement)
    [report] = lake.compact(T)
    assert (report.version, report.events_in) == (2, 1) and pending(lake) == []
    assert lake.view(T) == as_rows({**V1, 2: "n2 v3"})


def test_rollback_goes_back_one_version_and_the_next_compaction_redoes_it_under_a_new_number(items):
    """A number once published never names other content: the compaction after a rollback takes the next unused
    one, and its manifest names the version it was compacted from (docs/change-feed.md "Version numbers")."""
    lake, T = items, items.table
    base_v1 = lake.base(T)
    lake.compact()
    assert base_version(lake) == 2 and pending(lake) == []
    base_v2 = lake.base(T)

    assert lake.rollback(T) == 1
    assert base_version(lake) == 1
    assert pending(lake) == [2]  # batch 2 is pending again
    assert archived(lake) == [1]
    assert manifest_versions(lake) == [1]
    assert lake.base(T) == base_v1
    assert lake.view(T) == as_rows(V2)  # unchanged: base v1 + pending batch 2
    feed = f"SELECT DISTINCT __version FROM `{lake.database}`.`{T}_changes`"
    assert lake.rows(feed) == [{"__version": 1}]  # the rolled-back version's changes are gone from the feed
    [row] = [r for r in status(None, lake.config) if r["table"] == f"{lake.database}.{T}"]  # from the files alone
    assert (row["base_version"], row["base_rows"], row["live_rows"]) == (1, 6, 6)
    assert (row["pending_batches"], row["pending_events"], row["change_feed_versions"]) == (1, 4, [1])

    [report] = lake.compact()
    assert report.version == 3
    assert base_version(lake) == 3 and pending(lake) == [] and manifest_versions(lake) == [1, 3]
    assert lake.view(T) == as_rows(V2)
    assert without_landed_at(lake.base(T)) == without_landed_at(base_v2)
    changes = lake.rows(f"SELECT __version, count(*) AS n FROM `{lake.database}`.`{T}_changes` GROUP BY __version")
    assert sorted((r["__version"], r["n"]) for r in changes) == [(1, 6), (3, 4)]
    assert (manifest(lake, 1)["previous"], manifest(lake, 3)["previous"]) == (0, 1)

    # back past the gap to v1, then compacted again: v4; a rollback goes back to the version compacted from
    with pytest.raises(RollbackError, match=r"at base v3 and can go back to v0, v1 \(keep_versions = 3\), not v2"):
        lake.rollback(T, to_version=2)
    assert lake.rollback(T, to_version=1) == 1
    assert lake.compact()[0].version == 4
    assert lake.rollback(T) == 1 and lake.rollback(T) == 0
    assert [r.version for r in lake.compact()] == [5]  # every batch again, from v0
    assert lake.view(T) == as_rows(V2) and lake.rollback(T) == 0
    assert lake.compact()[0].version == 6
    rows = history(None, lake.config, T)  # the manifests as they are on disk, no Spark
    assert [(r["version"], r["state"], r["compacted_from"], r["change_feed"]) for r in rows] == [
        (1, "rolled back", 0, None), (2, "rolled back", 1, None), (3, "rolled back", 1, None),
        (4, "rolled back", 1, None), (5, "rolled back", 0, None), (6, "current", 0, 6),
    ]
    assert [(r["batches"], r["events_in"], r["rows"], r["live_rows"]) for r in rows] == [
        (1, 6, 6, 6), (1, 4, 7, 6), (1, 4, 7, 6), (1, 4, 7, 6), (2, 10, 7, 6), (2, 10, 7, 6),  # key 6 deleted in v2
    ]
    assert 1 <= rows[-1]["buckets_rewritten"] <= 4 and rows[-1]["seconds"] > 0


def test_a_rollback_whose_archived_batch_is_gone_changes_nothing_and_names_it(items, tmp_path):
    """The archive pruned outside lakecompact (it only grows): a rollback past a version whose batch is gone would
    make the batch pending without its events, which every read would leave out; it stops, exit 7, naming it."""
    lake, T = items, items.table
    lake.compact()
    catalog = Catalog(lake.spark, lake.config)
    [[hour, batch]] = [pair for pair in manifest(lake, 2)["consumed"]]
    folder = Path(catalog.paths(T).archived(hour, batch).removeprefix("file:"))
    shutil.move(folder, tmp_path / "kept")
    view = lake.view(T)
    with pytest.raises(MissingFile) as caught:
        lake.rollback(T)
    assert str(caught.value) == (
        f"rollback {T}: base v2 folded in batch 2 (hour {hour}), whose archived folder is gone: "
        f"{catalog.paths(T).archived(hour, 2)}; at v1 its events would be lost, so nothing was changed; restore the "
        f"archived folder to roll back"
    )
    assert caught.value.exit_code == 7
    assert (base_version(lake), pending(lake), manifest_versions(lake)) == (2, [], [1, 2])
    assert lake.view(T) == view == as_rows(V2)
    shutil.move(tmp_path / "kept", folder)  # restored: the rollback goes through
    assert lake.rollback(T) == 1
    assert pending(lake) == [2] and lake.view(T) == as_rows(V2)


def test_a_rollback_killed_before_it_retires_the_version_is_undone_by_the_next_run(items, monkeypatch):
    lake, T = items, items.table
    lake.compact()
    # killed with batch 2 pending again and version 2 still the latest manifest: v2 has consumed batch 2
    crash_once(monkeypatch, Manifests, "retire")
    with pytest.raises(Crash):
        lake.rollback(T)
    assert pending(lake) == [2]

    monkeypatch.undo()
    assert lake.compact() == []  # recovery archives batch 2 again; nothing is applied twice
    assert_version_2_committed_once(lake)


def test_a_rollback_killed_before_it_drops_the_feed_partition_leaves_no_rows_of_the_retired_version(items, monkeypatch):
    """The retired version's feed folder goes before its partition: killed in between, the feed holds a partition
    with no folder (read as empty; the next compaction drops it: the number is not used again), never a retired
    version's rows, which a schema change (it registers the feed versions found on disk) would also bring back."""
    lake, T = items, items.table
    lake.compact()
    crash_once(monkeypatch, Catalog, "drop_partitions", when=lambda self, table, specs: table == f"{T}_changes")
    with pytest.raises(Crash):
        lake.rollback(T)
    monkeypatch.undo()
    feed = f"SELECT __version, count(*) AS n FROM `{lake.database}`.`{T}_changes` GROUP BY __version"
    assert (base_version(lake), pending(lake), lake.rows(feed)) == (1, [2], [{"__version": 1, "n": 6}])

    def registered() -> list[int]:
        return sorted(int(p["__version"]) for p in Catalog(lake.spark, lake.config).partitions(f"{T}_changes"))

    assert registered() == [1, 2]
    [report] = lake.compact()
    assert report.version == 3
    assert sorted((r["__version"], r["n"]) for r in lake.rows(feed)) == [(1, 6), (3, 4)]
    assert registered() == [1, 3]


@pytest.fixture(scope="module")
def four_versions(spark, tmp_path_factory):
    """K = 2, 8 buckets, copy-on-write: v1 writes every bucket, v2..v4 rewrite only key 1's bucket."""
    from tests.support.lake import Lake

    lake = Lake(spark, tmp_path_factory.mktemp("keep_versions"), database_name(),
                defaults={"buckets": 8, "keep_versions": 2, "merge_on_read": False})
    pg = topic()
    lake.write([pg.event("c", {"id": i, "name": f"n{i}"}, 1000 + i) for i in KEYS])
    lake.land()
    lake.compact()
    for version in (2, 3, 4):
        lake.write([pg.event("u", {"id": 1, "name": f"n1 v{version}"}, 1000 * version)])
        lake.land()
        [report] = lake.compact()
        assert report.version == version and report.buckets_rewritten == 1
    return lake


KEYS = range(1, 41)


def test_keep_versions_collects_buckets_no_kept_manifest_refers_to(four_versions):
    lake = four_versions
    assert manifest_versions(lake) == [3, 4]
    kept = [manifest(lake, v) for v in (3, 4)]
    referenced = {(folder, int(bucket)) for m in kept for bucket, folder in m["buckets"].items()}
    assert len({b for _, b in referenced}) == 8
    assert {folder for folder, _ in referenced} == {1, 3, 4}  # v1's untouched buckets are still in use
    on_disk = {
        (int(d.parent.name[2:]), int(d.name.split("=")[1]))
        for d in (table_dir(lake) / "base").glob("v=*/__bucket=*")
    }
    assert on_disk == referenced
    for folder, bucket in referenced:
        assert list((table_dir(lake) / "base" / f"v={folder}" / f"__bucket={bucket}").glob("*.parquet"))
    assert base_ids(lake) == list(KEYS)
    view = sorted(lake.view(T), key=lambda r: r["id"])
    assert view == [{"id": i, "name": "n1 v4" if i == 1 else f"n{i}"} for i in KEYS]


def test_history_lists_every_version_also_those_beyond_keep_versions(four_versions):
    lake = four_versions
    rows = history(None, lake.config, T)
    assert [(r["version"], r["state"], r["change_feed"]) for r in rows] == [
        (1, "expired", None), (2, "expired", None), (3, "kept", 3), (4, "current", 4),
    ]
    # v1 wrote all 8 buckets, each later version the one bucket of key 1; rows of the whole version each time
    assert [(r["events_in"], r["buckets_rewritten"], r["rows"], r["live_rows"]) for r in rows] == [
        (len(KEYS), 8, len(KEYS), len(KEYS)), (1, 1, len(KEYS), len(KEYS)), (1, 1, len(KEYS), len(KEYS)),
        (1, 1, len(KEYS), len(KEYS)),
    ]
    with pytest.raises(RollbackError, match=r"can go back to v3 \(keep_versions = 2\), not v1"):
        lake.rollback(T, to_version=1)


def test_keep_versions_deletes_the_folder_of_a_version_nothing_refers_to(four_versions):
    lake = four_versions
    # v2 is referred to by no kept manifest (v3 and v4): its folder goes entirely
    assert sorted(d.name for d in (table_dir(lake) / "base").iterdir()) == ["v=1", "v=3", "v=4"]


def test_the_feed_keeps_the_versions_the_base_keeps(four_versions):
    """The feed lists the kept versions; an expired version's folder goes one compaction after its partition (v2
    expired at v4's compaction and v1 at v3's), so that a reader that listed the partition can still read it."""
    lake = four_versions
    catalog = Catalog(lake.spark, lake.config)

    def registered() -> list[int]:
        return sorted(int(p["__version"]) for p in catalog.partitions(f"{T}_changes"))

    assert registered() == [3, 4]
    assert sorted(d.name for d in (table_dir(lake) / "changes").glob("v=*")) == ["v=2", "v=3", "v=4"]
    assert next(r for r in status(lake.spark, lake.config) if r["table"] == f"{lake.database}.{T}")[
        "change_feed_versions"] == [3, 4]
    catalog.create_changes_table(catalog.require(T))  # as a schema change does: the versions found on disk again
    assert registered() == [3, 4]
    feed = lake.rows(f"SELECT __version, op, key.id AS id FROM `{lake.database}`.`{T}_changes` ORDER BY __version")
    assert feed == [{"__version": 3, "op": "u", "id": 1}, {"__version": 4, "op": "u", "id": 1}]
