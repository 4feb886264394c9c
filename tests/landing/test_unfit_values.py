"""A value that does not fit its column's type is quarantined with the reason, never lost or rounded, and the
rows beside it land (docs/design.md "Bad input").

Spark's decimals stop at 38 digits: MySQL's DECIMAL(65,30) lands as DECIMAL(38,30), PostgreSQL's unconstrained
numeric (VariableScaleDecimal) as DECIMAL(38,18). Under ANSI mode (Spark 4's default) a cast that overflows
raises, which would stop the whole land run; without it the value would silently become null.
"""

from __future__ import annotations

import json

import pytest

from lakecompact.lake.connect import avro_wire, row_fields, strip_wire
from lakecompact.lake.model import TableSchema
from lakecompact.landing import decode
from lakecompact.views.status import status
from tests.support.debezium import INT, PLACEHOLDER, VSD, Topic, decimal, decimal_wire, vsd_wire
from tests.support.lake import quarantined

TABLE = "public_prices"
WIDE = decimal(65, 30)  # MySQL's widest DECIMAL; the table holds DECIMAL(38,30)


@pytest.fixture
def ansi(spark):
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    yield
    spark.conf.set("spark.sql.ansi.enabled", before)


def _topic() -> Topic:
    history = {"type": "array", "items": {**WIDE, "optional": True}}
    columns = [("id", INT), ("amount", WIDE), ("n", VSD), ("history", history)]
    return Topic("pg.public.prices", columns, ["id"])


def _row(id_: int, amount: str | None = None, n: str | None = None, history: list[str] | None = None) -> dict:
    return {
        "id": id_,
        "amount": decimal_wire(amount, 30) if amount is not None else None,
        "n": vsd_wire(n) if n is not None else None,
        "history": [decimal_wire(h, 30) for h in history] if history is not None else None,
    }


def test_values_that_do_not_fit_are_quarantined_and_the_rest_lands(lake, ansi):
    pg = _topic()
    fits = "12345678." + "123456789" * 3 + "123"  # 8 + 30 digits: the most DECIMAL(38,30) holds
    widest = "9" * 20 + ".123456789012345678"  # 20 + 18 digits: the most DECIMAL(38,18) holds
    lake.write([
        pg.event("c", _row(1, amount=fits, n=widest, history=[fits, "-1.5"]), 100),
        pg.event("c", _row(2, amount="100000000"), 200),  # 1e8: 39 digits at scale 30
        pg.event("c", _row(3, amount="-123456789.5", n="1"), 300),
        pg.event("c", _row(4, n="1.1234567890123456789012345"), 400),  # 25 decimal places: would round
        pg.event("c", _row(5, n="2.1234567890123456780000000"), 500),  # 25 places, zeros past the 18th: exact
        pg.event("c", _row(6, amount="100000000", n="1" + "0" * 20), 600),  # two columns; 1e20 for n
        pg.event("c", _row(7, history=["1", "100000000"]), 700),  # inside an array
    ])

    report = lake.land()

    assert report.rows_out == {TABLE: 2}
    assert report.quarantined == {TABLE: 5}
    rows = lake.rows(
        f"SELECT id, CAST(amount AS STRING) AS amount, CAST(n AS STRING) AS n, "
        f"transform(history, h -> CAST(h AS STRING)) AS history FROM `{lake.database}`.`{TABLE}`"
    )
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "amount": fits, "n": widest, "history": [fits, "-1.500000000000000000000000000000"]},
        {"id": 5, "n": "2.123456789012345678"},
    ]

    stored = sorted(quarantined(lake, TABLE), key=lambda r: r["__kafka_offset"])
    assert [r["__kafka_offset"] for r in stored] == [1, 2, 3, 5, 6]
    amount = "value of column amount does not fit DECIMAL(38,30)"
    numeric = "value of column n does not fit DECIMAL(38,18)"
    assert [r["__reason"] for r in stored] == [
        amount,
        amount,
        numeric,
        f"{amount}; {numeric}",
        "value of column history does not fit ARRAY<DECIMAL(38,30)>",
    ]
    # the original message is kept, so it can be replayed once the table can hold the value
    assert json.loads(stored[0]["payload"])["payload"]["after"]["amount"] == decimal_wire("100000000", 30)
    by_table = {row["table"]: row for row in status(lake.spark, lake.config)}
    assert by_table[f"{lake.database}.{TABLE}"]["quarantined"] == 5


def test_avro_values_that_do_not_fit_are_quarantined(spark, ansi):
    """Avro values reach decoding as Spark's JSON text of them (decode.from_avro_json), cast as they are."""
    row_schema = {"type": "struct", "fields": [{**INT, "optional": False, "field": "id"},
                                                {**decimal(10, 2), "optional": True, "field": "price"}]}
    fields = tuple(row_fields(avro_wire(row_schema)))
    table = TableSchema(TABLE, "pg.public.prices", tuple(row_fields(strip_wire(row_schema))), ("id",))
    values = ["12345678.25", "123456789.25", "not a number"]
    raw = spark.createDataFrame(
        [("pg.public.prices", 0, offset, json.dumps({"id": offset}),
          json.dumps({"after": {"id": offset, "price": value}, "source": {"lsn": 100 + offset}, "op": "c"}),
          f"test:{offset}", None) for offset, value in enumerate(values)],
        "__kafka_topic STRING, __kafka_partition INT, __kafka_offset BIGINT, key STRING, payload STRING, "
        "__origin STRING, __value_bytes BINARY",
    )
    shape = decode.MessageShape("envelope", fields)
    rows = decode.decode_events(decode.split_message(raw), shape, table, PLACEHOLDER, "2024-01-01T00:00:00+00:00")
    found = sorted(rows.selectExpr("id", "CAST(price AS STRING) AS price", "__reason").collect())
    assert [tuple(r) for r in found] == [
        (0, "12345678.25", None),
        (1, None, "value of column price does not fit DECIMAL(10,2)"),
        (2, None, "value of column price does not fit DECIMAL(10,2)"),
    ]


def test_an_avro_message_is_not_read_as_json(spark):
    """A value in Confluent's wire format (magic byte 0) is classified by its schema id, and an Avro key is not
    parsed as JSON (its key columns come from the value); a JSON message beside them still is (decode.split_message)."""
    avro_value = bytes([0, 0, 0, 0, 7]) + b"\x02\x06abc"
    raw = spark.createDataFrame(
        [("pg.public.t", 0, 0, "\u0000\u0000\u0000\u0000\u0003\u0002", avro_value.decode("latin-1"), "test:0",
          bytearray(avro_value)),
         ("pg.public.t", 0, 1, json.dumps({"id": 1}), json.dumps({"after": {"id": 1}, "op": "c"}), "test:1", None)],
        "__kafka_topic STRING, __kafka_partition INT, __kafka_offset BIGINT, key STRING, payload STRING, "
        "__origin STRING, __value_bytes BINARY",
    )
    rows = {r["__kafka_offset"]: r for r in decode.split_message(raw).collect()}
    assert rows[0]["value_schema_hash"] == f"{decode.AVRO_PREFIX}7"
    assert (rows[0]["value_json"], rows[0]["key_json"], rows[0]["key_schema"], rows[0]["value_keys"]) == \
        (None, None, None, [])
    assert json.loads(rows[1]["key_json"]) == {"id": 1} and json.loads(rows[1]["value_json"])["op"] == "c"
    assert sorted(rows[1]["value_keys"]) == ["after", "op"]
