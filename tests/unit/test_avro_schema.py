"""Avro schemas (as Confluent's AvroConverter registers them) into Kafka Connect JSON schemas and table types."""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path

import pytest

from lakecompact.errors import SchemaError
from lakecompact.lake.connect import row_fields, table_type
from lakecompact.schema.avro import AvroSchemaError, connect_schema, envelope_row_schema, key_fields
from tests.support.avro import avro_type as _avro_type
from tests.support.paths import DEBEZIUM_EVENTS
from tests.support.registry_server import read_avsc


def columns(row: dict) -> list[tuple[str, str]]:
    return [(f.name, f.table_type) for f in row_fields(row)]


# -- the real PostgreSQL envelope -----------------------------------------------------------------


def test_pg_envelope_maps_to_the_schema_jsonconverter_embeds_for_the_same_event():
    avro_envelope = read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")
    embedded = json.loads((DEBEZIUM_EVENTS / "pg_3x_RECONSTRUCTED_create_value.json").read_text())["schema"]
    converted = connect_schema(avro_envelope)
    assert converted == embedded
    assert json.dumps(converted) == json.dumps(embedded)  # JsonConverter's key order too


def test_pg_envelope_row_and_key():
    row = envelope_row_schema(json.dumps(read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")))
    assert row["name"] == "dbserver1.inventory.customers.Value"
    assert columns(row) == [
        ("id", "INT"),
        ("first_name", "STRING"),
        ("last_name", "STRING"),
        ("email", "STRING"),
    ]
    assert key_fields(read_avsc("avro_pg_3x_RECONSTRUCTED_key.avsc")) == ["id"]
    assert key_fields(None) == []


def test_pg_source_block_keeps_enum_parameters_and_default():
    source = next(f for f in connect_schema(read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc"))["fields"]
                  if f["field"] == "source")  # fmt: skip
    snapshot = next(f for f in source["fields"] if f["field"] == "snapshot")
    assert snapshot == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {
            "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
        },
        "default": "false",
        "field": "snapshot",
    }


# -- a hand-written MySQL envelope with every logical type ----------------------------------------


def _optional(schema, default=None):
    return (
        {"type": ["null", schema], "default": None}
        if default is None
        else {"type": [schema, "null"], "default": default}
    )


def avro_field(name: str, schema) -> dict:
    return {"name": name, "type": schema}


def nullable_field(name: str, schema) -> dict:
    """A field that may be null, as AvroConverter writes an optional one: null first, default null."""
    return {"name": name, **_optional(schema)}


MYSQL_ROW_FIELDS = [
    ("id", {"type": "int"}, "INT"),
    ("tiny", {"type": "int", "connect.type": "int8"}, "TINYINT"),
    ("small", {"type": "int", "connect.type": "int16", "connect.default": 0}, "SMALLINT"),
    ("big", {"type": "long"}, "BIGINT"),
    ("ratio", {"type": "float"}, "FLOAT"),
    ("score", {"type": "double"}, "DOUBLE"),
    ("active", {"type": "boolean"}, "BOOLEAN"),
    ("blob", {"type": "bytes"}, "BINARY"),
    ("price", {"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
               "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
               "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}, "DECIMAL(10,2)"),
    ("amount", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 4}, "DECIMAL(12,4)"),
    ("fixed_amount", {"type": "fixed", "name": "fixed_amount", "size": 8, "logicalType": "decimal",
                      "precision": 18, "scale": 3}, "DECIMAL(18,3)"),
    ("any_numeric", {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
                     "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
                     "connect.doc": "Variable scaled decimal", "connect.version": 1,
                     "connect.name": "io.debezium.data.VariableScaleDecimal"}, "DECIMAL(38,18)"),
    ("born", {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}, "DATE"),
    ("day", {"type": "int", "logicalType": "date"}, "DATE"),
    ("opens", {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Time"}, "STRING"),
    ("closes", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTime"}, "STRING"),
    ("t_millis", {"type": "int", "logicalType": "time-millis"}, "STRING"),
    ("t_micros", {"type": "long", "logicalType": "time-micros"}, "STRING"),
    ("created", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.Timestamp"}, "TIMESTAMP"),
    ("changed", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"}, "TIMESTAMP"),
    ("ts_millis", {"type": "long", "logicalType": "timestamp-millis"}, "TIMESTAMP"),
    ("ts_micros", {"type": "long", "logicalType": "timestamp-micros"}, "TIMESTAMP"),
    ("updated", {"type": "string", "connect.version": 1, "connect.name": "io.debezium.time.ZonedTimestamp"}, "TIMESTAMP"),
    ("status", {"type": "string", "connect.version": 1, "connect.parameters": {"allowed": "new,paid,shipped"},
                "connect.name": "io.debezium.data.Enum"}, "STRING"),
    ("color", {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}, "STRING"),
    ("doc", {"type": "string", "connect.version": 1, "connect.name": "io.debezium.data.Json"}, "STRING"),
    ("uid", {"type": "string", "logicalType": "uuid"}, "STRING"),
    ("tags", {"type": "array", "items": "string"}, "ARRAY<STRING>"),
    ("lines", {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": ["null", "int"], "default": None}]}},
     "ARRAY<STRUCT<`sku`:STRING,`qty`:INT>>"),
    ("scores", {"type": "map", "values": ["null", "double"]}, "MAP<STRING,DOUBLE>"),
    ("by_id", {"type": "array", "items": {"type": "record", "name": "MapEntry", "namespace": "io.confluent.connect.avro",
               "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}]}}, "MAP<INT,STRING>"),
    ("address", {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"},
        {"name": "zip", "type": ["null", "int"], "default": None},
        {"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [
            {"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}}]},
     "STRUCT<`street`:STRING,`zip`:INT,`geo`:STRUCT<`lat`:DOUBLE,`lon`:DOUBLE>>"),
]  # fmt: skip

MYSQL_SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.mysql",
    "fields": [
        avro_field("version", "string"), avro_field("connector", "string"), avro_field("name", "string"),
        avro_field("ts_ms", "long"),
        {"name": "snapshot", "type": [{"type": "string", "connect.version": 1,
                                       "connect.parameters": {"allowed": "true,last,false,incremental"},
                                       "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"],
         "default": "false"},
        avro_field("db", "string"), nullable_field("sequence", "string"), nullable_field("table", "string"),
        avro_field("server_id", "long"), nullable_field("gtid", "string"), avro_field("file", "string"),
        avro_field("pos", "long"), avro_field("row", "int"), nullable_field("thread", "long"),
        nullable_field("query", "string"),
    ],
    "connect.name": "io.debezium.connector.mysql.Source",
}  # fmt: skip


def mysql_envelope(*, optional_columns: bool) -> dict:
    row_fields_avro = []
    for name, schema, _ in MYSQL_ROW_FIELDS:
        if name == "id" or not optional_columns:
            row_fields_avro.append({"name": name, "type": copy.deepcopy(schema)})
        else:
            row_fields_avro.append({"name": name, **_optional(copy.deepcopy(schema))})
    row_fields_avro.append({"name": "note", "type": "string", "default": "n/a"})
    row_fields_avro.append({"name": "magic", "type": "bytes", "default": "\u0000\u0001\u00ff"})
    value = {
        "type": "record",
        "name": "Value",
        "fields": row_fields_avro,
        "connect.name": "shop.shop.orders.Value",
    }
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "shop.shop.orders",
        "fields": [
            nullable_field("before", value), nullable_field("after", "Value"), avro_field("source", MYSQL_SOURCE),
            avro_field("op", "string"), nullable_field("ts_ms", "long"),
        ],
        "connect.version": 2,
        "connect.name": "shop.shop.orders.Envelope",
    }


EXPECTED_MYSQL_COLUMNS = [(name, kind) for name, _, kind in MYSQL_ROW_FIELDS] + [
    ("note", "STRING"),
    ("magic", "BINARY"),
]


@pytest.mark.parametrize("optional_columns", [False, True], ids=["required", "nullable"])
def test_mysql_envelope_with_every_logical_type(optional_columns):
    row = envelope_row_schema(mysql_envelope(optional_columns=optional_columns))
    assert columns(row) == EXPECTED_MYSQL_COLUMNS
    for field in row["fields"]:
        assert field["optional"] is (optional_columns and field["field"] not in ("id", "note", "magic"))
    assert table_type(row) == "STRUCT<" + ",".join(f"`{n}`:{t}" for n, t in EXPECTED_MYSQL_COLUMNS) + ">"


def test_mysql_envelope_connect_details():
    fields = {f["field"]: f for f in envelope_row_schema(mysql_envelope(optional_columns=True))["fields"]}
    assert fields["tiny"] == {"type": "int8", "optional": True, "field": "tiny"}
    assert fields["small"] == {"type": "int16", "optional": True, "default": 0, "field": "small"}
    assert fields["price"] == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "field": "price",
    }
    assert fields["amount"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields["amount"]["parameters"] == {"scale": "4", "connect.decimal.precision": "12"}
    assert fields["fixed_amount"]["parameters"] == {
        "connect.fixed.size": "8",
        "scale": "3",
        "connect.decimal.precision": "18",
    }
    assert fields["any_numeric"]["doc"] == "Variable scaled decimal"
    assert fields["day"]["name"] == "org.apache.kafka.connect.data.Date"
    assert fields["t_millis"] == {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Time",
                                  "field": "t_millis"}  # fmt: skip
    assert fields["t_micros"]["name"] == "io.debezium.time.MicroTime"
    assert fields["ts_millis"]["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert fields["ts_micros"] == {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
                                   "field": "ts_micros"}  # fmt: skip
    assert fields["color"] == {"type": "string", "optional": True, "name": "io.debezium.data.Enum",
                               "parameters": {"allowed": "RED,GREEN,BLUE"}, "field": "color"}  # fmt: skip
    assert fields["status"]["parameters"] == {"allowed": "new,paid,shipped"}
    assert fields["scores"] == {
        "type": "map",
        "keys": {"type": "string", "optional": False},
        "values": {"type": "double", "optional": True},
        "optional": True,
        "field": "scores",
    }
    assert fields["by_id"]["keys"] == {"type": "int32", "optional": False}
    assert (
        fields["lines"]["items"]["name"] == "shop.shop.orders.Line"
    )  # the Avro full name, as AvroConverter reads it
    assert fields["address"]["fields"][1] == {"type": "int32", "optional": True, "field": "zip"}
    assert fields["note"] == {"type": "string", "optional": False, "default": "n/a", "field": "note"}
    assert (
        fields["magic"]["default"] == base64.b64encode(b"\x00\x01\xff").decode()
    )  # JsonConverter's bytes form


def test_mysql_envelope_source_block():
    source = next(
        f for f in connect_schema(mysql_envelope(optional_columns=False))["fields"] if f["field"] == "source"
    )
    assert [(f["field"], f["type"], f["optional"]) for f in source["fields"]][-7:] == [
        ("server_id", "int64", False),
        ("gtid", "string", True),
        ("file", "string", False),
        ("pos", "int64", False),
        ("row", "int32", False),
        ("thread", "int64", True),
        ("query", "string", True),
    ]


# -- flattened values, unions, errors ------------------------------------------------------------


def test_flattened_value_drops_the_fields_the_smt_added():
    flat = {
        "type": "record",
        "name": "Value",
        "namespace": "dbserver1.inventory.customers",
        "fields": [
            avro_field("id", "int"), avro_field("email", "string"),
            # the fields ExtractNewRecordState added
            nullable_field("__deleted", "string"), nullable_field("__op", "string"), nullable_field("__lsn", "long"),
            nullable_field("__source_ts_ms", "long"),
        ],
        "connect.name": "dbserver1.inventory.customers.Value",
    }
    row = envelope_row_schema(flat)
    assert columns(row) == [("id", "INT"), ("email", "STRING")]
    assert len(connect_schema(flat)["fields"]) == 6


def test_a_general_union_becomes_confluents_union_struct():
    schema = connect_schema(
        [
            "null",
            "int",
            "string",
            {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "double"}]},
        ]
    )
    assert schema["name"] == "io.confluent.connect.avro.Union" and schema["optional"] is True
    assert table_type(schema) == "STRUCT<`int`:INT,`string`:STRING,`Point`:STRUCT<`x`:DOUBLE>>"


def test_decimal_precision_64_means_none_given():
    money = {"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 2,
             "connect.parameters": {"scale": "2"}, "connect.version": 1,
             "connect.name": "org.apache.kafka.connect.data.Decimal"}  # fmt: skip
    assert connect_schema(money)["parameters"] == {"scale": "2"}
    assert table_type(connect_schema(money)) == "DECIMAL(38,2)"
    unnamed = {
        "type": "record",
        "name": "ConnectDefault2",
        "namespace": "io.confluent.connect.avro",
        "fields": [],
    }
    assert "name" not in connect_schema(unnamed)


def test_an_invalid_decimal_falls_back_to_bytes_as_avro_says():
    assert (
        table_type(connect_schema({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5}))
        == "BINARY"
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            '{"type": "record", "name": "R"}',
            "Avro schema: expected a valid Avro schema, got 'SchemaParseException",
        ),
        (
            "not json",
            "Avro schema: expected a valid Avro schema, got 'SchemaParseException: Error parsing JSON",
        ),
        (
            {"type": "record", "name": "R", "fields": [{"name": "x", "type": "nope"}]},
            "expected a valid Avro schema",
        ),
        ('"null"', "Avro schema: expected a type other than a bare null, got 'null'"),
        (
            {"type": "record", "name": "R", "fields": [{"name": "x", "type": "null"}]},
            "expected a type other than",
        ),
    ],
)
def test_invalid_schemas_are_schema_errors(schema, message):
    with pytest.raises(AvroSchemaError) as caught:
        connect_schema(schema)
    assert isinstance(caught.value, SchemaError)
    assert message in str(caught.value)


def test_envelope_without_a_record_after_is_rejected():
    envelope = {
        "type": "record",
        "name": "Envelope",
        "namespace": "x",
        "fields": [{"name": "op", "type": "string"}],
    }
    with pytest.raises(
        AvroSchemaError, match="envelope x.Envelope: expected an `after` field of record type"
    ):
        envelope_row_schema(envelope)
    with pytest.raises(AvroSchemaError, match="Debezium key schema: expected an Avro record"):
        key_fields('"string"')


# -- round trip over every Connect schema embedded in tests/fixtures/debezium-events ---------------


def embedded_schemas() -> list[tuple[str, dict]]:
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            schema = node.get("schema")
            if (
                isinstance(schema, dict)
                and isinstance(schema.get("type"), str)
                and ({"payload", "json"} & set(node))
            ):
                found.append((where, {k: v for k, v in schema.items() if k != "field"}))
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    for path in sorted(DEBEZIUM_EVENTS.glob("*.json")):
        walk(json.loads(path.read_text()), path.name)
    return found


def _avro_safe(schema: dict) -> dict:
    """Connect names as Debezium's schema.name.adjustment makes them for Avro (no '-' or '{')."""
    return json.loads(re.sub(r'"name": "([^"]*)"', lambda m: '"name": "' + re.sub(r"[^A-Za-z0-9_.]", "_", m.group(1)) + '"',
                             json.dumps(schema)))  # fmt: skip


EMBEDDED = embedded_schemas()


def test_the_event_files_hold_enough_schemas_to_round_trip():
    assert len(EMBEDDED) >= 20
    assert {Path(where.split("/")[0]).name for where, _ in EMBEDDED} >= {
        "pg_3x_RECONSTRUCTED_create_value.json",
        "mysql_3x_RECONSTRUCTED_create_value.json",
        "sqlserver_1.6_debezium_server_redis_delete_with_decimal.json",
        "unwrap_3x_RECONSTRUCTED_rewrite_add_fields.json",
    }


@pytest.mark.parametrize(("where", "schema"), EMBEDDED, ids=[w for w, _ in EMBEDDED])
def test_round_trip_of_embedded_connect_schemas(where, schema):
    connect = _avro_safe(schema)
    assert connect_schema(_avro_type(connect, set())) == connect


def test_docstring_examples():
    import doctest

    import lakecompact.schema.avro

    assert doctest.testmod(lakecompact.schema.avro).failed == 0
