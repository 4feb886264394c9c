"""The Avro path end to end: Confluent wire format in a real Kafka topic, writer schemas from a registry.

A real Confluent-compatible registry cannot be started from the package registries this machine
reaches (Confluent's is not on Maven Central; Apicurio's runnable app is not either), so the registry
is tests/support/registry_server.py, which follows the Confluent REST API and is loaded with the
Avro schema of a real Debezium PostgreSQL envelope. The Kafka broker is real. A batch of two schema ids (and a
message that is no Avro) lands the careful way; a later batch of one id lands in one pass.
"""

from __future__ import annotations

import copy
import io
import json
import struct
import uuid
from decimal import Decimal

import avro.io
import avro.schema
import pytest

from lakecompact import config as config_module
from lakecompact.compaction.compact import compact
from lakecompact.lake.catalog import Catalog
from lakecompact.landing.land import land
from lakecompact.schema.registry import RegistryUnavailable
from tests.support.databases import database_name
from tests.support.registry_server import RegistryServer, read_avsc

pytestmark = pytest.mark.e2e

# one topic per run: Kafka's data in .stack/ outlives the stack's restarts
TOPIC = f"avrosrv{uuid.uuid4().hex[:8]}.inventory.customers"


def _v2(envelope: dict) -> dict:
    """The same envelope after `ALTER TABLE customers ADD COLUMN balance numeric(10,2), ADD COLUMN cash money`.

    AvroConverter writes precision 64 for a Connect Decimal without one (money): wider than Spark's 38."""
    schema = copy.deepcopy(envelope)
    value = schema["fields"][0]["type"][1]
    value["fields"].append({
        "name": "balance",
        "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2,
                          "connect.name": "org.apache.kafka.connect.data.Decimal",
                          "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"}}],
        "default": None,
    })
    value["fields"].append({
        "name": "cash",
        "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 2,
                          "connect.version": 1, "connect.name": "org.apache.kafka.connect.data.Decimal",
                          "connect.parameters": {"scale": "2"}}],
        "default": None,
    })
    return schema


def _encode(schema_id: int, schema: dict, record: dict) -> bytes:
    buffer = io.BytesIO()
    buffer.write(b"\x00" + struct.pack(">I", schema_id))
    avro.io.DatumWriter(avro.schema.parse(json.dumps(schema))).write(record, avro.io.BinaryEncoder(buffer))
    return buffer.getvalue()


def _event(op: str, row: dict | None, lsn: int, before: dict | None = None) -> dict:
    source = {"version": "3.5.0.Final", "connector": "postgresql", "name": "avrosrv", "ts_ms": 1_700_000_000_000 + lsn,
              "snapshot": "false", "db": "inventory", "sequence": None, "ts_us": None, "ts_ns": None,
              "schema": "inventory", "table": "customers", "txId": 7, "lsn": lsn, "xmin": None,
              "origin": None, "origin_lsn": None}
    return {"before": before, "after": row if op != "d" else None, "source": source, "transaction": None,
            "op": op, "ts_ms": 1_700_000_000_000 + lsn, "ts_us": None, "ts_ns": None}


def test_avro_events_with_two_schema_versions_land_equal(stack, spark, tmp_path, careful_calls):
    envelope = read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")
    key_schema = read_avsc("avro_pg_3x_RECONSTRUCTED_key.avsc")
    envelope_v2 = _v2(envelope)
    with RegistryServer() as registry:
        v1 = registry.register(f"{TOPIC}-value", envelope)
        registry.register(f"{TOPIC}-key", key_schema)
        v2 = registry.register(f"{TOPIC}-value", envelope_v2)
        assert v1 != v2

        def row(i, email, **extra):
            return {"id": i, "first_name": f"F{i}", "last_name": f"L{i}", "email": email, **extra}

        messages = [
            _encode(v1, envelope, _event("c", row(1, "a@x"), 100)),
            _encode(v1, envelope, _event("c", row(2, "b@x"), 110)),
            _encode(v1, envelope, _event("u", row(1, "a2@x"), 120)),
            _encode(v1, envelope, _event("d", None, 130, before=row(2, "b@x"))),
            # the table gained a column: a later schema id, decoded alongside the older one
            _encode(v2, envelope_v2, _event("c", row(3, "c@x", balance=Decimal("-12.34"), cash=Decimal("123456789012.34")), 140)),
            _encode(v2, envelope_v2, _event("u", row(1, "a3@x", balance=Decimal("99999999.99"), cash=Decimal("-0.05")), 150)),
            b"not avro and not json",
        ]
        keys = [_encode(2, key_schema, {"id": i}) for i in (1, 2, 1, 2, 3, 1)] + [None]

        def produce(keys: list[bytes | None], messages: list[bytes]) -> None:
            frame = spark.createDataFrame(list(zip(keys, messages, strict=True)), "key BINARY, value BINARY")
            frame.write.format("kafka").option("kafka.bootstrap.servers", stack.KAFKA_BOOTSTRAP) \
                .option("topic", TOPIC).save()

        produce(keys, messages)

        database = database_name()
        config = config_module.from_dict({
            "warehouse": str(tmp_path / "warehouse"),
            "database": database,
            "source": {"kind": "kafka", "bootstrap_servers": stack.KAFKA_BOOTSTRAP, "topics": [TOPIC]},
            "registry": {"url": registry.url, "retries": 2, "backoff_seconds": 0.1},
            "defaults": {"buckets": 2},
        })
        # the registry goes away: retried, then named; nothing is landed until it is back
        port = int(registry.url.rsplit(":", 1)[1].split("/")[0])
        registry.stop()
        with pytest.raises(RegistryUnavailable, match=f"127.0.0.1:{port}") as caught:
            land(spark, config)
        assert caught.value.exit_code == 6
        assert not Catalog(spark, config).storage.exists(Catalog(spark, config).paths("inventory_customers").increments)
        registry.start(port)
        report = land(spark, config)  # the interrupted batch, landed whole
        assert report.rows_out == {"inventory_customers": 6}
        assert sum(report.quarantined.values()) == 1
        # the quarantine keeps the message's bytes, so that `requeue` can land it again as it came
        quarantine = Catalog(spark, config).paths("inventory_customers").quarantine
        [kept] = spark.read.parquet(quarantine).select("__value_bytes").collect()
        assert bytes(kept["__value_bytes"]) == b"not avro and not json"
        expected = [
            {"id": 1, "first_name": "F1", "last_name": "L1", "email": "a3@x", "balance": "99999999.99", "cash": "-0.05"},
            {"id": 3, "first_name": "F3", "last_name": "L3", "email": "c@x", "balance": "-12.34",
             "cash": "123456789012.34"},
        ]

        def view():
            rows = spark.sql("SELECT id, first_name, last_name, email, CAST(balance AS STRING) AS balance, "
                             "CAST(cash AS STRING) AS cash "
                             f"FROM {database}.inventory_customers ORDER BY id").collect()
            return [r.asDict() for r in rows]

        assert view() == expected
        compact(spark, config)
        assert view() == expected
        assert land(spark, config).rows_out == {}  # nothing new: offsets were recorded with the batch
        # the writer schemas were fetched once per id
        assert registry.count(f"/schemas/ids/{v1}") == 1 and registry.count(f"/schemas/ids/{v2}") == 1
        # two schema ids and a message that is no Avro: the careful way (the land the outage stopped, and the next)
        assert careful_calls == ["careful", "careful"]

        # a batch of one schema id lands in one pass from the broker: the header compared, the bytes decoded once
        produce([_encode(2, key_schema, {"id": i}) for i in (3, 4)],
                [_encode(v2, envelope_v2, _event("u", row(3, "c2@x", balance=Decimal("1.50"), cash=None), 160)),
                 _encode(v2, envelope_v2, _event("c", row(4, "d@x", balance=None, cash=Decimal("7.00")), 170))])
        report = land(spark, config)
        assert careful_calls == ["careful", "careful"]
        assert (report.rows_out, sum(report.quarantined.values()), report.skipped) == ({"inventory_customers": 2}, 0, 0)
        assert view() == [expected[0],
                          {"id": 3, "first_name": "F3", "last_name": "L3", "email": "c2@x", "balance": "1.50",
                           "cash": None},
                          {"id": 4, "first_name": "F4", "last_name": "L4", "email": "d@x", "balance": None,
                           "cash": "7.00"}]
