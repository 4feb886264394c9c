"""An event lands the same whether it came as Kafka Connect JSON or as Avro in Confluent's wire format
(docs/design.md "Schema extractor"): Avro values are decoded once, by from_avro, straight into the table's
columns (landing/avro_values.py), and every row, value, meta column, TOAST mark and quarantine reason is the
one the JSON path gives for the same event.

Each test builds the events once, as JsonConverter writes them (tests/support/debezium.py), and encodes the
same payloads as AvroConverter would (tests/support/avro.py); both are decoded as `land` decodes a group.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from lakecompact.lake.connect import DECIMAL, Field, avro_reader_schema, avro_wire, strip_wire, table_type
from lakecompact.lake.model import META_COLUMNS, TableSchema
from lakecompact.landing import avro_values, decode
from lakecompact.schema import avro
from tests.support import avro as avro_support
from tests.support.debezium import (
    BIGINT,
    BOOL,
    BYTES,
    DATE,
    DOUBLE,
    INT,
    JSON,
    MICRO_TS,
    PLACEHOLDER,
    TEXT,
    VSD,
    ZONED_TS,
    Topic,
    decimal,
    decimal_wire,
    vsd_wire,
)

LANDED_AT = "2024-01-01T00:00:00+00:00"
RAW = ("__kafka_topic STRING, __kafka_partition INT, __kafka_offset BIGINT, key STRING, payload STRING, "
       "__origin STRING, __value_bytes BINARY")
VALUE_ID, KEY_ID = 11, 12


def _named(name: str, kind: str, **extra: Any) -> dict:
    return {"type": kind, "name": name, "version": 1, **extra}


def _struct(name: str, fields: list[tuple[str, dict]]) -> dict:
    return {"type": "struct", "name": name, "fields": [{**s, "optional": True, "field": f} for f, s in fields]}


WIDE = decimal(65, 30)  # the table holds DECIMAL(38,30); avro_reader_schema reads it as bytes
COLUMNS = [
    ("id", INT),
    ("tiny", {"type": "int8"}),
    ("small", {"type": "int16"}),  # MariaDB's BOOLEAN
    ("big", BIGINT),
    ("real", {"type": "float"}),
    ("dbl", DOUBLE),
    ("flag", BOOL),
    ("txt", TEXT),
    ("blob", BYTES),
    ("bits", _named("io.debezium.data.Bits", "bytes", parameters={"length": "3"})),
    ("doc", JSON),
    ("uid", _named("io.debezium.data.Uuid", "string")),
    ("mood", _named("io.debezium.data.Enum", "string", parameters={"allowed": "happy,sad"})),
    ("price", decimal(10, 2)),
    ("wide", WIDE),
    ("money", _named(DECIMAL, "bytes", parameters={"scale": "2"})),  # no precision: AvroConverter writes 64
    ("n", VSD),
    ("day", DATE),
    ("cday", _named("org.apache.kafka.connect.data.Date", "int32")),
    ("t_ms", _named("io.debezium.time.Time", "int32")),
    ("t_us", _named("io.debezium.time.MicroTime", "int64")),
    ("t_ns", _named("io.debezium.time.NanoTime", "int64")),
    ("ct", _named("org.apache.kafka.connect.data.Time", "int32")),
    ("ts_ms", _named("io.debezium.time.Timestamp", "int64")),
    ("ts_us", MICRO_TS),
    ("ts_ns", _named("io.debezium.time.NanoTimestamp", "int64")),
    ("cts", _named("org.apache.kafka.connect.data.Timestamp", "int64")),
    ("zts", ZONED_TS),
    ("ztime", _named("io.debezium.time.ZonedTime", "string")),
    ("dur", _named("io.debezium.time.MicroDuration", "int64")),
    ("tags", {"type": "array", "items": {**TEXT, "optional": True}}),
    ("nums", {"type": "array", "items": {**INT, "optional": True}}),
    ("amounts", {"type": "array", "items": {**WIDE, "optional": True}}),
    ("blobs", {"type": "array", "items": {**BYTES, "optional": True}}),
    ("attrs", {"type": "map", "keys": TEXT, "values": {**TEXT, "optional": True}}),
    ("blob_map", {"type": "map", "keys": TEXT, "values": {**BYTES, "optional": True}}),
    ("point", _struct("io.debezium.data.geometry.Point", [("x", DOUBLE), ("y", DOUBLE), ("wkb", BYTES)])),
    ("inner", _struct("pg.public.kinds.Inner", [("price", decimal(10, 2)), ("small", {"type": "int16"}),
                                                 ("n", VSD), ("when", MICRO_TS)])),
]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _full(id_: int, sign: int = 1) -> dict:
    """Every column with a value; `sign` -1 gives negative numbers and times before 1970."""
    return {
        "id": id_, "tiny": -128 * (sign < 0) + 127 * (sign > 0), "small": 32767 * sign, "big": 2**62 * sign,
        "real": 1.1 * sign, "dbl": 2.2e-300 * sign, "flag": sign > 0, "txt": "héllo\n\"x\"", "blob": _b64(b"\x00\xff"),
        "bits": _b64(b"\x05"), "doc": '{"a": [1, 2]}', "uid": "0b0f4d4a-5a5e-4a39-9f1b-8f8e3a1d2b3c", "mood": "sad",
        "price": decimal_wire(f"{sign * 12345678.25}", 2),
        "wide": decimal_wire(("-" if sign < 0 else "") + "12345678." + "123456789" * 3 + "123", 30),
        "money": decimal_wire(f"{sign * 123456789012.34:.2f}", 2), "n": vsd_wire(f"{sign * 1.5}"),
        "day": 19000 * sign, "cday": 18000 * sign, "t_ms": 45_296_789, "t_us": 45_296_789_012,
        "t_ns": 45_296_789_012_345, "ct": 3_723_004, "ts_ms": 1_700_000_000_123 * sign,
        "ts_us": 1_700_000_000_123_456 * sign, "ts_ns": 1_700_000_000_123_456_789 * sign,
        "cts": 1_600_000_000_123 * sign, "zts": "2024-01-02T03:04:05.123456Z", "ztime": "03:04:05.5Z",
        "dur": 86_400_000_000 * sign, "tags": ["a", None, "c"], "nums": [1, None, -3],
        "amounts": [decimal_wire("1.5", 30), None], "blobs": [_b64(b"\x01"), None], "attrs": {"k": "v", "n": None},
        "blob_map": {"k": _b64(b"\x02\x03")}, "point": {"x": 1.5, "y": -2.5, "wkb": _b64(b"\x01\x01")},
        "inner": {"price": decimal_wire("-0.05", 2), "small": -1, "n": vsd_wire("123.456"), "when": 5},
    }


def _toasted(id_: int) -> dict:
    """Debezium's unavailable-value placeholder in every form it takes (docs/design.md "TOAST")."""
    raw = PLACEHOLDER.encode()
    return {"id": id_, "txt": PLACEHOLDER, "blob": _b64(raw), "doc": PLACEHOLDER, "tags": [PLACEHOLDER],
            "nums": list(raw), "attrs": {PLACEHOLDER: PLACEHOLDER}}


def _events(pg: Topic) -> list[dict]:
    lsn = iter(range(100, 10_000, 10))
    return [
        pg.event("r", _full(1), next(lsn)),
        pg.event("c", _full(2, sign=-1), next(lsn)),
        pg.event("c", {"id": 3}, next(lsn)),  # every other column null
        pg.event("u", _toasted(1), next(lsn), before=_full(1)),
        pg.event("c", {"id": 4, "wide": decimal_wire("100000000", 30)}, next(lsn)),  # 39 digits at scale 30
        pg.event("c", {"id": 5, "n": vsd_wire("1.1234567890123456789012345")}, next(lsn)),  # would round
        pg.event("c", {"id": 6, "amounts": [decimal_wire("1", 30), decimal_wire("100000000", 30)]}, next(lsn)),
        pg.event("c", {"id": 7, "ts_ms": 2**62}, next(lsn)),  # beyond TIMESTAMP's range in microseconds
        pg.event("c", {"id": 8, "inner": {"price": decimal_wire("1.5", 2), "n": vsd_wire("1e30")}}, next(lsn)),
        pg.event("c", {"id": 9, "small": 40000}, next(lsn)),  # not an int16: JSON's parser refuses the value
        pg.event("c", {"id": 10, "tiny": -129}, next(lsn)),
        pg.event("x", {"id": 11}, next(lsn)),
        pg.event("d", _full(2, sign=-1), next(lsn)),
        pg.event("t", None, next(lsn)),
    ]


def _raw(spark, lines: list[tuple[str | None, str | bytes | None]], topic: str):
    """Messages as the Kafka source reads them: text, or Avro bytes (and their text, as Kafka's cast gives it)."""
    rows = []
    for offset, (key, value) in enumerate(lines):
        as_bytes = value if isinstance(value, bytes) else None
        text = value.decode("utf-8", "replace") if as_bytes is not None else value
        key_text = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        rows.append((topic, 0, offset, key_text, text, f"test:{offset}", as_bytes and bytearray(as_bytes)))
    return spark.createDataFrame(rows, RAW)


def _as_avro(schema: dict, key_schema: dict, lines: list[dict]) -> list[tuple[bytes | None, bytes]]:
    """The same messages as AvroConverter writes them."""
    return avro_support.converted(schema, key_schema, lines, VALUE_ID, KEY_ID)


def _landed(spark, schema: dict, key_schema: dict, lines: list[dict], topic: str, key: tuple[str, ...]):
    """The rows both ways: (JSON, Avro), each as `land` decodes a group, by Kafka offset."""
    json_shape = decode.shape_of(schema, [], topic)
    writer = avro_support.avro_type(schema, set())
    avro_shape = decode.shape_of(avro_wire(avro.connect_schema(writer)), [], topic)
    table = TableSchema("t", topic, tuple(Field(f.name, strip_wire(f.schema)) for f in json_shape.fields), key)
    # the registry's schema gives the table the columns the embedded one gives
    assert [(f.name, f.table_type) for f in avro_shape.fields] == [(f.name, f.table_type) for f in table.fields]
    json_raw = _raw(spark, [(line["key"], line["payload"]) for line in lines], topic)
    avro_raw = _raw(spark, _as_avro(schema, key_schema, lines), topic)
    from_json = decode.decode_events(decode.split_message(json_raw), json_shape, table, PLACEHOLDER, LANDED_AT)
    reader = json.dumps(avro_reader_schema(writer))
    from_avro = avro_values.decode_events(decode.split_message(avro_raw), reader, avro_shape, table, PLACEHOLDER,
                                          LANDED_AT)
    return _collected(from_json, table), _collected(from_avro, table)


def _collected(rows, table: TableSchema) -> list[dict]:
    columns = [f.name for f in table.fields] + [name for name, _ in META_COLUMNS] + ["__reason"]
    return [r.asDict(recursive=True) for r in rows.select(*columns).orderBy("__kafka_offset").collect()]


def test_an_envelope_lands_the_same_as_avro_and_as_json(spark):
    pg = Topic("pg.public.kinds", COLUMNS, ["id"])
    from_json, from_avro = _landed(spark, pg.value_schema(), pg.key_schema(), _events(pg), pg.name, ("id",))

    assert from_avro == from_json
    # and what they both give is what the events say
    reasons = {r["__kafka_offset"]: r["__reason"] for r in from_avro if r["__reason"]}
    assert reasons == {
        4: "value of column wide does not fit DECIMAL(38,30)",
        5: "value of column n does not fit DECIMAL(38,18)",
        6: "value of column amounts does not fit ARRAY<DECIMAL(38,30)>",
        7: "value of column ts_ms does not fit TIMESTAMP",
        8: f"value of column inner does not fit {table_type(dict(COLUMNS)['inner'])}",
        9: "payload does not match its schema",
        10: "payload does not match its schema",
        11: "unknown op 'x'",
    }
    full, negative, empty, toasted = from_avro[:4]
    assert (str(full["wide"]), str(negative["money"]), str(full["n"])) == (
        "12345678." + "123456789" * 3 + "123", "-123456789012.34", "1.500000000000000000")
    assert (bytes(full["blob"]), full["t_us"], full["inner"]["small"]) == (b"\x00\xff", "12:34:56.789012", -1)
    assert all(value is None for name, value in empty.items() if not name.startswith("__") and name != "id")
    assert sorted(toasted["__toast"]) == ["attrs", "blob", "doc", "nums", "tags", "txt"]
    assert [r["__op"] for r in from_avro[-2:]] == ["d", "t"]


def test_a_flattened_row_lands_the_same_as_avro_and_as_json(spark):
    """ExtractNewRecordState's rows: the row's columns and the `__` fields it adds at the top of the value."""
    columns = [c for c in COLUMNS if c[0] in ("id", "small", "blob", "price", "wide", "n", "tags", "attrs")]
    added = [("__op", TEXT), ("__source_lsn", BIGINT), ("__source_ts_ms", BIGINT), ("__deleted", TEXT)]
    schema = {"type": "struct", "name": "pg.public.flat.Value", "optional": False,
              "fields": [{**s, "optional": n != "id", "field": n} for n, s in columns + added]}
    key_schema = {"type": "struct", "name": "pg.public.flat.Key", "optional": False,
                  "fields": [{**INT, "optional": False, "field": "id"}]}

    def line(row: dict, op: str, lsn: int) -> dict:
        meta = {"__op": op, "__source_lsn": lsn, "__source_ts_ms": 1_700_000_000_000, "__deleted": str(op == "d")}
        value = {"schema": schema, "payload": {**{n: row.get(n) for n, _ in columns}, **meta}}
        key = {"schema": key_schema, "payload": {"id": row["id"]}}
        return {"key": json.dumps(key), "payload": json.dumps(value)}

    full = {n: v for n, v in _full(1).items() if n in dict(columns)}
    lines = [line(full, "c", 100), line(_toasted(1), "u", 110), line({"id": 2, "small": -40000}, "c", 120),
             line({"id": 3, "wide": decimal_wire("100000000", 30)}, "c", 130), line(full, "d", 140)]
    from_json, from_avro = _landed(spark, schema, key_schema, lines, "pg.public.flat", ("id",))

    assert from_avro == from_json
    assert [r["__reason"] for r in from_avro] == [
        None, None, "payload does not match its schema", "value of column wide does not fit DECIMAL(38,30)", None]
    assert [(r["__op"], r["__lsn"], r["__deleted"]) for r in from_avro] == [
        ("c", 100, False), ("u", 110, False), ("c", 120, False), ("c", 130, False), ("d", 140, True)]


def test_an_avro_value_that_does_not_decode_is_quarantined(spark):
    """A value whose bytes are not a whole value of its schema: from_avro (PERMISSIVE) gives a record of nulls, so
    the event has no op, as it had when that record was written out as JSON text and parsed again."""
    pg = Topic("pg.public.kinds", [("id", INT), ("txt", TEXT)], ["id"])
    writer = avro_support.avro_type(pg.value_schema(), set())
    shape = decode.shape_of(avro_wire(avro.connect_schema(writer)), [], pg.name)
    table = TableSchema("t", pg.name, tuple(Field(f.name, strip_wire(f.schema)) for f in shape.fields), ("id",))
    [(_, whole)] = _as_avro(pg.value_schema(), pg.key_schema(), [pg.event("c", {"id": 1, "txt": "x"}, 100)])
    raw = _raw(spark, [(None, whole[:12])], pg.name)
    rows = avro_values.decode_events(decode.split_message(raw), json.dumps(avro_reader_schema(writer)), shape, table,
                                     PLACEHOLDER, LANDED_AT)
    assert [r["__reason"] for r in rows.collect()] == ["no op in the event"]
