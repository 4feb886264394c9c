"""Decoding of every Connect / Debezium logical type, through one real land (docs/design.md "Schema extractor").

Values and encodings are those of tests/fixtures/debezium-events/types_RECONSTRUCTED_encodings_from_debezium_tests.json
(JsonConverter output for Debezium's own PostgreSQL test values), plus edge values of the same encodings.
One snapshot event per value lands into one table; each row sets one column, the others are null. Values are
read back through the view as strings where JSON would lose precision (decimals, dates, timestamps).
"""

import base64
import json

from tests.support.debezium import VSD, Topic, decimal, decimal_wire, vsd_wire
from tests.support.paths import DEBEZIUM_EVENTS

TYPES = DEBEZIUM_EVENTS / "types_RECONSTRUCTED_encodings_from_debezium_tests.json"


def _named(type_, name, **extra):
    return {"type": type_, "name": name, "version": 1, **extra}


POINT = {"type": "struct", "fields": [{"type": "double", "optional": False, "field": "x"},
                                      {"type": "double", "optional": False, "field": "y"},
                                      {"type": "bytes", "optional": True, "field": "wkb"},
                                      {"type": "int32", "optional": True, "field": "srid"}],
         "name": "io.debezium.data.geometry.Point", "version": 1, "doc": "Geometry (POINT)"}
GEOMETRY = {"type": "struct", "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                                         {"type": "int32", "optional": True, "field": "srid"}],
            "name": "io.debezium.data.geometry.Geometry", "version": 1}
NESTED = {"type": "struct", "fields": [{**_named("int32", "io.debezium.time.Date"), "optional": True, "field": "d"},
                                       {**decimal(3, 2), "optional": True, "field": "amount"},
                                       {"type": "string", "optional": True, "field": "label"}],
          "name": "pg.public.types.nested"}
AS_STRING = "CAST({c} AS STRING)"
STRINGS = "transform({c}, x -> CAST(x AS STRING))"

# column, Connect schema, Spark type, read-back expression, [(wire value, expected read-back)]
CASES = [
    ("dec_3_2", decimal(3, 2), "decimal(3,2)", AS_STRING, [("bg==", "1.10")]),
    ("dec_6_4", decimal(6, 4), "decimal(6,4)", AS_STRING, [("A2P4", "22.2200")]),
    ("money", _named("bytes", "org.apache.kafka.connect.data.Decimal", parameters={"scale": "2"}), "decimal(38,2)",
     AS_STRING, [("AeIT", "1234.11"), ("/h3t", "-1234.11")]),
    ("dec_38_0", decimal(38, 0), "decimal(38,0)", AS_STRING,
     [(decimal_wire("9" * 38, 0), "9" * 38), (decimal_wire("-" + "9" * 34, 0), "-" + "9" * 34),
      (decimal_wire("-1" + "0" * 37, 0), "-1" + "0" * 37), ("/w==", "-1"), ("AA==", "0")]),
    ("dec_20_5", decimal(20, 5), "decimal(20,5)", AS_STRING,
     [(decimal_wire("-123456789012345.67891", 5), "-123456789012345.67891")]),
    ("dec_5_4", decimal(5, 4), "decimal(5,4)", AS_STRING,
     [(decimal_wire("-0.0012", 4), "-0.0012"), (decimal_wire("0.0300", 4), "0.0300")]),
    ("dvs", VSD, "decimal(38,18)", AS_STRING,
     [({"scale": 4, "value": "AYr3"}, "10.111100000000000000"), (vsd_wire("-123.45"), "-123.450000000000000000"),
      (vsd_wire("42"), "42.000000000000000000")]),
    ("dec_double", {"type": "double"}, "double", "{c}", [(1.1, 1.1)]),
    ("dec_string", {"type": "string"}, "string", "{c}", [("1.10", "1.10"), ("NAN", "NAN")]),
    ("date", _named("int32", "io.debezium.time.Date"), "date", AS_STRING,
     [(17109, "2016-11-04"), (-1, "1969-12-31"), (0, "1970-01-01")]),
    ("connect_date", _named("int32", "org.apache.kafka.connect.data.Date"), "date", AS_STRING, [(17109, "2016-11-04")]),
    ("time_ms", _named("int32", "io.debezium.time.Time"), "string", "{c}", [(49890123, "13:51:30.123")]),
    ("connect_time", _named("int32", "org.apache.kafka.connect.data.Time"), "string", "{c}",
     [(49890123, "13:51:30.123")]),
    ("time_us", _named("int64", "io.debezium.time.MicroTime"), "string", "{c}",
     [(49890000000, "13:51:30"), (86400000000, "24:00:00"), (49890123456, "13:51:30.123456"), (0, "00:00:00")]),
    ("time_ns", _named("int64", "io.debezium.time.NanoTime"), "string", "{c}",
     [(49890000000000, "13:51:30"), (49890123456789, "13:51:30.123456")]),
    ("ts_ms", _named("int64", "io.debezium.time.Timestamp"), "timestamp", AS_STRING,
     [(1478267490123, "2016-11-04 13:51:30.123"), (-1, "1969-12-31 23:59:59.999")]),
    ("connect_ts", _named("int64", "org.apache.kafka.connect.data.Timestamp"), "timestamp", AS_STRING,
     [(1478267490123, "2016-11-04 13:51:30.123")]),
    ("ts_us", _named("int64", "io.debezium.time.MicroTimestamp"), "timestamp", AS_STRING,
     [(1478267490123456, "2016-11-04 13:51:30.123456"), (-1, "1969-12-31 23:59:59.999999")]),
    ("ts_ns", _named("int64", "io.debezium.time.NanoTimestamp"), "timestamp", AS_STRING,
     [(1478267490123456000, "2016-11-04 13:51:30.123456"), (-1_000_000, "1969-12-31 23:59:59.999")]),
    ("ts_zoned", _named("string", "io.debezium.time.ZonedTimestamp"), "timestamp", AS_STRING,
     [("2016-11-04T11:51:30.123456Z", "2016-11-04 11:51:30.123456"), ("2020-04-01T11:51:02.000000Z", "2020-04-01 11:51:02"),
      ("2020-04-01T11:51:02Z", "2020-04-01 11:51:02"), ("2020-04-01T11:51:02.500Z", "2020-04-01 11:51:02.5")]),
    ("time_zoned", _named("string", "io.debezium.time.ZonedTime"), "string", "{c}",
     [("11:51:30.123789Z", "11:51:30.123789Z")]),
    ("duration", _named("int64", "io.debezium.time.MicroDuration"), "bigint", "{c}", [(37091106780000, 37091106780000)]),
    ("interval", _named("string", "io.debezium.time.Interval"), "string", "{c}",
     [("P1Y2M3DT4H5M6.78S", "P1Y2M3DT4H5M6.78S")]),
    ("year", _named("int32", "io.debezium.time.Year"), "int", "{c}", [(2016, 2016)]),
    ("jb", _named("string", "io.debezium.data.Json"), "string", "{c}", [('{"bar": "baz"}', '{"bar": "baz"}')]),
    ("uid", _named("string", "io.debezium.data.Uuid"), "string", "{c}",
     [("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")]),
    ("xml", _named("string", "io.debezium.data.Xml"), "string", "{c}",
     [("<foo>bar</foo><foo>bar</foo>", "<foo>bar</foo><foo>bar</foo>")]),
    ("rating", _named("string", "io.debezium.data.Enum", parameters={"allowed": "G,PG,PG-13,R,NC-17"}), "string",
     "{c}", [("PG-13", "PG-13")]),
    ("letters", _named("string", "io.debezium.data.EnumSet", parameters={"allowed": "a,b,c"}), "string", "{c}",
     [("a,c", "a,c")]),
    ("bits", _named("bytes", "io.debezium.data.Bits", parameters={"length": "2"}), "binary", "hex({c})",
     [("Aw==", "03"), ("AQID", "010203")]),
    ("bytea", {"type": "bytes"}, "binary", "hex({c})", [("AQID", "010203"), ("", "")]),
    ("p", POINT, "struct<x:double,y:double,wkb:binary,srid:int>", "{c}",
     [({"x": 1.0, "y": 1.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAPA/", "srid": None},
       {"x": 1.0, "y": 1.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAPA/"})]),
    ("geom", GEOMETRY, "struct<wkb:binary,srid:int>", "{c}", [({"wkb": "AQID", "srid": 3187}, {"wkb": "AQID", "srid": 3187})]),
    ("int_array", {"type": "array", "items": {"type": "int32", "optional": True}}, "array<int>", "{c}",
     [([1, 2, 3], [1, 2, 3]), ([], [])]),
    ("text_array", {"type": "array", "items": {"type": "string", "optional": True}}, "array<string>", "{c}",
     [(["a", None, "c"], ["a", None, "c"])]),
    ("dec_array", {"type": "array", "items": {**decimal(5, 2), "optional": True}}, "array<decimal(5,2)>", STRINGS,
     [([decimal_wire("1.10", 2), decimal_wire("-2.50", 2)], ["1.10", "-2.50"])]),
    ("date_array", {"type": "array", "items": {**_named("int32", "io.debezium.time.Date"), "optional": True}},
     "array<date>", STRINGS, [([17109, 0], ["2016-11-04", "1970-01-01"])]),
    ("hstore_json", _named("string", "io.debezium.data.Json"), "string", "{c}", [('{"key":"val"}', '{"key":"val"}')]),
    ("hstore_map", {"type": "map", "keys": {"type": "string", "optional": False},
                    "values": {"type": "string", "optional": True}}, "map<string,string>", "{c}",
     [({"key": "val"}, {"key": "val"})]),
    ("nested", NESTED, "struct<d:date,amount:decimal(3,2),label:string>",
     ("IF({c} IS NULL, NULL, named_struct('d', CAST({c}.d AS STRING), 'amount', CAST({c}.amount AS STRING), "
      "'label', {c}.label))"),
     [({"d": 17109, "amount": "bg==", "label": "x"}, {"d": "2016-11-04", "amount": "1.10", "label": "x"})]),
    ("small", {"type": "int16"}, "smallint", "{c}", [(-32768, -32768)]),
    ("tiny", {"type": "int8"}, "tinyint", "{c}", [(127, 127)]),
    ("big", {"type": "int64"}, "bigint", "{c}", [(9223372036854775807, 9223372036854775807)]),
    ("real", {"type": "float"}, "float", "{c}", [(1.5, 1.5)]),
    ("flag", {"type": "boolean"}, "boolean", "{c}", [(True, True)]),
]


def _land(lake, cases):
    """One snapshot event per value; returns {id: {column: expected read-back}} and the view's name."""
    columns = [("id", {"type": "int32"})] + [(name, schema) for name, schema, *_ in cases]
    topic = Topic("pg.public.types", columns, ["id"])
    events, expected = [], {}
    for name, _, _, _, values in cases:
        for wire, value in values:
            id_ = len(events) + 1
            events.append(topic.event("r", {"id": id_, name: wire}, 100 + id_))
            expected[id_] = {name: value}
    lake.write(events)
    lake.land()
    return expected, f"`{lake.database}`.`public_types`"


def _read_back(lake, view, cases):
    select = ", ".join(f"{expr.format(c=f'`{name}`')} AS `{name}`" for name, _, _, expr, _ in cases)
    rows = lake.rows(f"SELECT id, {select} FROM {view}")
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in rows}


def test_every_logical_type_decodes(lake):
    expected, view = _land(lake, CASES)
    types = dict(lake.spark.table(view).dtypes)
    assert {name: types[name] for name, *_ in CASES} == {name: kind for name, _, kind, *_ in CASES}
    # each row holds its one value and nothing else (to_json leaves nulls out)
    assert _read_back(lake, view, CASES) == expected


def test_negative_decimals_with_38_digits_land(lake):
    cases = [
        ("dec_38_0", decimal(38, 0), "decimal(38,0)", AS_STRING,
         [(decimal_wire("-" + "9" * 38, 0), "-" + "9" * 38), (decimal_wire("-" + "1" * 38, 0), "-" + "1" * 38)]),
        ("dec_38_38", decimal(38, 38), "decimal(38,38)", AS_STRING,
         [(decimal_wire("-0." + "9" * 38, 38), "-0." + "9" * 38)]),
    ]
    expected, view = _land(lake, cases)
    assert _read_back(lake, view, cases) == expected


def test_cases_follow_the_shared_encodings():
    """The wire values above are those of the encodings file (TYPES), and decimal_wire agrees with it."""
    shared = json.loads(TYPES.read_text())
    assert shared["decimal_precise_NUMERIC(3,2)"]["json"] == "bg==" == decimal_wire("1.10", 2)
    assert decimal_wire("9" * 38, 0) == "SztMqFqGxHoJiiI//////w==" and decimal_wire("-1", 0) == "/w=="
    assert shared["decimal_precise_NUMERIC(6,4)"]["json"] == "A2P4" == decimal_wire("22.2200", 4)
    assert shared["decimal_precise_MONEY"]["json"] == "AeIT" == decimal_wire("1234.11", 2)
    assert shared["decimal_precise_MONEY"]["negative_-1234.11"] == "/h3t" == decimal_wire("-1234.11", 2)
    assert shared["variable_scale_decimal_unconstrained_NUMERIC"]["json"] == {"scale": 4, "value": "AYr3"} == vsd_wire("10.1111")
    assert shared["io.debezium.time.Date"]["json"] == 17109
    assert shared["io.debezium.time.Time (TIME(1..3), adaptive)"]["json"] == 49890123
    assert shared["io.debezium.time.MicroTime"]["json"] == 49890000000
    assert shared["io.debezium.time.MicroTime"]["edge"]["'24:00:00'::time"] == 86400000000
    assert shared["io.debezium.time.NanoTime"]["json_for_13:51:30"] == 49890000000000
    assert shared["io.debezium.time.Timestamp (TIMESTAMP(1..3))"]["json"] == 1478267490123
    assert shared["io.debezium.time.MicroTimestamp (TIMESTAMP / TIMESTAMP(4..6))"]["json"] == 1478267490123456
    assert shared["io.debezium.time.NanoTimestamp"]["json"] == 1478267490123456000
    assert shared["io.debezium.time.ZonedTimestamp"]["json"] == "2016-11-04T11:51:30.123456Z"
    assert shared["io.debezium.data.Bits"]["json"] == "Aw==" and base64.b64decode("Aw==") == b"\x03"
    assert shared["io.debezium.data.geometry.Point (PG POINT)"]["json"]["wkb"] == "AQEAAAAAAAAAAADwPwAAAAAAAPA/"
    assert shared["BYTEA (binary.handling.mode=bytes default)"]["json"] == "AQID"
    assert shared["PG arrays"]["json"] == [1, 2, 3]


def test_negative_decimals_with_35_to_37_digits(lake):
    cases = [
        ("dec_38_0", decimal(38, 0), "decimal(38,0)", AS_STRING,
         [(decimal_wire("-" + "9" * 35, 0), "-" + "9" * 35), (decimal_wire("-" + "9" * 37, 0), "-" + "9" * 37),
          (decimal_wire("-1234567890123456789012345678901234567", 0), "-1234567890123456789012345678901234567")]),
        ("dec_38_10", decimal(38, 10), "decimal(38,10)", AS_STRING,
         [(decimal_wire("-1234567890123456789012345.6789012345", 10), "-1234567890123456789012345.6789012345")]),
    ]
    expected, view = _land(lake, cases)
    assert _read_back(lake, view, cases) == expected
