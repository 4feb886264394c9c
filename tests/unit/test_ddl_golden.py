"""Golden DDL for Debezium 3.x Avro envelopes (PostgreSQL and MySQL) with every logical type lakecompact maps.

Each envelope in tests/fixtures/avro/ (`<name>.value.avsc` + `<name>.key.avsc`, as Confluent's AvroConverter
registers them for Debezium 3.x) becomes a TableSchema, and `Catalog.ddl` renders its statements; they must
equal `<name>.ddl.sql` to the letter, parse in sqlglot's hive and spark dialects, and be what
`lakecompact schema --avsc ... --dry-run` prints.

After an intended change to the templates or the type mapping, regenerate the golden files with

    LAKECOMPACT_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_ddl_golden.py -q -p no:cacheprovider

and read `git diff tests/fixtures/avro/` line by line before keeping it. The column types are also pinned
in EXPECTED_COLUMNS below, which regeneration does not touch: a wrong mapping cannot be blessed by accident.

A real connector emits one setting's encoding per column type; a few columns stand for other settings of
the same connectors, so that one table covers them all:
- PostgreSQL `nano_time` / `nano_ts`: the Nano* encodings (time.precision.mode=nanoseconds style);
  `wait_text`: interval.handling.mode=string; `attrs`: hstore.handling.mode=map.
- MySQL `c_date` / `c_time` / `c_ts`: time.precision.mode=connect; `big_unsigned`:
  bigint.unsigned.handling.mode=precise.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from lakecompact import cli
from lakecompact import config as config_module
from lakecompact.errors import SchemaError
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.model import TableSchema
from lakecompact.naming import table_for_topic
from lakecompact.schema.extract import from_avro

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "avro"
UPDATE = os.environ.get("LAKECOMPACT_UPDATE_GOLDEN") == "1"
# the config `lakecompact schema --avsc ... --dry-run` uses when it is given no --config
CONFIG = config_module.from_dict({"warehouse": "/warehouse", "source": {"kind": "files", "paths": ["-"]}})
_TITLE = re.compile(r"^-- (\S+\.sql\.j2)\n", re.MULTILINE)


@dataclass(frozen=True)
class Envelope:
    name: str  # the fixture files' stem
    topic: str

    @property
    def value(self) -> Path:
        return FIXTURES / f"{self.name}.value.avsc"

    @property
    def key(self) -> Path:
        return FIXTURES / f"{self.name}.key.avsc"

    @property
    def golden(self) -> Path:
        return FIXTURES / f"{self.name}.ddl.sql"

    @property
    def table(self) -> str:
        return table_for_topic(self.topic, CONFIG)

    def schema(self) -> TableSchema:
        value, key = (json.loads(p.read_text()) for p in (self.value, self.key))
        return from_avro(value, key, table=self.table, topic=self.topic)


POSTGRES = Envelope("postgres_all_types", "pgserver.public.all_types")
MYSQL = Envelope("mysql_all_types", "mysqlserver.shop.all_types")
ENVELOPES = {e.name: e for e in (POSTGRES, MYSQL)}

# The table type of every column, per docs/design.md "Schema extractor" (where it is silent: Hive has no TIME, so
# times of day are STRING; durations keep Debezium's microseconds). Source column type, then Debezium schema.
EXPECTED_COLUMNS = {
    "postgres_all_types": [
        ("id", "BIGINT"),  # bigserial: int64 with connect.default 0
        ("small_col", "SMALLINT"),  # smallint: int16
        ("int_col", "INT"),  # integer: int32
        ("big_col", "BIGINT"),  # bigint: int64
        ("real_col", "FLOAT"),  # real: float32
        ("double_col", "DOUBLE"),  # double precision: float64
        ("flag", "BOOLEAN"),  # boolean NOT NULL DEFAULT true
        ("bit1_col", "BOOLEAN"),  # bit(1): boolean
        ("bits_col", "BINARY"),  # bit(3): io.debezium.data.Bits
        ("varbits_col", "BINARY"),  # bit varying: io.debezium.data.Bits
        ("name", "STRING"),  # varchar(100) NOT NULL, with __debezium.source.column.* parameters
        ("description", "STRING"),  # text
        ("status", "STRING"),  # text NOT NULL DEFAULT 'new'
        ("price", "DECIMAL(12,2)"),  # numeric(12,2): Connect Decimal, with __debezium.source.column.*
        ("amount", "DECIMAL(10,4)"),  # numeric(10,4) NOT NULL DEFAULT 0: Decimal with a bytes default
        ("cash", "DECIMAL(38,2)"),  # money: Decimal scale 2 and no precision (Avro precision 64)
        ("any_number", "DECIMAL(38,18)"),  # numeric: io.debezium.data.VariableScaleDecimal record
        ("other_number", "DECIMAL(38,18)"),  # numeric: the same record, by reference
        ("birth_date", "DATE"),  # date: io.debezium.time.Date
        ("opens_at", "STRING"),  # time(3): io.debezium.time.Time
        ("closes_at", "STRING"),  # time: io.debezium.time.MicroTime
        ("created_ms", "TIMESTAMP"),  # timestamp(3): io.debezium.time.Timestamp
        ("updated_at", "TIMESTAMP"),  # timestamp DEFAULT now(): MicroTimestamp, connect.default 0
        ("seen_at", "TIMESTAMP"),  # timestamptz: io.debezium.time.ZonedTimestamp (UTC)
        ("alarm_at", "STRING"),  # timetz: io.debezium.time.ZonedTime
        ("nano_time", "STRING"),  # io.debezium.time.NanoTime
        ("nano_ts", "TIMESTAMP"),  # io.debezium.time.NanoTimestamp
        ("wait_for", "BIGINT"),  # interval: io.debezium.time.MicroDuration (microseconds)
        ("wait_text", "STRING"),  # interval: io.debezium.time.Interval (ISO 8601)
        ("uid", "STRING"),  # uuid: io.debezium.data.Uuid
        ("doc", "STRING"),  # jsonb: io.debezium.data.Json
        ("xml_doc", "STRING"),  # xml: io.debezium.data.Xml
        ("mood", "STRING"),  # enum type: io.debezium.data.Enum with allowed
        ("path", "STRING"),  # ltree: io.debezium.data.Ltree
        ("blob", "BINARY"),  # bytea: bytes
        ("tags", "ARRAY<STRING>"),  # text[]
        ("scores", "ARRAY<INT>"),  # integer[]
        ("prices", "ARRAY<DECIMAL(8,2)>"),  # numeric(8,2)[]
        ("attrs", "MAP<STRING,STRING>"),  # hstore: map of optional strings
        ("geom", "STRUCT<`wkb`:BINARY,`srid`:INT>"),  # PostGIS geometry: io.debezium.data.geometry.Geometry
        ("geog", "STRUCT<`wkb`:BINARY,`srid`:INT>"),  # PostGIS geography: ...geometry.Geography
        ("pt", "STRUCT<`x`:DOUBLE,`y`:DOUBLE,`wkb`:BINARY,`srid`:INT>"),  # point: ...geometry.Point
        ("embedding", "ARRAY<DOUBLE>"),  # pgvector vector: io.debezium.data.DoubleVector
        ("sparse", "STRUCT<`dimensions`:SMALLINT,`vector`:MAP<SMALLINT,DOUBLE>>"),  # sparsevec
    ],
    "mysql_all_types": [
        ("tenant_id", "INT"),  # INT NOT NULL, first key column
        ("order_id", "BIGINT"),  # BIGINT NOT NULL, second key column
        ("tiny_col", "SMALLINT"),  # TINYINT: int16
        ("is_active", "SMALLINT"),  # TINYINT(1) NOT NULL DEFAULT 1: int16
        ("small_col", "SMALLINT"),  # SMALLINT: int16
        ("medium_col", "INT"),  # MEDIUMINT: int32
        ("unsigned_int", "BIGINT"),  # INT UNSIGNED: int64
        ("big_col", "BIGINT"),  # BIGINT: int64
        ("big_unsigned", "DECIMAL(20,0)"),  # BIGINT UNSIGNED (precise): Decimal(20,0)
        ("float_col", "FLOAT"),  # FLOAT: float32
        ("double_col", "DOUBLE"),  # DOUBLE: float64
        ("bit1_col", "BOOLEAN"),  # BIT(1): boolean
        ("bits_col", "BINARY"),  # BIT(10): io.debezium.data.Bits
        ("price", "DECIMAL(10,2)"),  # DECIMAL(10,2) NOT NULL DEFAULT 0.00, with __debezium.source.column.*
        ("wide_decimal", "DECIMAL(38,30)"),  # DECIMAL(65,30): capped at 38, only 8 integer digits left
        ("yr", "INT"),  # YEAR: io.debezium.time.Year
        ("day", "DATE"),  # DATE: io.debezium.time.Date
        ("clock", "STRING"),  # TIME: io.debezium.time.MicroTime
        ("dt3", "TIMESTAMP"),  # DATETIME(3): io.debezium.time.Timestamp
        ("dt6", "TIMESTAMP"),  # DATETIME(6): io.debezium.time.MicroTimestamp
        ("ts", "TIMESTAMP"),  # TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP: ZonedTimestamp, default epoch
        ("c_date", "DATE"),  # org.apache.kafka.connect.data.Date (Avro logicalType date)
        ("c_time", "STRING"),  # org.apache.kafka.connect.data.Time (time-millis)
        ("c_ts", "TIMESTAMP"),  # org.apache.kafka.connect.data.Timestamp (timestamp-millis)
        ("status", "STRING"),  # ENUM(...) NOT NULL DEFAULT 'new': io.debezium.data.Enum
        ("flags", "STRING"),  # SET(...): io.debezium.data.EnumSet
        ("doc", "STRING"),  # JSON: io.debezium.data.Json
        ("label", "STRING"),  # VARCHAR(60) NOT NULL, with __debezium.source.column.*
        ("desc", "STRING"),  # TEXT, named with a reserved word
        ("note", "STRING"),  # VARCHAR DEFAULT 'n/a': optional with a default
        ("payload", "BINARY"),  # BLOB: bytes
        ("shape", "STRUCT<`wkb`:BINARY,`srid`:INT>"),  # GEOMETRY: io.debezium.data.geometry.Geometry
    ],
}
EXPECTED_KEYS = {"postgres_all_types": ("id",), "mysql_all_types": ("tenant_id", "order_id")}


def render_golden(envelope: Envelope, statements: list[tuple[str, str]]) -> str:
    head = (
        f"-- DDL of {envelope.name}.value.avsc + {envelope.name}.key.avsc (topic {envelope.topic}); "
        "regenerate: LAKECOMPACT_UPDATE_GOLDEN=1, see tests/unit/test_ddl_golden.py\n\n"
    )
    return head + "".join(f"-- {template}\n{sql};\n\n" for template, sql in statements)


def read_golden(envelope: Envelope) -> list[tuple[str, str]]:
    """(template, SQL) of every statement in a golden file; each statement follows a `-- <template>` line."""
    parts = _TITLE.split(envelope.golden.read_text())
    return [(template, body.strip().removesuffix(";")) for template, body in zip(parts[1::2], parts[2::2])]


def ddl(envelope: Envelope) -> list[tuple[str, str]]:
    return Catalog(None, CONFIG).ddl(envelope.schema())


@pytest.fixture(params=sorted(ENVELOPES))
def envelope(request) -> Envelope:
    return ENVELOPES[request.param]


def test_columns_and_key_follow_the_design_mapping(envelope):
    schema = envelope.schema()
    assert schema.columns == EXPECTED_COLUMNS[envelope.name]
    assert schema.key == EXPECTED_KEYS[envelope.name]


def test_ddl_equals_the_golden_file(envelope):
    rendered = render_golden(envelope, ddl(envelope))
    if UPDATE:
        envelope.golden.write_text(rendered)
    assert envelope.golden.read_text() == rendered
    templates = [template for template, _ in read_golden(envelope)]
    assert templates == ["create_table.sql.j2"] * 3 + ["create_view.sql.j2"]


@pytest.mark.parametrize("dialect", ["hive", "spark"])
def test_every_statement_parses(envelope, dialect):
    # The view is Spark SQL (MAX_BY, filter() with an `x -> ...` lambda), yet it parses as hive too: sqlglot's
    # Hive parser knows these (as ArgMax, ArrayFilter). So for the view "hive" checks syntax only, not that
    # Hive itself could run it; the view is for Spark, which shares the metastore.
    for template, sql in ddl(envelope):
        assert isinstance(sqlglot.parse_one(sql, read=dialect), exp.Create), template


def test_cli_dry_run_prints_the_golden_statements(envelope, capsys):
    code = cli.main([
        "schema", "--avsc", str(envelope.value), "--key-avsc", str(envelope.key),
        "--table", envelope.table, "--topic", envelope.topic, "--dry-run",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    columns, key = EXPECTED_COLUMNS[envelope.name], list(EXPECTED_KEYS[envelope.name])
    header = f"-- lake.{envelope.table}: key {key}, {len(columns)} columns, from {envelope.topic}\n"
    assert out == header + "".join(f"{sql};\n\n" for _, sql in read_golden(envelope))


def test_a_source_column_named_like_a_meta_column_is_refused_by_name():
    """The one column the mapper rejects in a valid Debezium schema: a `__` name, kept for meta columns."""
    value = json.loads(POSTGRES.value.read_text())
    row = value["fields"][0]["type"][1]  # before: ["null", Value]
    row["fields"].append({"name": "__version", "type": ["null", "long"], "default": None})
    with pytest.raises(SchemaError, match="source column '__version' starts with __"):
        from_avro(value, None, table=POSTGRES.table, topic=POSTGRES.topic)


def test_a_schema_without_a_key_warns_that_the_table_is_append_only(envelope, capsys):
    code = cli.main(["schema", "--avsc", str(envelope.value), "--table", envelope.table, "--dry-run"])
    captured = capsys.readouterr()
    assert code == 0
    assert f"-- lake.{envelope.table}: key none (append-only)" in captured.out
    assert captured.err.startswith(f"warning: schema {envelope.table}: no --key-avsc and no tables.{envelope.table}.key:")
    assert "append-only" in captured.err
