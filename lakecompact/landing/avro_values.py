"""Avro values (Confluent wire format) decoded once, by `from_avro`, into the struct that decode_events reads.

`from_avro` gives the value as Avro holds it. This module lays it out as the JSON path's wire struct (the same
field names, and a `__corrupt` that says the value does not fit that struct) but keeps Avro's own
representation of each value, which `connect.decode(..., avro=True)` turns into the table's types. A value
meets the fate it met when Avro values were written out as JSON text and parsed again by the JSON path
(docs/design.md "Schema extractor"): the JSON parser refused a value that does not fit its wire type (an
int16 beyond 32767, an array where a map is expected) as a corrupt record, so such a value sets `__corrupt`
here; it dropped a struct field that Avro names otherwise (a union's branches), which is null here.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakecompact.errors import SchemaError
from lakecompact.identifiers import struct_type
from lakecompact.lake.connect import Field, wire_type
from lakecompact.lake.model import TableSchema
from lakecompact.landing import decode

# Confluent's wire format: magic byte 0 and a 4-byte schema id before the Avro binary
_AVRO_BODY = "substring(__value_bytes, 6)"
_CORRUPT = "the value does not fit its wire type"
# the Spark type each Connect primitive is read as from JSON; Avro's value of another type did not parse
_READ_AS = {
    "int8": T.IntegerType(), "int16": T.IntegerType(), "int32": T.IntegerType(), "int64": T.LongType(),
    "float32": T.FloatType(), "float": T.FloatType(), "float64": T.DoubleType(), "double": T.DoubleType(),
    "boolean": T.BooleanType(), "string": T.StringType(), "bytes": T.BinaryType(),
}
_TYPED = (T.DecimalType, T.DateType, T.TimestampType)  # avro_wire's types, when Avro gives their logical type

# a value laid out as its wire type: the column (None: the value as it is), and when it does not fit that type
# (None: it always fits)
Laid = tuple[Column | None, Column | None]


def decode_events(
    events: DataFrame, reader_schema: str, shape: decode.MessageShape, table: TableSchema, placeholder: str,
    landed_at: str,
) -> DataFrame:
    """decode.decode_events of Avro values: `events` are messages whose `__value_bytes` hold values in Confluent's
    wire format, `reader_schema` the JSON text of connect.avro_reader_schema of their writer schema, and `shape`
    their Connect shape (of connect.avro_wire)."""
    return decode.decode_events(parsed(events, reader_schema, shape, table), shape, table, placeholder, landed_at,
                                parsed=True, avro=True)


def without_op_or_truncates(events: DataFrame, reader_schema: str) -> int:
    """How many of the events (Avro envelopes, `reader_schema` as in decode_events) are truncates or have no op (a
    value that does not decode is a record of nulls; decode_events quarantines it): their values decoded for the op
    alone."""
    has_op = "op" in {f["name"] for f in json.loads(reader_schema).get("fields", [])}
    op = _decoded(reader_schema).getField("op") if has_op else F.lit(None)
    return events.where(F.coalesce(op == "t", F.lit(True))).count()


def as_written(raw: DataFrame, topic: str, schema_id: int) -> DataFrame:
    """decode.as_written of a topic whose values are Avro of one schema id: an event fits when its value starts
    with the 5 bytes of Confluent's header of that id, and its key is null or Avro (the careful way reads neither
    key's schema: its group is that of the id alone). The value is not read here: `decode_events` decodes it from
    its bytes, once, as the careful way does, and one that does not decode gets the same reason."""
    header = b"\x00" + schema_id.to_bytes(4, "big")
    of_topic = decode.event_of(topic)
    fits = of_topic & (F.substring("__value_bytes", 1, len(header)) == F.lit(header)) & decode.key_null_or_avro()
    return raw.select(*raw.columns, *decode.flags(fits, of_topic))


def parsed(events: DataFrame, reader_schema: str, shape: decode.MessageShape, table: TableSchema) -> DataFrame:
    """The events with the value as `m`, the JSON path's wire struct in Avro's representation, and `k` (null: an
    Avro key is not read, the key columns come from the value)."""
    with_value = events.withColumn("__avro", _decoded(reader_schema))
    fields = list(shape.fields) or list(table.fields)
    message = _message(F.col("__avro"), with_value.schema["__avro"].dataType, shape, fields)
    with_message = with_value.withColumn("m", message).drop("__avro")
    m_type = with_message.schema["m"].dataType
    row = m_type["after"].dataType if shape.kind == "envelope" else m_type
    key = [T.StructField(f.name, row[f.name].dataType) for f in fields if f.name in table.key]
    return with_message.withColumn("k", F.lit(None).cast(T.StructType(key)) if key else F.lit(None))


def _decoded(reader_schema: str) -> Column:
    """The value of an event in Confluent's wire format as Avro holds it; null when it does not decode."""
    from pyspark.sql.avro.functions import from_avro

    return from_avro(F.expr(_AVRO_BODY), reader_schema, {"mode": "PERMISSIVE"})


def _message(value: Column, avro: T.DataType, shape: decode.MessageShape, fields: list[Field]) -> Column:
    """The value as decode.wire_struct lays it out."""
    if not isinstance(avro, T.StructType):  # decode.shape_of takes a message for a row only when it is a struct
        raise SchemaError(f"decoding Avro values: expected a record schema, got {avro.simpleString()}")
    row = {"type": "struct", "fields": [{**f.schema, "field": f.name} for f in fields]}
    present = {f.name: f.dataType for f in avro.fields}
    if shape.kind == "envelope":
        parts, bad = _images(value, present, row)
        parts += [_source(value, present), _meta(value, present, "op", "STRING")]
    else:
        laid = {f["field"]: _laid_field(value, present, f) for f in row["fields"]}
        parts = [_column(value, name, part) for name, (part, _) in laid.items()]
        parts += [_meta(value, present, name, kind) for name, kind in decode.FLAT_META.items()]
        bad = _any([fits for _, fits in laid.values()])
    corrupt = F.when(F.coalesce(bad, F.lit(False)), F.lit(_CORRUPT)) if bad is not None else F.lit(None)
    return F.when(value.isNotNull(), F.struct(*parts, corrupt.cast("string").alias("__corrupt")))


def _images(value: Column, present: dict[str, T.DataType], row: dict[str, Any]) -> tuple[list[Column], Column | None]:
    """`before` and `after`, laid out as the row; one the record lacks is null (of the other's type)."""
    laid = {name: _as(value[name], present[name], row) for name in ("before", "after") if name in present}
    if not laid:
        raise SchemaError("decoding an Avro envelope: expected a before or an after field")
    columns = {name: _column(value, name, part) for name, (part, _) in laid.items()}
    other = next(iter(columns.values()))
    parts = [columns.get(name, F.when(F.lit(False), other).alias(name)) for name in ("before", "after")]
    return parts, _any([fits for _, fits in laid.values()])


def _column(value: Column, name: str, part: Column | None) -> Column:
    return (value[name] if part is None else part).alias(name)


def _laid_field(value: Column, present: dict[str, T.DataType], field: dict[str, Any]) -> Laid:
    """A struct's field laid out; null when Avro's record has no field of that name (the JSON parser found none)."""
    name = field["field"]
    if name not in present:
        return F.lit(None).cast(wire_type(field)), None
    return _as(value[name], present[name], field)


def _meta(value: Column, present: dict[str, T.DataType], name: str, kind: str) -> Column:
    """A field that decoding reads as it is (op, source position) as its wire type; null when there is none."""
    part = value[name].try_cast(kind) if name in present else F.lit(None).cast(kind)
    return part.alias(name)


def _source(value: Column, present: dict[str, T.DataType]) -> Column:
    source = present.get("source")
    if not isinstance(source, T.StructType):
        return F.lit(None).cast(struct_type(decode.SOURCE_FIELDS)).alias("source")
    inner = {f.name: f.dataType for f in source.fields}
    fields = [_meta(value["source"], inner, name, kind) for name, kind in decode.SOURCE_FIELDS]
    return F.when(value["source"].isNotNull(), F.struct(*fields)).alias("source")


def _as(value: Column, avro: T.DataType, schema: dict[str, Any]) -> Laid:
    """Avro's value laid out as the Connect schema's wire type, in Avro's representation."""
    kind = schema.get("type")
    if schema.get("wire") == "avro":  # read as text by the JSON path: a typed value is a cast away from it
        return (None if isinstance(avro, _TYPED) else _text(value, avro)), None
    if kind == "struct" and isinstance(avro, T.StructType):
        return _struct(value, avro, schema)
    if kind == "array" and isinstance(avro, T.ArrayType):
        return _parts(value, avro.elementType, schema["items"], F.transform, lambda v: v)
    if kind == "map" and isinstance(avro, T.MapType):
        return _parts(value, avro.valueType, schema["values"], _each_value, F.map_values)
    if _READ_AS.get(kind) == avro:
        return _narrow(value, kind)
    return F.lit(None).cast(wire_type(schema)), value.isNotNull()  # a parser expecting another type failed


def _narrow(value: Column, kind: str) -> Laid:
    """AvroConverter writes int8 and int16 as Avro ints. JSON's parser read an int16 from -32768 to 32767 and an int8
    as a byte, from -128 to 255, the upper half wrapped to negative (Jackson's getByteValue); it refused others."""
    if kind == "int8":
        return F.when(value.between(128, 255), value - 256).otherwise(value), ~value.between(-128, 255)
    if kind == "int16":
        return None, ~value.between(-32768, 32767)
    return None, None


def _struct(value: Column, avro: T.StructType, schema: dict[str, Any]) -> Laid:
    present = {f.name: f.dataType for f in avro.fields}
    laid = {f["field"]: _laid_field(value, present, f) for f in schema.get("fields", [])}
    bad = _any([fits for _, fits in laid.values()])
    if all(part is None for part, _ in laid.values()):
        return None, bad
    return F.when(value.isNotNull(), F.struct(*[_column(value, n, part) for n, (part, _) in laid.items()])), bad


def _parts(value: Column, avro: T.DataType, schema: dict[str, Any], each, values) -> Laid:
    """An array's elements or a map's values laid out: `each` maps them, `values` lists them."""

    def laid(v: Column) -> Column:
        part = _as(v, avro, schema)[0]
        return v if part is None else part

    def fits(v: Column) -> Column:
        return F.coalesce(_as(v, avro, schema)[1], F.lit(False))

    part, bad = _as(F.lit(None).cast(avro), avro, schema)  # what the layout of one element needs
    return (None if part is None else each(value, laid)), (None if bad is None else F.exists(values(value), fits))


def _each_value(value: Column, function) -> Column:
    return F.transform_values(value, lambda _, v: function(v))


def _text(value: Column, avro: T.DataType) -> Column:
    """The value as JSON's text of it: the JSON parser read a number as its digits, bytes as base64."""
    return F.base64(value) if isinstance(avro, T.BinaryType) else value.cast("string")


def _any(checks: list[Column | None]) -> Column | None:
    found = [c for c in checks if c is not None]
    if not found:
        return None
    result = found[0]
    for check in found[1:]:
        result = result | check
    return result
