"""Smoke test of the e2e stack: PostgreSQL and MariaDB changes flow through
Debezium (JsonConverter, schemas.enable=true) into Kafka, and PySpark's Kafka
source reads and decodes them.

For each database: 3 rows exist before the connector is registered (snapshot,
op=r); then one insert (c), one update (u) and one delete (d, followed by a
tombstone). Expected in the topic: 7 messages, ops r=3 c=1 u=1 d=1, 1
tombstone, and the update's before/after images.
"""
from __future__ import annotations

import base64
import json
import uuid
from collections import Counter
from decimal import Decimal

import pytest

pytestmark = pytest.mark.e2e

POLL_TIMEOUT = 120  # seconds to wait for the expected messages

ROWS = [(1, "alice", "10.00"), (2, "bob", "20.00"), (3, "carol", "30.25")]


def decode_decimal(encoded: str, scale: int) -> Decimal:
    """Kafka Connect Decimal in JSON: base64 of the big-endian two's-complement
    unscaled value (decimal.handling.mode=precise)."""
    unscaled = int.from_bytes(base64.b64decode(encoded), "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


def read_topic(spark, bootstrap: str, topic: str):
    """All messages of ``topic`` (batch read), decoded with Spark."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    row = StructType([
        StructField("id", IntegerType()),
        StructField("name", StringType()),
        StructField("amount", StringType()),  # base64 Decimal bytes
    ])
    value_schema = StructType([
        StructField("payload", StructType([
            StructField("op", StringType()),
            StructField("before", row),
            StructField("after", row),
            StructField("ts_ms", LongType()),
            StructField("source", StructType([
                StructField("connector", StringType()),
                StructField("db", StringType()),
                StructField("table", StringType()),
            ])),
        ])),
    ])
    key_schema = StructType([StructField("payload", StructType([StructField("id", IntegerType())]))])
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    return raw.select(
        "offset",
        F.col("value").isNull().alias("tombstone"),
        F.col("value").cast("string").alias("value_json"),
        F.from_json(F.col("key").cast("string"), key_schema)["payload"]["id"].alias("key_id"),
        F.from_json(F.col("value").cast("string"), value_schema)["payload"].alias("p"),
    ).orderBy("offset")


def wait_for_messages(spark, stack, connector: str, topic: str, expected: int):
    """Poll (topic existence, then message count) until at least ``expected``
    messages are in ``topic``; returns the decoded rows."""
    def task_failed():
        st = stack.connector_status(connector)
        bad = [t for t in st["tasks"] if t["state"] != "RUNNING"]
        return f"connector task not running: {bad}" if bad else None

    stack.poll(lambda: topic in stack.connector_topics(connector), POLL_TIMEOUT,
               f"connector {connector} to write to {topic}", interval=0.5, fail_fast=task_failed)
    seen: list = []

    def enough():
        seen[:] = read_topic(spark, stack.KAFKA_BOOTSTRAP, topic).collect()
        return len(seen) >= expected

    try:
        stack.poll(enough, POLL_TIMEOUT, f"{expected} messages in {topic}", interval=0.5, fail_fast=task_failed)
    except stack.StackError as exc:
        pytest.fail(f"{exc}; got {len(seen)}: {[r.value_json for r in seen]}")
    return list(seen)


def check_change_stream(rows, *, connector_type: str, db: str, table: str, scale: int):
    assert len(rows) == 7, [r.value_json for r in rows]
    tombstones = [r for r in rows if r.tombstone]
    events = [r for r in rows if not r.tombstone]
    assert len(tombstones) == 1 and tombstones[0].key_id == 3
    # the tombstone follows the delete event
    assert rows[-1].tombstone and rows[-2].p.op == "d"

    ops = Counter(r.p.op for r in events)
    assert ops == {"r": 3, "c": 1, "u": 1, "d": 1}, ops
    assert {r.p.source.connector for r in events} == {connector_type}
    assert {r.p.source.table for r in events} == {table}
    assert {r.p.source.db for r in events} == {db}
    for r in events:
        assert r.key_id == (r.p.after or r.p.before).id

    snap = {r.p.after.id: (r.p.after.name, decode_decimal(r.p.after.amount, scale))
            for r in events if r.p.op == "r"}
    assert snap == {i: (n, Decimal(a)) for i, n, a in ROWS}

    (ins,) = [r for r in events if r.p.op == "c"]
    assert ins.p.before is None
    assert (ins.p.after.id, ins.p.after.name, decode_decimal(ins.p.after.amount, scale)) == \
        (4, "dave", Decimal("40.50"))

    (upd,) = [r for r in events if r.p.op == "u"]
    assert (upd.p.after.id, upd.p.after.name, decode_decimal(upd.p.after.amount, scale)) == \
        (2, "bob-updated", Decimal("-20.75"))
    # full before-image (REPLICA IDENTITY FULL / binlog_row_image=FULL)
    assert (upd.p.before.id, upd.p.before.name, decode_decimal(upd.p.before.amount, scale)) == \
        (2, "bob", Decimal("20.00"))

    (dele,) = [r for r in events if r.p.op == "d"]
    assert dele.p.after is None and dele.p.before.id == 3 and dele.p.before.name == "carol"

    # the JSON carries the Connect schema (schemas.enable=true) with the decimal scale
    schema = json.loads(ins.value_json)["schema"]
    after_fields = next(f for f in schema["fields"] if f["field"] == "after")["fields"]
    amount = next(f for f in after_fields if f["field"] == "amount")
    assert amount["name"] == "org.apache.kafka.connect.data.Decimal"
    assert amount["parameters"]["scale"] == str(scale)


@pytest.fixture(scope="module")
def run_id():
    return uuid.uuid4().hex[:8]


@pytest.fixture
def connectors(stack):
    names = []
    yield names
    for n in names:
        stack.delete_connector(n)


def inserts(table: str) -> str:
    """The ROWS, there before the connector is registered."""
    return "".join(f"INSERT INTO {table} VALUES ({i}, '{n}', {a});" for i, n, a in ROWS)


def stream_changes(spark, stack, connectors, *, name: str, topic: str, register, captured: str, run_sql, table: str):
    """Register the connector (`register(name, topic prefix, tables)`), wait for its snapshot of the ROWS, then
    insert, update and delete one row each (SQL run by `run_sql` on `table`): the topic's 7 messages."""
    register(name, name, [captured])
    connectors.append(name)
    stack.wait_connector_streaming(name)
    wait_for_messages(spark, stack, name, topic, 3)  # snapshot done

    run_sql(
        f"INSERT INTO {table} VALUES (4, 'dave', 40.50);"
        f"UPDATE {table} SET name = 'bob-updated', amount = -20.75 WHERE id = 2;"
        f"DELETE FROM {table} WHERE id = 3;")
    return wait_for_messages(spark, stack, name, topic, 7)


def test_postgres_to_kafka(stack, e2e_spark, run_id, connectors):
    name = f"smoke_pg_{run_id}"
    stack.pg_sql(
        "DROP TABLE IF EXISTS public.smoke_orders;"
        "CREATE TABLE public.smoke_orders (id int PRIMARY KEY, name text NOT NULL, amount numeric(10,2));"
        "ALTER TABLE public.smoke_orders REPLICA IDENTITY FULL;"
        + inserts("public.smoke_orders"))

    rows = stream_changes(e2e_spark, stack, connectors, name=name, topic=f"{name}.public.smoke_orders",
                          register=stack.register_postgres_connector, captured="public.smoke_orders",
                          run_sql=stack.pg_sql, table="public.smoke_orders")
    check_change_stream(rows, connector_type="postgresql", db=stack.POSTGRES.database,
                        table="smoke_orders", scale=2)


def test_mariadb_to_kafka(stack, e2e_spark, run_id, connectors):
    name = f"smoke_maria_{run_id}"
    db = stack.MARIADB.database
    stack.mariadb_sql(
        "DROP TABLE IF EXISTS smoke_orders;"
        "CREATE TABLE smoke_orders (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL, amount DECIMAL(10,2));"
        + inserts("smoke_orders"))

    rows = stream_changes(e2e_spark, stack, connectors, name=name, topic=f"{name}.{db}.smoke_orders",
                          register=stack.register_mariadb_connector, captured=f"{db}.smoke_orders",
                          run_sql=stack.mariadb_sql, table="smoke_orders")
    check_change_stream(rows, connector_type="mariadb", db=db, table="smoke_orders", scale=2)


@pytest.mark.parametrize("kind", ["postgres", "mariadb"])
def test_streaming_without_snapshot(stack, e2e_spark, run_id, connectors, kind):
    """A connector without a snapshot (snapshot.mode no_data) captures a row written the moment
    wait_connector_streaming returns, with no retry; once delete_connector returns, MariaDB runs no binlog reader
    of it any more (its slot, for PostgreSQL, is dropped)."""
    name = f"smoke_nodata_{kind}_{run_id}"
    if kind == "postgres":
        captured, table, run_sql = "public.smoke_nodata", "public.smoke_nodata", stack.pg_sql
        register, topic = stack.register_postgres_connector, f"{name}.public.smoke_nodata"
    else:
        db = stack.MARIADB.database
        captured, table, run_sql = f"{db}.smoke_nodata", "smoke_nodata", stack.mariadb_sql
        register, topic = stack.register_mariadb_connector, f"{name}.{db}.smoke_nodata"
    run_sql(f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(20));")
    register(name, name, [captured], snapshot_mode="no_data")
    connectors.append(name)
    stack.wait_connector_streaming(name)
    run_sql(f"INSERT INTO {table} VALUES (1, 'first');")
    (row,) = wait_for_messages(e2e_spark, stack, name, topic, 1)
    assert (row.p.op, row.key_id) == ("c", 1)

    stack.delete_connector(name)
    connectors.remove(name)
    if kind == "mariadb":
        user = stack.mariadb_connector_user(name)
        assert stack.mariadb_sql("SELECT count(*) FROM information_schema.PROCESSLIST "
                                 f"WHERE USER = '{user}' AND COMMAND LIKE 'Binlog Dump%'") == [("0",)]
    else:
        assert stack.pg_sql("SELECT count(*) FROM pg_replication_slots "
                            f"WHERE slot_name = '{stack.postgres_connector_config(name, name, [])['slot.name']}'") \
            == [("0",)]
