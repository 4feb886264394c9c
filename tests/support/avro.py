"""Avro as Confluent's AvroConverter writes it: a Connect JSON schema's Avro schema, and a JsonConverter payload
(the values in their JSON wire form) as the Avro value of the same event, in Confluent's wire format."""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

import avro.io
import avro.schema

# the Connect logical types AvroData writes with an Avro logical type of the same meaning
_CONNECT_LOGICAL = {
    "org.apache.kafka.connect.data.Date": "date",
    "org.apache.kafka.connect.data.Time": "time-millis",
    "org.apache.kafka.connect.data.Timestamp": "timestamp-millis",
}


def to_avro(schema: dict, named: set[str]) -> object:
    """A Connect JSON schema as Confluent's AvroData.fromConnectSchema writes it (the parts Debezium uses)."""
    kind, name = schema["type"], schema.get("name")
    props = {}
    if name:
        props["connect.name"] = name
    if "version" in schema:
        props["connect.version"] = schema["version"]
    if "doc" in schema:
        props["connect.doc"] = schema["doc"]
    if schema.get("parameters"):
        props["connect.parameters"] = schema["parameters"]
    if "default" in schema:
        props["connect.default"] = schema["default"]
    if kind == "struct":
        full = name or "io.confluent.connect.avro.ConnectDefault"
        if full in named:
            return full  # a second use of a named type is a reference to it
        named.add(full)
        namespace, _, simple = full.rpartition(".")
        record = {
            "type": "record",
            "name": simple,
            "fields": [avro_field(f, named) for f in schema["fields"]],
        }
        if namespace:
            record["namespace"] = namespace
        return {**record, **props}
    if kind == "array":
        return {"type": "array", "items": avro_type(schema["items"], named), **props}
    if kind == "map":
        return {"type": "map", "values": avro_type(schema["values"], named), **props}
    if name == "org.apache.kafka.connect.data.Decimal":
        params = schema["parameters"]
        precision = int(params.get("connect.decimal.precision", 64))  # AvroData's default when none is given
        extra = {"logicalType": "decimal", "scale": int(params["scale"]), "precision": precision}
        return {"type": "bytes", **extra, **props}
    if name in _CONNECT_LOGICAL:
        props["logicalType"] = _CONNECT_LOGICAL[name]
    base = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float", "double": "double",
            "boolean": "boolean", "string": "string", "bytes": "bytes"}[kind]  # fmt: skip
    if kind in ("int8", "int16"):
        props["connect.type"] = kind
    return {"type": base, **props} if props else base


def avro_type(schema: dict, named: set[str]) -> object:
    converted = to_avro(schema, named)
    if not schema.get("optional"):
        return converted
    return [converted, "null"] if "default" in schema else ["null", converted]


def avro_field(field: dict, named: set[str]) -> dict:
    out = {"name": field["field"], "type": avro_type(field, named)}
    if field.get("optional"):
        out["default"] = field.get("default")
    elif "default" in field:
        out["default"] = field["default"]
    return out


def datum(schema: dict, value: Any) -> Any:
    """A JsonConverter wire value of the Connect schema as the Avro value of it, in Avro's physical types:
    JSON's base64 text of bytes (plain bytes, decimals) as the bytes."""
    if value is None:
        return None
    kind = schema["type"]
    if kind == "bytes":
        return base64.b64decode(value)
    if kind == "array":
        return [datum(schema["items"], v) for v in value]
    if kind == "map":
        return {k: datum(schema["values"], v) for k, v in value.items()}
    if kind == "struct":
        return {f["field"]: datum(f, value.get(f["field"])) for f in schema["fields"]}
    return value


def encode(schema_id: int, avro_schema: Any, value: Any) -> bytes:
    """Confluent's wire format: magic byte 0, the schema id, then the Avro binary of `value` (of `datum`).

    Written by the physical schema (no logical types), so that a value is written as it is given, even one a
    logical type would refuse (a decimal wider than its precision): what a reader makes of it is the test."""
    buffer = io.BytesIO()
    buffer.write(b"\x00" + struct.pack(">I", schema_id))
    physical = avro.schema.parse(json.dumps(_physical(avro_schema)))
    avro.io.DatumWriter(physical).write(value, avro.io.BinaryEncoder(buffer))
    return buffer.getvalue()


def _physical(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_physical(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: _physical(v) for k, v in schema.items() if k not in ("logicalType", "precision", "scale")}


def converted(schema: dict, key_schema: dict, lines: list[dict], value_id: int,
              key_id: int) -> list[tuple[bytes | None, bytes | None]]:
    """JsonConverter's messages (kcat lines of tests/support/debezium.py) as AvroConverter writes the same (key,
    value): in Confluent's wire format, a null key or a tombstone's null value as it is."""
    value_avro = avro_type(schema, set())
    key_avro = avro_type(key_schema, set())
    out = []
    for line in lines:
        payload = json.loads(line["payload"])["payload"] if line["payload"] else None
        key = json.loads(line["key"])["payload"] if line["key"] else None
        out.append((key and encode(key_id, key_avro, datum(key_schema, key)),
                    None if payload is None else encode(value_id, value_avro, datum(schema, payload))))
    return out
