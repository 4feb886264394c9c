"""Debezium events as real connectors write them (Kafka Connect JSON, with the schema embedded), in kcat -J form.

The shapes follow tests/fixtures/debezium-events (envelope field order, source blocks of the PostgreSQL and
MySQL connectors, key schema, tombstones); values are given in their wire form.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, localcontext
from typing import Any

PLACEHOLDER = "__debezium_unavailable_value"

INT = {"type": "int32"}
BIGINT = {"type": "int64"}
TEXT = {"type": "string"}
DOUBLE = {"type": "double"}
BOOL = {"type": "boolean"}
BYTES = {"type": "bytes"}
DATE = {"type": "int32", "name": "io.debezium.time.Date", "version": 1}
MICRO_TS = {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1}
ZONED_TS = {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "version": 1}
JSON = {"type": "string", "name": "io.debezium.data.Json", "version": 1}


def decimal(precision: int, scale: int) -> dict:
    return {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
    }


def decimal_wire(value: str | Decimal, scale: int) -> str:
    with localcontext() as exact:
        exact.prec = 100  # the default 28 digits would round a DECIMAL(38,s)
        unscaled = int((Decimal(value) * (10**scale)).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


# PostgreSQL's unconstrained numeric: io.debezium.data.VariableScaleDecimal, the scale and the unscaled value
VSD = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                    {"type": "bytes", "optional": False, "field": "value"}],
       "name": "io.debezium.data.VariableScaleDecimal", "version": 1, "doc": "Variable scaled decimal"}


def vsd_wire(value: str) -> dict:
    """io.debezium.data.VariableScaleDecimal wire value: the scale and the unscaled big-endian bytes."""
    d = Decimal(value)
    scale = max(-d.as_tuple().exponent, 0)
    return {"scale": scale, "value": decimal_wire(value, scale)}


def days(d: date) -> int:
    """io.debezium.time.Date wire value: the days since 1970-01-01."""
    return (d - date(1970, 1, 1)).days


def _field(name: str, schema: dict, optional: bool = True) -> dict:
    return {**schema, "optional": optional, "field": name}


_PG_SOURCE = [
    ("version", TEXT, False), ("connector", TEXT, False), ("name", TEXT, False), ("ts_ms", BIGINT, False),
    ("snapshot", TEXT, True), ("db", TEXT, False), ("sequence", TEXT, True), ("ts_us", BIGINT, True),
    ("ts_ns", BIGINT, True), ("schema", TEXT, False), ("table", TEXT, False), ("txId", BIGINT, True),
    ("lsn", BIGINT, True), ("xmin", BIGINT, True),
]
_MYSQL_SOURCE = [
    ("version", TEXT, False), ("connector", TEXT, False), ("name", TEXT, False), ("ts_ms", BIGINT, False),
    ("snapshot", TEXT, True), ("db", TEXT, False), ("sequence", TEXT, True), ("ts_us", BIGINT, True),
    ("ts_ns", BIGINT, True), ("table", TEXT, True), ("server_id", BIGINT, False), ("gtid", TEXT, True),
    ("file", TEXT, False), ("pos", BIGINT, False), ("row", INT, False), ("thread", BIGINT, True),
    ("query", TEXT, True),
]


@dataclass
class Topic:
    """One captured table: builds its change events and numbers their Kafka offsets."""

    name: str  # e.g. dbserver1.public.orders
    columns: list[tuple[str, dict]]
    key: list[str] | None
    connector: str = "postgresql"
    with_schema: bool = True
    partition: int = 0
    next_offset: int = 0
    required: set[str] = field(default_factory=set)

    @property
    def server(self) -> str:
        return self.name.split(".")[0]

    def _row_schema(self, name: str) -> dict:
        return {
            "type": "struct",
            "fields": [_field(c, s, optional=c not in (self.key or []) and c not in self.required) for c, s in self.columns],
            "optional": True,
            "name": f"{self.name}.Value",
            "field": name,
        }

    def value_schema(self) -> dict:
        source_fields = _PG_SOURCE if self.connector == "postgresql" else _MYSQL_SOURCE
        return {
            "type": "struct",
            "fields": [
                self._row_schema("before"),
                self._row_schema("after"),
                {
                    "type": "struct",
                    "fields": [_field(n, s, o) for n, s, o in source_fields],
                    "optional": False,
                    "name": f"io.debezium.connector.{self.connector}.Source",
                    "field": "source",
                },
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
            ],
            "optional": False,
            "name": f"{self.name}.Envelope",
            "version": 2,
        }

    def key_schema(self) -> dict:
        fields = [_field(c, s, optional=False) for c, s in self.columns if c in (self.key or [])]
        return {"type": "struct", "fields": fields, "optional": False, "name": f"{self.name}.Key"}

    def source(self, ts_ms: int, position: Any, snapshot: str = "false", ts_us: int | None = None) -> dict:
        parts = self.name.split(".")
        ts_us = ts_ms * 1000 if ts_us is None else ts_us
        common = {"version": "3.6.1.Final", "connector": self.connector, "name": self.server, "ts_ms": ts_ms,
                  "snapshot": snapshot, "db": "inventory", "sequence": None, "ts_us": ts_us, "ts_ns": ts_us * 1000}
        if self.connector == "postgresql":
            return {**common, "schema": parts[1], "table": parts[-1], "txId": 700, "lsn": position, "xmin": None}
        file, pos, row = position
        return {**common, "table": parts[-1], "server_id": 223344, "gtid": None, "file": file, "pos": pos,
                "row": row, "thread": 7, "query": None}

    def event(
        self,
        op: str,
        row: dict | None,
        position: Any,
        ts_ms: int = 1_700_000_000_000,
        *,
        before: dict | None = None,
        offset: int | None = None,
        ts_us: int | None = None,
    ) -> dict:
        """One kcat -J line. `row` is the after image (the before image for op d); the source's ts_us (and ts_ns)
        are ts_ms's unless given."""
        if op == "d":
            before, after = (row if before is None else before), None
        elif op == "t":
            before = after = None
        else:
            after = row
        payload = {
            "before": before,
            "after": after,
            "source": self.source(ts_ms, position, "true" if op == "r" else "false", ts_us),
            "op": op,
            "ts_ms": ts_ms + 5,
        }
        key = None
        if self.key and op != "t":
            image = row or before or {}
            key_payload = {k: image.get(k) for k in self.key}
            key = self._wrap(self.key_schema(), key_payload)
        return self.line(key, self._wrap(self.value_schema(), payload), offset)

    def tombstone(self, key_values: dict, offset: int | None = None) -> dict:
        return self.line(self._wrap(self.key_schema(), key_values), None, offset)

    def _wrap(self, schema: dict, payload: Any) -> str:
        body = {"schema": schema, "payload": payload} if self.with_schema else payload
        return json.dumps(body, separators=(",", ":"))

    def line(self, key: str | None, payload: str | None, offset: int | None = None) -> dict:
        if offset is None:
            offset = self.next_offset
            self.next_offset += 1
        return {"topic": self.name, "partition": self.partition, "offset": offset, "tstype": "create",
                "ts": 1_700_000_000_000 + offset, "broker": 1, "key": key, "payload": payload}


def write_kcat(path, lines: list[dict | str], mode: str = "w") -> None:
    with open(path, mode) as out:
        out.writelines((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
