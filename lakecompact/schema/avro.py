"""Avro schemas from a schema registry (Confluent AvroConverter) into Kafka Connect JSON schemas.

The registry holds the Avro schema that Confluent's AvroConverter derived from a Connect schema; it
keeps the Connect facts in properties (`connect.name`, `connect.version`, `connect.parameters`,
`connect.default`, `connect.type`). This module reverses that, so the result is the schema that
JsonConverter would have embedded for the same Connect schema and `lakecompact.lake.connect`
(`row_fields`, `table_type`, `decode`) works on it unchanged:

>>> connect_schema({"type": "int", "connect.type": "int16"})
{'type': 'int16', 'optional': False}
>>> connect_schema(["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"}])
{'type': 'int64', 'optional': True, 'name': 'io.debezium.time.MicroTimestamp', 'version': 1}

Avro logical types without a `connect.name` are mapped as Connect would read them (decimal → Decimal,
date → Date, time-millis → Time, timestamp-millis → Timestamp), and the micro-precision ones to the
Debezium names of the same meaning (time-micros → MicroTime, timestamp-micros → MicroTimestamp).
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import avro.errors
import avro.schema

from lakecompact.errors import SchemaError
from lakecompact.lake.connect import DECIMAL

ENUM = "io.debezium.data.Enum"
UNION = "io.confluent.connect.avro.Union"
MAP_ENTRY = "io.confluent.connect.avro.MapEntry"
_CONNECT_DEFAULT_NAME = "io.confluent.connect.avro.ConnectDefault"  # AvroConverter's name for unnamed structs
_AVRO_DEFAULT_PRECISION = 64

_PRIMITIVE = {
    "boolean": "boolean",
    "int": "int32",
    "long": "int64",
    "float": "float",  # JsonConverter writes FLOAT32 as "float" and FLOAT64 as "double"
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "fixed": "bytes",
    "enum": "string",
}
_CONNECT_TYPES = {"int8", "int16"}  # AvroConverter writes them as Avro int with "connect.type"
_LOGICAL = {  # Avro logical type → the Connect (or Debezium) schema name of the same meaning
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
    "uuid": "io.debezium.data.Uuid",
}
_ENVELOPE_FIELDS = ("before", "after")


class AvroSchemaError(SchemaError):
    """An Avro schema that is not valid Avro, or not a shape lakecompact can map to a table."""

    def __init__(self, what: str, expected: str, got: object = None):
        self.what, self.expected, self.got = what, expected, got
        message = f"{what}: expected {expected}"
        if got is not None:
            message += f", got {got!r}"
        super().__init__(message)


def parse(avro_schema: dict | list | str) -> avro.schema.Schema:
    """Parse and validate an Avro schema (a JSON text, or its parsed dict/list)."""
    text = avro_schema if isinstance(avro_schema, str) else json.dumps(avro_schema)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
            return avro.schema.parse(text)
    except (avro.errors.AvroException, json.JSONDecodeError, TypeError) as error:
        raise AvroSchemaError(
            "Avro schema", "a valid Avro schema", f"{type(error).__name__}: {error}"
        ) from error


def connect_schema(avro_schema: dict | list | str | avro.schema.Schema) -> dict[str, Any]:
    """The Kafka Connect JSON schema (as JsonConverter writes it) of an Avro schema."""
    schema = avro_schema if isinstance(avro_schema, avro.schema.Schema) else parse(avro_schema)
    return _convert(schema, optional=False, default=_NO_DEFAULT)


def envelope_row_schema(avro_envelope: dict | str | avro.schema.Schema) -> dict[str, Any]:
    """The row of a Debezium value schema as a Connect struct: `after` of an envelope, or the flattened record.

    A flattened record (ExtractNewRecordState) loses the `__` fields the SMT added (`__deleted`,
    `__op`, `__source_ts_ms`, ...): they are not source columns.
    """
    value = connect_schema(avro_envelope)
    if value["type"] != "struct":
        raise AvroSchemaError("Debezium value schema", "an Avro record", value["type"])
    fields = {f["field"]: f for f in value.get("fields", [])}
    if value.get("name", "").endswith(".Envelope") or (
        "op" in fields and set(_ENVELOPE_FIELDS) & set(fields)
    ):
        row = fields.get("after") or fields.get("before")
        if row is None or row["type"] != "struct":
            raise AvroSchemaError(
                f"envelope {value.get('name', '?')}", "an `after` field of record type", row and row["type"]
            )
        return {k: v for k, v in row.items() if k != "field"}
    return {**value, "fields": [f for f in value.get("fields", []) if not f["field"].startswith("__")]}


def key_fields(avro_key_schema: dict | str | avro.schema.Schema | None) -> list[str]:
    """The key columns: the field names of the key record, in order; [] for no key schema (append-only)."""
    if avro_key_schema is None:
        return []
    key = connect_schema(avro_key_schema)
    if key["type"] != "struct":
        raise AvroSchemaError("Debezium key schema", "an Avro record of the primary-key columns", key["type"])
    return [f["field"] for f in key.get("fields", [])]


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Any = _NoDefault()


def _convert(schema: avro.schema.Schema, *, optional: bool, default: Any) -> dict[str, Any]:
    if isinstance(schema, avro.schema.UnionSchema):
        return _union(schema, optional=optional, default=default)
    props = dict(schema.other_props)
    kind = schema.type
    if kind == "null":
        raise AvroSchemaError("Avro schema", "a type other than a bare null", "null")
    if kind == "record":
        return _record(schema, props, optional=optional, default=default)
    if kind == "array":
        return _array(schema, props, optional=optional, default=default)
    if kind == "map":
        values = _convert(schema.values, optional=False, default=_NO_DEFAULT)
        out = {"type": "map", "keys": {"type": "string", "optional": False}, "values": values}
        return _finish(out, props, optional=optional, default=default)
    if kind not in _PRIMITIVE:
        raise AvroSchemaError(
            "Avro schema", f"one of {', '.join(sorted(_PRIMITIVE))}, record, array, map, union", kind
        )
    connect_type = props.get("connect.type")
    out = {"type": connect_type if connect_type in _CONNECT_TYPES else _PRIMITIVE[kind]}
    _logical(schema, props)
    if kind == "enum":
        props.setdefault("connect.name", ENUM)
        params = props.setdefault("connect.parameters", {})
        params.setdefault("allowed", ",".join(schema.symbols))
    if kind == "fixed":
        props.setdefault("connect.parameters", {}).setdefault("connect.fixed.size", str(schema.size))
    return _finish(out, props, optional=optional, default=default)


def _logical(schema: avro.schema.Schema, props: dict[str, Any]) -> None:
    """Fill in connect.name/parameters from a valid Avro logical type when AvroConverter left none."""
    logical = getattr(schema, "logical_type", None)
    if logical == "decimal":
        props.setdefault("connect.name", DECIMAL)
        params = dict(props.get("connect.parameters") or {})
        params.setdefault("scale", str(schema.scale))
        if schema.precision != _AVRO_DEFAULT_PRECISION:  # AvroConverter's stand-in for "no precision given"
            params.setdefault("connect.decimal.precision", str(schema.precision))
        props["connect.parameters"] = params
    elif logical in _LOGICAL:
        props.setdefault("connect.name", _LOGICAL[logical])


def _record(schema: avro.schema.RecordSchema, props: dict[str, Any], *, optional: bool, default: Any) -> dict:
    fields = []
    for field in schema.fields:
        field_default = field.default if field.has_default else _NO_DEFAULT
        converted = _convert(field.type, optional=False, default=field_default)
        if field.doc and "doc" not in converted:
            converted = _ordered({**converted, "doc": field.doc})
        fields.append({**converted, "field": field.name})
    if schema.fullname == MAP_ENTRY:
        raise AvroSchemaError("Avro record", f"{MAP_ENTRY} only as the items of an array", schema.fullname)
    props.setdefault(
        "connect.name", None if schema.fullname.startswith(_CONNECT_DEFAULT_NAME) else schema.fullname
    )
    if schema.doc:
        props.setdefault("connect.doc", schema.doc)
    return _finish({"type": "struct", "fields": fields}, props, optional=optional, default=default)


def _array(schema: avro.schema.ArraySchema, props: dict[str, Any], *, optional: bool, default: Any) -> dict:
    items = schema.items
    if isinstance(items, avro.schema.RecordSchema) and items.fullname == MAP_ENTRY:
        # AvroConverter writes a Connect map with non-string keys as an array of key/value records
        entry = {f.name: f.type for f in items.fields}
        if set(entry) != {"key", "value"}:
            raise AvroSchemaError(MAP_ENTRY, "exactly the fields key and value", sorted(entry))
        out = {
            "type": "map",
            "keys": _convert(entry["key"], optional=False, default=_NO_DEFAULT),
            "values": _convert(entry["value"], optional=False, default=_NO_DEFAULT),
        }
        return _finish(out, props, optional=optional, default=default)
    out = {"type": "array", "items": _convert(items, optional=False, default=_NO_DEFAULT)}
    return _finish(out, props, optional=optional, default=default)


def _union(schema: avro.schema.UnionSchema, *, optional: bool, default: Any) -> dict[str, Any]:
    branches = [s for s in schema.schemas if s.type != "null"]
    nullable = len(branches) < len(schema.schemas)
    if len(branches) == 1:
        return _convert(branches[0], optional=optional or nullable, default=default)
    if not branches:
        raise AvroSchemaError("Avro union", "at least one branch other than null", "only null")
    # AvroConverter reads a general union as a struct with one optional field per branch
    fields = []
    for branch in branches:
        name = branch.name if isinstance(branch, avro.schema.NamedSchema) else branch.type
        fields.append({**_convert(branch, optional=True, default=_NO_DEFAULT), "field": name})
    out = {"type": "struct", "fields": fields}
    return _finish(out, {"connect.name": UNION}, optional=optional or nullable, default=_NO_DEFAULT)


def _finish(out: dict[str, Any], props: dict[str, Any], *, optional: bool, default: Any) -> dict[str, Any]:
    """Add optional, name, version, doc, parameters and default, in JsonConverter's key order."""
    out["optional"] = optional
    if props.get("connect.name"):
        out["name"] = props["connect.name"]
    if props.get("connect.version") is not None:
        out["version"] = int(props["connect.version"])
    if props.get("connect.doc"):
        out["doc"] = props["connect.doc"]
    if props.get("connect.parameters"):
        parameters = props["connect.parameters"]
        if not isinstance(parameters, dict):
            raise AvroSchemaError("connect.parameters", "an object of string values", parameters)
        out["parameters"] = {str(k): str(v) for k, v in parameters.items()}
    value = props.get("connect.default", default)
    if value is not _NO_DEFAULT and value is not None:
        out["default"] = _json_default(value, out)
    return _ordered(out)


def _json_default(value: Any, schema: dict[str, Any]) -> Any:
    """An Avro default in JsonConverter's form: bytes (Avro writes them as \\u00XX strings) become base64."""
    if schema["type"] == "bytes" and isinstance(value, str):
        return base64.b64encode(value.encode("latin-1")).decode()
    return value


_KEY_ORDER = (
    "type",
    "fields",
    "items",
    "keys",
    "values",
    "optional",
    "name",
    "version",
    "doc",
    "parameters",
    "default",
)


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    rank = {k: i for i, k in enumerate(_KEY_ORDER)}
    return dict(sorted(schema.items(), key=lambda item: rank.get(item[0], len(rank))))
