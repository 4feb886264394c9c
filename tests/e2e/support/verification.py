"""`lakecompact verify` on a scenario's lake: once as the pipeline left it, once after changes made at the source
with the connector stopped, which the lake never sees (what each should find, by kind and key)."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from tests.e2e.support.common import say
from tests.e2e.support.sources import SourceDb
from tests.support.poll import poll

NEW_KEY = 1_000_000  # an accounts key the workload never makes
SIGNAL_TABLE = "debezium_signal"  # the repair connector's signalling table


@dataclass
class Verification:
    equal: dict[str, dict[str, int]]  # per lake table: what verify found on the lake as built (nothing, if right)
    while_writing: dict[str, dict]  # ... while writes went on and the lake landed them: found, buckets, in flight
    damaged: dict[str, dict[str, int]]  # ... after the damage
    repaired: dict[str, dict[str, int]]  # ... after repair, its statements at the source, land and compact
    differences: dict[str, set[tuple[str, str, tuple[str, ...]]]]  # per table: (kind, key, columns) in <t>_verify
    expected: dict[str, set[tuple[str, str, tuple[str, ...]]]]


def verdicts(spark, config, tables: list[str]) -> list:
    from lakecompact.verify.verify import LakeDiffers, verify

    try:
        return verify(spark, config, tables)
    except LakeDiffers as differs:
        return differs.verdicts


def _found(spark, config, tables: list[str]) -> dict[str, dict[str, int]]:
    return {v.table: {kind: n for kind, n in v.found.items() if n} for v in verdicts(spark, config, tables)}


def verify_config(config, db: SourceDb, settle_seconds: int):
    from lakecompact.config import VerifyConfig

    s = db.settings
    return dataclasses.replace(config, verify=VerifyConfig(
        jdbc_url=db.jdbc_url(), user=s.user, password=s.password, buckets=16, read_partitions=2,
        settle_seconds=settle_seconds))


def lake_tables(db: SourceDb) -> list[str]:
    return [db.lake_table(t) for t in ("accounts", "orders", "audit")]


def _one_value(db: SourceDb, query: str) -> str:
    return db.run(query)[0].strip()


def verify_then_damage(spark, config, db: SourceDb, while_writing: dict[str, dict]) -> Verification:
    """verify on the lake as built; then, the connector gone: the files of accounts' latest landed batch deleted in
    the lake, and at the source an accounts row updated, one deleted, one inserted, and an audit row inserted;
    verify again (what it found while writes went on: `while_writing`).
    The connector never lands the damage: verify waits a few seconds for the lake, then names it."""
    from lakecompact.naming import verify_table

    config = verify_config(config, db, settle_seconds=3)
    tables = lake_tables(db)
    equal = _found(spark, config, tables)

    db.unregister()
    lost = remove_latest_batch(spark, config, db.lake_table("accounts"))
    accounts, audit = db.qualified("accounts"), db.qualified("audit")
    lost_ids = ", ".join(json.loads(key)[0] for _, key, _ in lost)
    others = f" WHERE id NOT IN ({lost_ids})"  # each key is damaged one way only
    updated = _one_value(db, f"SELECT min(id) FROM {accounts}{others};")
    deleted = _one_value(db, f"SELECT max(id) FROM {accounts}{others};")
    # unregister returned once the connector's log reader had stopped: none of this reaches Kafka
    db.run(f"UPDATE {accounts} SET score = 12345.25 WHERE id = {updated};\n"
           f"DELETE FROM {accounts} WHERE id = {deleted};\n"
           f"INSERT INTO {accounts} (id, name) VALUES ({NEW_KEY}, 'inserted, never captured');\n"
           f"INSERT INTO {audit} (seq, kind) VALUES (999999, 'uncaptured');\n")
    say(f"{db.kind}: damaged the source with the connector gone: accounts {updated} updated, {deleted} deleted, "
        f"{NEW_KEY} inserted; one audit row inserted")
    damaged = _found(spark, config, tables)
    differences = {}
    for table in tables:
        rows = spark.table(f"`{config.database}`.`{verify_table(table)}`").collect() \
            if spark.catalog.tableExists(f"`{config.database}`.`{verify_table(table)}`") else []
        differences[table] = {(r["kind"], r["key"], tuple(r["columns"])) for r in rows}
    expected = {
        db.lake_table("accounts"): {("different values", f'["{updated}"]', ("score",)),
                                    ("extra in the lake", f'["{deleted}"]', ()),
                                    ("missing in the lake", f'["{NEW_KEY}"]', ())} | lost,
        db.lake_table("orders"): set(),
        db.lake_table("audit"): {("missing in the lake", None, ())},
    }
    again = [k for kind, k, _ in expected[db.lake_table("accounts")] if kind != "extra in the lake"]
    gone = [k for kind, k, _ in expected[db.lake_table("accounts")] if kind == "extra in the lake"]
    repaired = repair_then_verify(spark, config, db, tables, again=again, gone=gone)
    return Verification(equal, while_writing, damaged, repaired, differences, expected)


def repair_then_verify(spark, config, db: SourceDb, tables: list[str], *, again: list[str], gone: list[str]) -> dict:
    """A connector made again without a snapshot (the damage stays unseen), with a signalling table; `repair`
    asks it for the divergent keys; its statement deletes the key the source lost; land, compact, verify."""
    from lakecompact.verify.repair import repair
    from tests.e2e.support.lake import compact, land

    stack, signal = db.stack, db.qualified(SIGNAL_TABLE)
    db.run(f"CREATE TABLE {signal} (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT);\n")
    name = f"{db.connector}_repair"
    captured = [db.qualified(t) for t in ("accounts", "orders", "audit", SIGNAL_TABLE)]
    getattr(stack, f"register_{db.kind}_connector")(name, db.topic_prefix, captured, snapshot_mode="no_data",
                                                    **{"signal.data.collection": signal})
    try:
        stack.wait_connector_streaming(name)
        db.run(f"INSERT INTO {db.qualified('audit')} (seq, kind) VALUES (999998, 'streaming');\n")
        _wait_for_event(spark, db, "audit", lambda row: row.get("kind") == "streaming", "the probe row")
        config = dataclasses.replace(config, verify=dataclasses.replace(config.verify, signal_table=signal))
        done = {r.table: r for r in repair(spark, config, tables)}
        accounts = db.lake_table("accounts")
        assert (done[accounts].asked, len(done[accounts].statements)) == (len(again), len(gone)), done
        for key in again:
            _wait_for_event(spark, db, "accounts", lambda row, k=key: _key(row) == k, f"key {key}", op="r")
        for statement in done[accounts].statements:
            db.run(statement + "\n")
        for key in gone:
            _wait_for_event(spark, db, "accounts", lambda row, k=key: _key(row) == k, f"key {key}", op="d")
        land(spark, config)
        compact(spark, config)
        return _found(spark, config, tables)
    finally:
        stack.delete_connector(name)


def _key(row: dict) -> str:
    return f'["{row.get("id")}"]'


def remove_latest_batch(spark, config, table: str) -> set[tuple[str, str, tuple[str, ...]]]:
    """The files of the table's latest landed, not yet compacted batch deleted, as an operator might: what the
    view shows differently after it, as verify names it (kind, key, columns)."""
    from pyspark.sql import functions as F

    from lakecompact.lake.catalog import Catalog
    from lakecompact.naming import increments_table

    catalog = Catalog(spark, config)
    increments = catalog.table(increments_table(table))
    batch = increments.agg(F.max("__batch")).first()[0]
    assert batch is not None, f"{table}: no landed batch left to remove"
    files = [r[0] for r in increments.where(F.col("__batch") == batch).select(F.input_file_name()).distinct().collect()]
    before = _rows_by_key(catalog.table(table))
    for file in files:
        os.remove(file.removeprefix("file:"))
    catalog.refresh(increments_table(table))
    after = _rows_by_key(catalog.table(table))
    say(f"removed batch {batch} of {table}: {len(files)} files")
    lost = set()
    for key in before.keys() | after.keys():
        if key not in after:
            lost.add(("missing in the lake", key, ()))
        elif key not in before:
            lost.add(("extra in the lake", key, ()))
        elif before[key] != after[key]:
            lost.add(("different values", key, tuple(c for c in before[key] if before[key][c] != after[key][c])))
    assert lost, f"removing batch {batch} of {table} changed no row of its view"
    return lost


def _rows_by_key(view) -> dict[str, dict]:
    columns = [c for c in view.columns if not c.startswith("__")]
    return {_key(r.asDict()): {c: r[c] for c in columns} for r in view.select(*columns).collect()}


def _wait_for_event(spark, db: SourceDb, table: str, matches, what: str, *, op: str = "c", timeout: float = 120):
    """Poll the table's topic until an event of `op` whose row (its after image; a delete's before) matches."""
    from tests.e2e.support.kafka import read_messages

    def arrived() -> bool:
        for message in read_messages(spark, db.stack.KAFKA_BOOTSTRAP, [db.topic(table)]):
            body = json.loads(message["payload"]) if message["payload"] else {}
            body = body.get("payload", body)
            row = body.get("before" if op == "d" else "after") or {}
            if body.get("op") == op and matches(row):
                return True
        return False

    poll(arrived, timeout, f"{db.kind}: a {op} event of {what} in {db.topic(table)}", interval=1)
