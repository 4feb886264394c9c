"""The scenarios, each run once (for a test class or module) and then checked by its tests: source → Debezium →
Kafka → lake for one database (test_postgres_to_lake, test_mariadb_to_lake), and the restarts (test_restarts)."""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support.columns import Table
from tests.e2e.support.common import say, unique
from tests.e2e.support.comparison import (
    Comparison,
    compare_as_of,
    compare_with_source,
    increments_landed_once,
)
from tests.e2e.support.fixtures import SAVE_FIXTURES_ENV, save_fixture
from tests.e2e.support.kafka import DELIVERY_TIMEOUT, end_offsets, wait_delivered
from tests.e2e.support.lake import compact, jvm_cpu_seconds, lake_config, land
from tests.e2e.support.messages import duplicates, op_counts
from tests.e2e.support.sources import MariaDb, Postgres, SourceDb
from tests.e2e.support.verification import lake_tables, verdicts, verify_config, verify_then_damage
from tests.e2e.support.workload import Workload
from tests.support.crash import Crash, crash_once
from tests.support.poll import poll

# -- the scenario of test_postgres_to_lake and test_mariadb_to_lake ------------------------------------------
INITIAL_ROWS = {"accounts": 30, "orders": 36, "audit": 8, "names": 3}


@dataclass
class Scenario:
    db: SourceDb
    workload: Workload
    config: Any = None
    comparisons: list[Comparison] = field(default_factory=list)
    first: list[dict] = field(default_factory=list)  # the messages of the first land
    messages: list[dict] = field(default_factory=list)  # all messages, at the end
    landed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def lake_tables(self) -> list[Table]:
        return [t for t in self.workload.tables if t.name != "names"]

    @property
    def keyed_tables(self) -> list[Table]:
        """The lake's tables with a key, with the columns they have now (those that keep row history)."""
        return [t for t in self.lake_tables if t.key]

    @property
    def topics(self) -> list[str]:
        return sorted(self.db.topic(t.name) for t in self.lake_tables)


def landed_positions(spark, config) -> dict[str, int]:
    """The Kafka positions ("topic:partition" -> next offset) the lake's last committed batch recorded."""
    from lakecompact.lake.catalog import Catalog
    from lakecompact.lake.storage import VersionedState

    catalog = Catalog(spark, config)
    _, state = VersionedState(catalog.storage, f"{catalog.root}/_state/land").latest()
    return dict((state or {}).get("kafka", {}))


def land_names_table(spark, stack, db: SourceDb, table: Table, tmp_path: Path) -> Comparison | str:
    """The `names` table landed alone: its comparison, or the error landing it raised."""
    config = lake_config(stack, tmp_path / "warehouse", f"names_{db.namespace}", [db.topic(table.name)])
    try:
        land(spark, config)
        return compare_with_source(spark, config, db, [table], f"{db.kind} columns named key and payload")[0]
    except Exception as exc:  # noqa: BLE001 - recorded for the test that expects it to work
        say(f"landing {db.topic(table.name)} failed: {type(exc).__name__}: {str(exc)[:300]}")
        return f"{type(exc).__name__}: {str(exc)[:2000]}"


def snapshot_and_connect(spark, stack, db: SourceDb, workload: Workload) -> list[dict]:
    """Tables with rows, then the connector; returns once its initial snapshot (op r) is all in Kafka."""
    db.create_namespace()
    db.run(workload.create_script(INITIAL_ROWS))
    db.register(workload.tables)
    stack.wait_connector_streaming(db.connector)
    return wait_delivered(spark, stack, [db], workload.expected_events(), {}, exact=True)


def write_phase(spark, stack, db: SourceDb, workload: Workload, ops: int, *, exact: bool = True, **features) -> list[dict]:
    db.run(workload.phase_script(ops, **features))
    marker, token = workload.marker_script()
    db.run(marker)
    messages = wait_delivered(spark, stack, [db], workload.expected_events(), {db.kind: token}, exact=exact)
    say(f"{db.kind}: {len(messages)} messages in Kafka after {dict(workload.ops)}: {dict(op_counts(messages))}")
    return messages


def source_to_lake(spark, stack, db: SourceDb, tmp_path: Path, seed: int, *, latest_lake: bool = False,
                   names_table: bool = False) -> Scenario:
    """Snapshot, workload, land, compact, compare; more workload, land, compare, compact, compare.

    Records every comparison instead of stopping at the first difference: each test then reports on its own
    part (tables with a key, the keyless table, Kafka, ...) with every difference found. `latest_lake`: also
    land, from a second lake with starting_offsets = "latest" and a topic pattern, what arrives after its first
    run. `names_table`: also capture a table with columns named `key` and `payload`, landed into a lake of its own.
    """
    started = time.monotonic()
    names = ("accounts", "orders", "audit", "names") if names_table else ("accounts", "orders", "audit")
    scenario = Scenario(db, Workload(db, seed, tables=names))
    workload = scenario.workload
    try:
        snapshot_and_connect(spark, stack, db, workload)
        moments = [db.moment(scenario.keyed_tables)]  # what the source held, for `sql --as-of` (row history)
        scenario.first = write_phase(spark, stack, db, workload, 110, add_column="accounts", transaction=True,
                                     key_change=True)
        moments.append(db.moment(scenario.keyed_tables))
        if latest_lake:
            pattern = re.escape(f"{db.topic_prefix}.{db.namespace}.") + "(accounts|orders|audit)"
            latest = lake_config(stack, tmp_path / "warehouse", f"latest_{db.namespace}", topic_pattern=pattern,
                                 starting_offsets="latest", kafka_options={"security.protocol": "PLAINTEXT"})
            scenario.extra["latest_start"] = end_offsets(spark, stack.KAFKA_BOOTSTRAP, scenario.topics)
            report = land(spark, latest)
            scenario.extra["latest_first_run"] = report.events_in
            scenario.extra["latest_recorded"] = landed_positions(spark, latest)
        if names_table:
            scenario.extra["names"] = land_names_table(spark, stack, db, workload.table("names"), tmp_path)
        config = scenario.config = lake_config(stack, tmp_path / "warehouse", f"lake_{db.namespace}", scenario.topics,
                                               tables={db.lake_table(t.name): {"row_history": True} for t in scenario.keyed_tables})
        land(spark, config)
        compact(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} compaction 1")

        scenario.messages = write_phase(spark, stack, db, workload, 70, add_column="orders", copy_earlier_row=True)
        moments.append(db.moment(scenario.keyed_tables))
        land(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} landed, not compacted")
        scenario.extra["as_of"] = compare_as_of(spark, config, db, moments, f"{db.kind} landed, not compacted")
        compact(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} compaction 2")
        scenario.extra["as_of"] += compare_as_of(spark, config, db, moments, f"{db.kind} compaction 2")
        scenario.landed = increments_landed_once(spark, config, db, scenario.lake_tables, scenario.messages)
        while_writing = verify_while_writing(spark, stack, config, db, workload)
        scenario.extra["verify"] = verify_then_damage(spark, config, db, while_writing)  # last: it stops the connector
        if latest_lake:  # what the next run of the "latest" lake would land: all that came after its first run
            from lakecompact.landing import kafka

            scenario.extra["latest_next_plan"] = kafka.plan(spark, latest.source, scenario.extra["latest_recorded"])
            scenario.extra["latest_end"] = end_offsets(spark, stack.KAFKA_BOOTSTRAP, scenario.topics)
        if os.environ.get(SAVE_FIXTURES_ENV) == "1":
            save_fixture(db.kind, db, scenario.lake_tables, scenario.messages, scenario.first)
            if names_table:
                names = [m for m in scenario.messages if m["topic"] == db.topic("names")]
                save_fixture(f"{db.kind}_names", db, [workload.table("names")], names, names)
        scenario.seconds = time.monotonic() - started
        say(f"{db.kind}: scenario done in {scenario.seconds:.0f}s ({jvm_cpu_seconds(spark):.0f}s JVM CPU so far)")
        return scenario
    finally:
        try:
            db.unregister()
        finally:
            db.drop_namespace()


# -- the scenario of test_restarts: Kafka Connect killed mid-workload, `land` crashed mid-batch -------------
@dataclass
class Restarts:
    dbs: list[SourceDb]
    workloads: dict[str, Workload]
    comparisons: list[Comparison] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)
    landed: int = 0
    facts: dict[str, Any] = field(default_factory=dict)

    def tables(self, db: SourceDb) -> list[Table]:
        return self.workloads[db.kind].tables

    @property
    def topics(self) -> list[str]:
        return sorted(db.topic(t.name) for db in self.dbs for t in self.tables(db))


def expected_events(workloads: dict[str, Workload]) -> dict[str, int]:
    return {topic: n for w in workloads.values() for topic, n in w.expected_events().items()}


def verify_while_writing(spark, stack, config, db: SourceDb, workload: Workload) -> dict[str, dict]:
    """verify while a writer changes the source and a thread lands what Debezium sends: the lake is behind when
    verify reads, and catches up while it waits. Then the writes end and the lake lands all of them."""
    writer = Writer([(db, workload, workload.phase_statements(80))], chunk=1, pause=0.3)
    stop, landed, failures = threading.Event(), [], []

    def land_until_stopped():
        try:
            while not stop.is_set():
                landed.append(land(spark, config).events_in)
                if not landed[-1]:
                    stop.wait(1.0)  # paces a lander with nothing to land
        except Exception as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    lander = threading.Thread(target=land_until_stopped, daemon=True)
    writer.start()
    # verify starts once the source is ahead of the lake
    poll(lambda: writer.done >= 5 or not writer.is_alive(), 60, "the writer's first statements", interval=0.1)
    lander.start()
    try:
        found = verdicts(spark, verify_config(config, db, settle_seconds=30), lake_tables(db))
        writes_during_verify = writer.is_alive()
    finally:
        stop.set()
        lander.join(timeout=300)
        writer.join(timeout=300)
    assert not failures and writer.error is None, f"landing failed: {failures}; writing failed: {writer.error}"
    marker, token = workload.marker_script()
    db.run(marker)
    wait_delivered(spark, stack, [db], workload.expected_events(), {db.kind: token}, exact=True)
    land(spark, config)
    say(f"{db.kind}: verify while writing: {writer.done} statements, {len(landed)} lands of {sum(landed)} events; "
        f"writes still going when verify ended: {writes_during_verify}")
    return {v.table: {"found": {k: n for k, n in v.found.items() if n}, "differing_buckets": v.differing_buckets,
                      "in_flight": v.in_flight, "writes_during_verify": writes_during_verify} for v in found}


class Writer(threading.Thread):
    """Runs statements against the source databases in small scripts, alternating between them."""

    def __init__(self, jobs: list[tuple[SourceDb, Workload, list[str]]], chunk: int = 3, pause: float = 0.1):
        super().__init__(daemon=True)
        per_db = [[(db, workload._script("".join(statements[i:i + chunk]))) for i in range(0, len(statements), chunk)]
                  for db, workload, statements in jobs]
        self.scripts = [item for group in itertools.zip_longest(*per_db) for item in group if item]
        self.pause, self.done, self.error = pause, 0, None

    def run(self):
        try:
            for db, script in self.scripts:
                db.run(script)
                self.done += 1
                time.sleep(self.pause)  # pacing: the workload is spread over a few seconds, so Connect dies mid-way
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def kill_connect_mid_workload(spark, stack, restarts: Restarts, ops: int) -> dict:
    """Writes go on while Connect is killed (SIGKILL) as soon as their events flow into Kafka."""
    jobs = [(db, restarts.workloads[db.kind], restarts.workloads[db.kind].phase_statements(ops, transaction=True))
            for db in restarts.dbs]
    before = end_offsets(spark, stack.KAFKA_BOOTSTRAP, restarts.topics)
    wanted = sum(before.values()) + 10
    writer = Writer(jobs)
    writer.start()
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    previous = sum(before.values())
    while True:
        total = sum(end_offsets(spark, stack.KAFKA_BOOTSTRAP, restarts.topics).values())
        if total >= wanted and total > previous:  # events arrived since the last poll: some are not committed yet
            break
        assert writer.is_alive() or total < wanted, "the workload ended before Connect could be killed mid-way"
        assert time.monotonic() < deadline, f"no events reached Kafka ({total} of {wanted})"
        previous = total
        time.sleep(0.1)
    stack.kill_connect()
    at_kill = {"scripts_done": writer.done, "scripts": len(writer.scripts), "messages": total}
    say(f"killed Kafka Connect (SIGKILL) after {writer.done} of {len(writer.scripts)} workload scripts, "
        f"{total - sum(before.values())} new messages in Kafka")
    writer.join(timeout=600)
    assert writer.error is None, f"workload failed: {writer.error}"
    return at_kill


def crash_landing_mid_batch(spark, config) -> dict:
    """`land` dies right after the batch's first table's increment is written and registered, before the other
    tables and the commit (docs/design.md "Landing protocol": the intent is written first; a rerun lands the same batch again)."""
    from lakecompact.landing import land as land_module
    from lakecompact.landing.increments import IncrementWriter

    calls = []
    original = IncrementWriter.commit

    def write_then_crash(self, table, intent, location, written):
        original(self, table, intent, location, written)  # written and registered in the metastore ...
        calls.append(table)
        raise Crash(f"crash after writing {table} in batch {intent.batch}")  # ... then the process dies

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(IncrementWriter, "commit", write_then_crash)
        with pytest.raises(Crash):
            land(spark, config)
    landing = land_module.Landing(spark, config)
    intent = landing.storage.read_json(landing.intent_path) if landing.storage.exists(landing.intent_path) else None
    say(f"land crashed mid-batch after writing {calls}; intent left: batch {intent and intent['batch']}")
    return {"written_before_crash": calls, "intent": intent}


def crash_after_commit(spark, config) -> dict:
    """`land` dies after its state file is written, before it removes the intent (the next run must see that the
    intent's batch was committed, and not land it again)."""
    from lakecompact.lake.storage import Storage

    with pytest.MonkeyPatch.context() as patch:
        crashed = crash_once(patch, Storage, "delete", lambda self, path: path.endswith("land-intent.json"))
        try:
            report = land(spark, config)
        except Crash:
            report = None
    return {"crashed": bool(crashed), "report": report}


MAX_EVENTS_PER_BATCH = 120


def restarts_scenario(spark, stack, tmp_path: Path, seeds: dict[str, int]) -> Restarts:
    started = time.monotonic()
    dbs = [Postgres(stack, unique("e2e_rpg")), MariaDb(stack, unique("e2e_rmaria"))]
    tables = {"postgres": ("accounts", "audit"), "mariadb": ("accounts",)}  # a keyless table once is enough
    workloads = {db.kind: Workload(db, seeds[db.kind], tables=tables[db.kind], equal_rows=False) for db in dbs}
    result = Restarts(dbs, workloads)
    try:
        for db in dbs:
            db.create_namespace()
            db.run(workloads[db.kind].create_script({"accounts": 20, "audit": 5}))
            db.register(workloads[db.kind].tables)
        for db in dbs:
            stack.wait_connector_streaming(db.connector)
        wait_delivered(spark, stack, dbs, expected_events(workloads), {}, exact=True)

        config = lake_config(stack, tmp_path / "warehouse", unique("restarts"),
                             topic_pattern="|".join(re.escape(f"{db.topic_prefix}.") + ".*" for db in dbs),
                             max_events_per_batch=MAX_EVENTS_PER_BATCH)
        result.facts["kills"] = []
        for attempt in range(1, 4):
            # 1. Connect dies while the workload runs (the first time: what reached Kafka is landed, with a
            # crash right after the batch's commit, and compacted while Connect is down)
            result.facts["kills"].append(kill_connect_mid_workload(spark, stack, result, 60))
            if attempt == 1:
                result.facts["after_commit"] = crash_after_commit(spark, config)
                compact(spark, config)
            # 2. Connect comes back; Debezium sends again what it had not committed when it died
            stack.start_connect()
            for db in dbs:
                stack.wait_connector_streaming(db.connector)
            markers = {}
            for db in dbs:
                marker, markers[db.kind] = workloads[db.kind].marker_script()
                db.run(marker)
            messages = wait_delivered(spark, stack, dbs, expected_events(workloads), markers, exact=False)
            for db in dbs:
                mine = [m for m in messages if m["topic"].startswith(f"{db.topic_prefix}.")]
                result.duplicates[db.kind] = duplicates(mine)
            say(f"kill {attempt}: events delivered more than once after the restart: {result.duplicates}")
            if sum(result.duplicates.values()):
                break  # else Connect had committed its offsets just before it died: kill it again

        # 3. more workload, with a column added
        markers = {}
        for db in dbs:
            workload = workloads[db.kind]
            db.run(workload.phase_script(40, add_column="accounts"))
            marker, markers[db.kind] = workload.marker_script()
            db.run(marker)
        result.messages = wait_delivered(spark, stack, dbs, expected_events(workloads), markers, exact=False)

        # 4. land (which first finds batch 1's intent committed) crashes mid-batch and is run again
        result.facts["crash"] = crash_landing_mid_batch(spark, config)
        result.facts["rerun"] = land(spark, config)
        result.facts["more"] = []  # max_events_per_batch: the rest comes in more batches, each run lands one
        while len(result.facts["more"]) < 10:
            report = land(spark, config)
            result.facts["more"].append(report)
            if report.batch is None:
                break
        compact(spark, config)
        for db in dbs:
            result.comparisons += compare_with_source(spark, config, db, result.tables(db), f"{db.kind} after restarts")
            result.landed += increments_landed_once(spark, config, db, result.tables(db), result.messages)
        say(f"restarts: scenario done in {time.monotonic() - started:.0f}s ({jvm_cpu_seconds(spark):.0f}s JVM CPU so far)")
        return result
    finally:
        stack.start_connect()  # no-op when it runs
        for db in dbs:
            try:
                db.unregister()
            finally:
                db.drop_namespace()
