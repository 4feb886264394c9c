"""Landing is exactly once: reruns land only what is new, and a crash anywhere in a batch is repaired by the
next run without losing or doubling an event (docs/design.md "Landing protocol")."""

from __future__ import annotations

import json
import threading

import pytest

from lakecompact.lake.catalog import Catalog
from lakecompact.lake.storage import VersionedState
from lakecompact.landing import decode, files
from lakecompact.landing import land as land_module
from lakecompact.landing.increments import IncrementWriter
from tests.support.crash import Crash, crash_once, registering
from tests.support.debezium import INT, TEXT, Topic

ITEMS = "public_items"
ORDERS = "public_orders"
LOG = "public_audit_log"  # sorts before the others: landed first in a batch


def topics():
    items = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    orders = Topic("pg.public.orders", [("order_id", INT), ("item", INT)], ["order_id"])
    return items, orders


def increments(lake, table: str) -> list[tuple]:
    name = f"`{lake.database}`.`{table}_increments`"
    lake.spark.catalog.refreshTable(name)
    rows = lake.spark.sql(f"SELECT __kafka_partition, __kafka_offset, __batch FROM {name}").collect()
    return sorted(tuple(r) for r in rows)


def offsets(lake, table: str) -> list[int]:
    return [offset for _, offset, _ in increments(lake, table)]


def test_rerun_lands_only_new_lines_and_new_files(lake):
    items, orders = topics()
    first = lake.write([items.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in (1, 2, 3)], name="a.jsonl")

    assert lake.land().rows_out == {ITEMS: 3}
    nothing = lake.land()
    assert nothing.batch is None and nothing.rows_out == {}

    lake.write([items.event("u", {"id": 1, "name": "n1 again"}, 200)], name=first.name)  # appended to a known file
    lake.write([orders.event("c", {"order_id": 10, "item": 1}, 300), items.event("c", {"id": 4, "name": "n4"}, 301)],
               name="b.jsonl")  # a new file
    report = lake.land()
    assert report.rows_out == {ITEMS: 2, ORDERS: 1}

    assert offsets(lake, ITEMS) == [0, 1, 2, 3, 4]
    assert [batch for *_, batch in increments(lake, ITEMS)] == [1, 1, 1, 2, 2]
    assert offsets(lake, ORDERS) == [0]
    assert lake.view(ITEMS) == [{"id": 1, "name": "n1 again"}, {"id": 2, "name": "n2"}, {"id": 3, "name": "n3"},
                                {"id": 4, "name": "n4"}]
    assert lake.view(ORDERS) == [{"order_id": 10, "item": 1}]
    assert lake.land().batch is None


@pytest.mark.parametrize(
    "crash_at",
    [
        # the first table's increment is written and registered, the second one's write is not
        pytest.param((Catalog, "add_partitions", registering(f"{ORDERS}_increments")), id="between-tables"),
        # every increment is written and registered, the quarantine write (after them) fails
        pytest.param((IncrementWriter, "write_quarantine", lambda *a, **k: True), id="before-quarantine"),
    ],
)
def test_crash_in_the_middle_of_a_batch_then_rerun(lake, monkeypatch, crash_at):
    items, orders = topics()
    owner, name, when = crash_at
    lake.write([
        items.event("c", {"id": 1, "name": "one"}, 100),
        orders.event("c", {"order_id": 10, "item": 1}, 101),
        "{ not json",
        items.event("c", {"id": 2, "name": "two"}, 102),
        orders.event("c", {"order_id": 11, "item": 2}, 103),
    ])
    crash_once(monkeypatch, owner, name, when)
    with pytest.raises(Crash):
        lake.land()
    assert offsets(lake, ITEMS) == [0, 1]  # items (sorted first) made it before the crash

    # the source moves on before the rerun
    lake.write([items.event("u", {"id": 1, "name": "one, later"}, 200)])

    rerun = lake.land()
    assert rerun.batch == 1  # the interrupted batch, from its intent: the same input, the same folders
    assert rerun.rows_out == {ITEMS: 2, ORDERS: 2}
    assert rerun.quarantined == {"_unknown": 1}
    assert lake.land().rows_out == {ITEMS: 1}  # then the line that came after the crash
    assert lake.land().batch is None

    assert increments(lake, ITEMS) == [(0, 0, 1), (0, 1, 1), (0, 2, 2)]
    assert increments(lake, ORDERS) == [(0, 0, 1), (0, 1, 1)]
    assert lake.view(ITEMS) == [{"id": 1, "name": "one, later"}, {"id": 2, "name": "two"}]
    assert lake.view(ORDERS) == [{"order_id": 10, "item": 1}, {"order_id": 11, "item": 2}]
    catalog = Catalog(lake.spark, lake.config)
    assert lake.spark.read.parquet(f"{catalog.root}/_quarantine").count() == 1


def test_a_rerun_leaves_an_increment_the_batch_had_registered_as_it_is(lake, monkeypatch):
    """The rerun lands the interrupted batch again, but not over an increment it had already registered: a
    compaction (under its own lock) may be reading that folder or folding it in meanwhile. Written again, the
    folder was deleted first: a compaction then found a registered batch without its folder (and stopped), or
    read the part of the files written so far and archived the batch with the rest."""
    items, orders = topics()
    lake.write([items.event("c", {"id": 1, "name": "one"}, 100), orders.event("c", {"order_id": 10, "item": 1}, 101),
                items.event("c", {"id": 2, "name": "two"}, 102)])
    crash_once(monkeypatch, Catalog, "add_partitions", registering(f"{ORDERS}_increments"))
    with pytest.raises(Crash):
        lake.land()
    catalog = Catalog(lake.spark, lake.config)
    [registered] = catalog.partitions(f"{ITEMS}_increments")
    folder = catalog.paths(ITEMS).increment(registered["__hour"], int(registered["__batch"]))
    files_before = catalog.storage.list_names(folder)
    delete = type(catalog.storage).delete
    compacted = []

    def compact_when_the_folder_goes(self, path):
        gone = delete(self, path)
        if path == folder and not compacted:
            compacted.append(lake.compact(ITEMS))  # a compaction that lists the batch now
        return gone

    monkeypatch.setattr(type(catalog.storage), "delete", compact_when_the_folder_goes)
    rerun = lake.land()
    monkeypatch.undo()
    assert (rerun.batch, rerun.rows_out) == (1, {ITEMS: 2, ORDERS: 1})
    assert compacted == [] and catalog.storage.list_names(folder) == files_before
    assert offsets(lake, ITEMS) == [0, 1] and offsets(lake, ORDERS) == [0]
    lake.compact()
    assert lake.view(ITEMS) == [{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]
    assert lake.view(ORDERS) == [{"order_id": 10, "item": 1}]


def test_crash_after_the_state_write_before_the_intent_removal(lake, monkeypatch):
    items, _ = topics()
    lake.write([items.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in (1, 2)])
    crash_once(monkeypatch, VersionedState, "prune")  # runs between the state write and the intent removal
    with pytest.raises(Crash):
        lake.land()
    catalog = Catalog(lake.spark, lake.config)
    assert catalog.storage.exists(f"{catalog.root}/_state/land-intent.json")

    assert lake.land().batch is None  # the batch was committed: nothing is landed again
    assert not catalog.storage.exists(f"{catalog.root}/_state/land-intent.json")
    lake.write([items.event("c", {"id": 3, "name": "n3"}, 103)])
    assert lake.land().rows_out == {ITEMS: 1}

    assert increments(lake, ITEMS) == [(0, 0, 1), (0, 1, 1), (0, 2, 2)]
    assert lake.view(ITEMS) == [{"id": 1, "name": "n1"}, {"id": 2, "name": "n2"}, {"id": 3, "name": "n3"}]


@pytest.mark.slow
def test_compaction_between_a_crashed_batch_and_its_rerun_doubles_nothing(lake, monkeypatch):
    """A compactor scheduled independently may fold in (and archive) the increments of an interrupted batch
    before the landing rerun rewrites them; an append-only table must still hold each event once."""
    log = Topic("pg.public.audit_log", [("at", INT), ("what", TEXT)], None)
    items, _ = topics()
    lake.write([
        log.event("c", {"at": 1, "what": "login"}, 100),
        items.event("c", {"id": 1, "name": "one"}, 101),
        log.event("c", {"at": 2, "what": "logout"}, 102),
    ])
    crash_once(monkeypatch, Catalog, "add_partitions", registering(f"{ITEMS}_increments"))  # audit_log registered
    with pytest.raises(Crash):
        lake.land()
    lake.compact(LOG)  # folds batch 1 of audit_log into base v1 and archives it
    assert lake.land().batch == 1  # the rerun lands batch 1 again
    assert sorted(r["at"] for r in lake.view(LOG)) == [1, 2]
    lake.compact()
    assert sorted(r["at"] for r in lake.view(LOG)) == [1, 2]
    assert lake.view(ITEMS) == [{"id": 1, "name": "one"}]


@pytest.mark.parametrize("name", ["part 1+2.jsonl", "100%.jsonl"], ids=["space-plus", "percent"])
@pytest.mark.parametrize("big", [False, True], ids=["read-whole", "streamed"])
def test_file_names_that_need_escaping_in_a_uri(lake, monkeypatch, name, big):
    """Spark names files by URI (a space is %20, % is %25), Hadoop's glob by path: both must name the same file,
    whether the file is read whole or streamed (its lines counted per file as Spark spells it)."""
    if big:
        monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)
    items, _ = topics()
    lake.write([items.event("c", {"id": 1, "name": "one"}, 101)], name=name)
    lake.write([items.event("c", {"id": 2, "name": "two"}, 102)], name="plain.jsonl")
    assert lake.land().rows_out == {ITEMS: 2}
    lake.write([items.event("u", {"id": 1, "name": "one, later"}, 201)], name=name)
    assert lake.land().rows_out == {ITEMS: 1}
    assert lake.land().batch is None
    assert lake.view(ITEMS) == [{"id": 1, "name": "one, later"}, {"id": 2, "name": "two"}]


@pytest.mark.parametrize("crash_at", ["registering the increment", "after the state write"])
def test_a_crashed_requeue_is_finished_by_the_next_land(lake, monkeypatch, crash_at):
    items, _ = topics()
    schemaless = topics()[0]
    schemaless.with_schema = False
    lake.write([schemaless.event("c", {"id": 1, "name": "early"}, 100)], name="early.jsonl")
    assert lake.land().quarantined == {ITEMS: 1}  # no schema known yet
    lake.write([items.event("c", {"id": 2, "name": "n2"}, 200)], name="later.jsonl")
    assert lake.land().rows_out == {ITEMS: 1}
    if crash_at == "after the state write":
        crash_once(monkeypatch, VersionedState, "prune")
    else:
        crash_once(monkeypatch, Catalog, "add_partitions", registering(f"{ITEMS}_increments"))
    with pytest.raises(Crash):
        lake.land(requeue=ITEMS)

    lake.land()  # finishes (or, if committed, clears up after) the requeue, whatever the source holds
    catalog = Catalog(lake.spark, lake.config)
    assert not catalog.storage.list_names(catalog.paths(ITEMS).quarantine)
    assert offsets(lake, ITEMS) == [0, 0]  # each event once: partition 0, offset 0 of either file
    assert lake.view(ITEMS, order="id") == [{"id": 1, "name": "early"}, {"id": 2, "name": "n2"}]


def test_the_database_is_made_while_the_batch_is_read_and_a_failure_there_lands_nothing(lake, monkeypatch):
    """A new process's first metastore call takes seconds: the database is made in a thread of its own while the
    batch is planned and read (its first lines, which say how each topic lands; the tables are made after them).
    Its failure stops the run before anything is created, registered or recorded."""
    items, _ = topics()
    lake.write([items.event("c", {"id": 1, "name": "n1"}, 101)])
    seen = []
    read = decode.as_written_samples

    def samples(frame):
        seen.append("batch read")
        return read(frame)

    def database_down(self):
        seen.append(f"database made in {threading.current_thread().name}")
        raise Crash("the metastore is down")

    monkeypatch.setattr(decode, "as_written_samples", samples)
    with monkeypatch.context() as down:
        down.setattr(Catalog, "ensure_database", database_down)
        with pytest.raises(Crash, match="the metastore is down"):
            lake.land()
    assert seen[0].startswith("database made in metastore") and "batch read" in seen
    assert Catalog(lake.spark, lake.config).schema(ITEMS) is None  # no table made, no increment registered
    report = lake.land()
    assert (report.batch, report.rows_out) == (1, {ITEMS: 1})  # the same batch, landed once
    assert offsets(lake, ITEMS) == [0]


def test_a_second_lander_exits_with_a_clear_message(lake):
    """`requeue` by hand beside a scheduled `land` would plan the same batch number: one lander at a time."""
    from lakecompact.errors import LockHeld
    from lakecompact.lake.storage import exclusive_lock

    items, _ = topics()
    lake.write([items.event("c", {"id": 1, "name": "n1"}, 101)])
    catalog = Catalog(lake.spark, lake.config)
    lock = f"{catalog.root}/_state/land.lock"
    with exclusive_lock(catalog.storage, lock, "held by the test"):
        with pytest.raises(LockHeld) as caught:
            lake.land()
        assert f"database {lake.database} is being landed into" in str(caught.value) and lock in str(caught.value)
    assert lake.land().rows_out == {ITEMS: 1}


def test_a_file_read_in_many_splits_keeps_exact_line_numbers(lake, monkeypatch):
    """A big file is streamed in splits, not held whole: each line's number (its place in the batch's record and
    its quarantine origin) must still be exact across split boundaries."""
    monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)  # every file counts as big
    items, _ = topics()
    lines = [items.event("c", {"id": i, "name": f"name {i:04d}"}, 1000 + i) for i in range(1, 121)]
    lines[60] = '{"topic": "pg.public.items", not json}'  # line 61 of the file
    path = lake.write(lines, name="big.jsonl")
    assert path.stat().st_size > 6 * 4096  # more than six splits
    settings = {"spark.sql.files.maxPartitionBytes": "4096", "spark.sql.files.openCostInBytes": "0"}
    before = {key: lake.spark.conf.get(key) for key in settings}
    try:
        for key, value in settings.items():
            lake.spark.conf.set(key, value)
        report = lake.land()
        lake.write([items.event("u", {"id": 1, "name": "appended"}, 5000)], name="big.jsonl")
        appended = lake.land()
    finally:
        for key, value in before.items():
            lake.spark.conf.set(key, value)

    assert report.rows_out == {ITEMS: 119} and report.quarantined == {"_unknown": 1}
    assert offsets(lake, ITEMS) == [o for o in range(121) if o != 60]  # kcat's offsets, each once
    catalog = Catalog(lake.spark, lake.config)
    [bad] = lake.spark.read.parquet(f"{catalog.root}/_quarantine").collect()
    assert bad["__origin"].endswith("big.jsonl:61")
    assert appended.rows_out == {ITEMS: 1}  # only the new line 121
    assert lake.view(ITEMS, order="id")[0] == {"id": 1, "name": "appended"}


def test_a_streamed_last_line_still_being_written_waits_for_its_end(lake, monkeypatch):
    """The streamed path of a big file sees lines, not newlines: the file's last byte tells a finished line."""
    monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)
    items, _ = topics()
    whole = json.dumps(items.event("c", {"id": 2, "name": "two"}, 102))
    path = lake.write([items.event("c", {"id": 1, "name": "one"}, 101)])
    with open(path, "a") as out:
        out.write(whole[:40])  # kcat is in the middle of this line
    assert lake.land().rows_out == {ITEMS: 1}
    with open(path, "a") as out:
        out.write(whole[40:])  # finished, without its newline yet: a whole JSON object is taken
    assert lake.land().rows_out == {ITEMS: 1}
    with open(path, "a") as out:
        out.write("\n")
    assert lake.land().batch is None  # the newline alone adds no line
    lake.write([items.event("c", {"id": 3, "name": "three"}, 103)])
    assert lake.land().rows_out == {ITEMS: 1}
    assert [r["id"] for r in lake.view(ITEMS, order="id")] == [1, 2, 3]


def test_a_big_file_that_grows_after_its_batch_is_planned_lands_the_planned_lines(lake, monkeypatch):
    """A big file planned whole is read in one pass without line numbers, as long as it is the size it was planned
    at: grown before the rerun of its batch, its lines are numbered to land only the planned ones; grown while Spark
    reads it, the read fails and is done again with numbers, rather than landing lines the batch did not plan."""
    monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)  # every file counts as big
    items, _ = topics()
    path = lake.write([items.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in (1, 2, 3)], name="big.jsonl")
    planned, looked = files.unchanged_whole, []

    def racing(storage, ranges):
        seen = planned(storage, ranges)  # the driver finds the file the size it was planned at...
        if not looked:  # ...then kcat appends, before Spark lists it
            lake.write([items.event("u", {"id": 1, "name": "later"}, 200)], name=path.name)
        looked.append([r.path for r in seen])
        return seen

    monkeypatch.setattr(files, "unchanged_whole", racing)
    report = lake.land()
    assert len(looked) == 1 and looked[0][0].endswith("big.jsonl")  # the one-pass read that failed
    assert report.batch == 1 and report.rows_out == {ITEMS: 3}  # read again by number: the planned lines
    assert offsets(lake, ITEMS) == [0, 1, 2]

    lake.write([items.event("c", {"id": 4, "name": "n4"}, 300)], name="second.jsonl")
    crash_once(monkeypatch, land_module.Landing, "_land_read")
    with pytest.raises(Crash):
        lake.land()  # planned: the new lines of big.jsonl (not whole) and second.jsonl, whole
    lake.write([items.event("c", {"id": 5, "name": "n5"}, 400)], name="second.jsonl")  # grown before the rerun
    assert lake.land().rows_out == {ITEMS: 2}  # the rerun: line 4 of big.jsonl, line 1 of second.jsonl
    assert looked[-1] == []  # second.jsonl is no longer the size it was planned at: numbered
    assert lake.land().rows_out == {ITEMS: 1}  # then its line appended after the plan
    assert offsets(lake, ITEMS) == [0, 1, 2, 3, 4, 5]  # kcat offsets, each once
    assert [row["id"] for row in lake.view(ITEMS, order="id")] == [1, 2, 3, 4, 5]
    assert lake.view(ITEMS, order="id")[0] == {"id": 1, "name": "later"}


def test_a_big_file_that_grows_after_spark_listed_it_lands_the_planned_lines(lake, monkeypatch):
    """Spark reads a text file's last split up to the size it listed and then one line more (a split reads the line
    that starts at its end; the next split skips it): a line appended after the listing must not join the batch that
    read the file in one pass without line numbers."""
    monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)  # every file counts as big
    items, _ = topics()
    path = lake.write([items.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in (1, 2, 3)], name="big.jsonl")
    listed, appended = files._unnumbered_lines, []

    def appending_after_the_listing(spark, ranges):
        lines = listed(spark, ranges)  # Spark has listed the file at the size it was planned at...
        if not appended:  # ...then kcat appends, before the tasks read it
            lake.write([items.event("u", {"id": 1, "name": "later"}, 200)], name=path.name)
            appended.append([r.path for r in ranges])
        return lines

    monkeypatch.setattr(files, "_unnumbered_lines", appending_after_the_listing)
    report = lake.land()
    assert appended and report.batch == 1 and report.rows_out == {ITEMS: 3}  # the planned lines only
    assert offsets(lake, ITEMS) == [0, 1, 2]
    assert lake.land().rows_out == {ITEMS: 1}  # the appended line, in the next batch
    assert [batch for *_, batch in increments(lake, ITEMS)] == [1, 1, 1, 2]
