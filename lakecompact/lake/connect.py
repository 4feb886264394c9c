"""Kafka Connect JSON schemas (as Debezium writes them) into Spark types and decode expressions.

A field has two types here: the *wire* type that `from_json` reads the JSON value as (a Connect Decimal
is a base64 string on the wire), and the *table* type it is stored as (DECIMAL(p,s)). `decode()` builds
the Spark SQL expression that turns the one into the other, so decoding stays inside Spark. It never
raises, not even under ANSI mode: a value that does not fit its table type decodes to NULL, which
`lost_inside()` (and the caller's own null check) then finds.

Avro values (`from_avro`) are decoded by the same expressions: they hold the same numbers and strings as
JsonConverter's JSON, and differ only where JSON has to spell bytes as base64 text (`avro=True`), and in the
types Avro carries typed (`avro_wire`).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import uuid
from dataclasses import dataclass
from typing import Any

from lakecompact.errors import SchemaError
from lakecompact.identifiers import check_identifier, quote, struct_type

_PRIMITIVE = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INT",
    "int64": "BIGINT",
    "float32": "FLOAT",
    "float": "FLOAT",
    "float64": "DOUBLE",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "string": "STRING",
}

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_DATE = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
_TIME_MICROS_FACTOR = {  # time of day, as a multiplier (or divisor when negative) to microseconds
    "io.debezium.time.Time": 1000,
    "org.apache.kafka.connect.data.Time": 1000,
    "io.debezium.time.MicroTime": 1,
    "io.debezium.time.NanoTime": -1000,
}
_TIMESTAMP = {  # timestamp_millis raises on overflow; try_multiply gives NULL instead
    "io.debezium.time.Timestamp": "timestamp_micros(try_multiply({e}, 1000))",
    "org.apache.kafka.connect.data.Timestamp": "timestamp_micros(try_multiply({e}, 1000))",
    "io.debezium.time.MicroTimestamp": "timestamp_micros({e})",
    "io.debezium.time.NanoTimestamp": "timestamp_micros({e} div 1000)",
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
VARIABLE_SCALE_DECIMAL_TYPE = "DECIMAL(38,18)"


@dataclass(frozen=True)
class Field:
    """One column of a source row: its name, Connect schema, and the types derived from it."""

    name: str
    schema: dict[str, Any]

    @property
    def table_type(self) -> str:
        return table_type(self.schema)

    @property
    def wire_type(self) -> str:
        return wire_type(self.schema)

    @property
    def toastable(self) -> bool:
        return self.schema.get("type") in ("string", "bytes", "array", "map")


def row_fields(row_schema: dict[str, Any]) -> list[Field]:
    """The fields of a Connect struct schema (the `after` record), names validated for SQL."""
    if row_schema.get("type") != "struct":
        raise SchemaError(f"expected a struct schema for the row, got type {row_schema.get('type')!r}")
    fields = []
    for field in row_schema.get("fields", []):
        name = check_identifier(field.get("field", ""), "column name")
        if name.startswith("__"):
            raise SchemaError(f"source column {name!r} starts with __, which lakecompact keeps for meta columns")
        fields.append(Field(name, {k: v for k, v in field.items() if k != "field"}))
    return fields


def table_type(schema: dict[str, Any]) -> str:
    """The Spark/Hive column type for a Connect schema."""
    return _logical_table_type(schema) or _composed_type(schema, table_type, map_key=table_type, raw_bytes="BINARY")


def _logical_table_type(schema: dict[str, Any]) -> str | None:
    name = schema.get("name")
    if name == DECIMAL:
        params = schema.get("parameters", {})
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        precision = min(max(precision, scale, 1), 38)
        return f"DECIMAL({precision},{scale})"
    if name == VARIABLE_SCALE_DECIMAL:
        return VARIABLE_SCALE_DECIMAL_TYPE
    if name in _DATE:
        return "DATE"
    if name in _TIME_MICROS_FACTOR:
        return "STRING"
    if name in _TIMESTAMP or name == ZONED_TIMESTAMP:
        return "TIMESTAMP"
    return None


def _composed_type(schema: dict[str, Any], inner, *, map_key, raw_bytes: str) -> str:
    """A primitive, array, map or struct type, its parts typed by `inner` (and a map's keys by `map_key`)."""
    kind = schema.get("type")
    if kind == "bytes":
        return raw_bytes
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    if kind == "array":
        return f"ARRAY<{inner(schema['items'])}>"
    if kind == "map":
        return f"MAP<{map_key(schema['keys'])},{inner(schema['values'])}>"
    if kind == "struct":
        return struct_type((check_identifier(f["field"], "struct field"), inner(f)) for f in schema.get("fields", []))
    raise SchemaError(f"unsupported Connect schema type {kind!r} (name {schema.get('name')!r})")


AVRO_TYPED = {DECIMAL: "DECIMAL", "org.apache.kafka.connect.data.Date": "DATE", "org.apache.kafka.connect.data.Timestamp": "TIMESTAMP"}


# Spark's from_avro refuses a decimal wider than 38 digits, and AvroConverter writes 64 when Connect gave no
# precision (PostgreSQL money, MySQL DECIMAL(65,s)): those are read as plain bytes, decoded like JsonConverter's.
SPARK_MAX_PRECISION = 38


def avro_wire(schema: dict[str, Any]) -> dict[str, Any]:
    """Mark the types that Avro (through Spark's from_avro) carries typed, not in JsonConverter's encodings:
    decimals as DECIMAL, Connect dates and timestamps as DATE and TIMESTAMP; a cast away from the table's type,
    as is their text."""
    out = _with_parts(schema, avro_wire)
    wide = int(out.get("parameters", {}).get("connect.decimal.precision", 64)) > SPARK_MAX_PRECISION
    if out.get("name") in AVRO_TYPED and not (out.get("name") == DECIMAL and wide):
        out["wire"] = "avro"
    return out


def _with_parts(schema: dict[str, Any], convert) -> dict[str, Any]:
    """A copy of a Connect schema with its parts (items, keys, values, fields) converted."""
    out = dict(schema)
    for key in ("items", "keys", "values"):
        if isinstance(out.get(key), dict):
            out[key] = convert(out[key])
    if "fields" in out:
        out["fields"] = [convert(f) for f in out["fields"]]
    return out


def avro_reader_schema(writer: Any) -> Any:
    """The writer's Avro schema with decimals wider than Spark's 38 digits as plain bytes (see avro_wire)."""
    if isinstance(writer, list):
        return [avro_reader_schema(branch) for branch in writer]
    if not isinstance(writer, dict):
        return writer
    if writer.get("logicalType") == "decimal" and int(writer.get("precision", 0)) > SPARK_MAX_PRECISION:
        return {k: v for k, v in writer.items() if k not in ("logicalType", "precision", "scale")}
    out = dict(writer)
    for key in ("type", "items", "values"):
        if isinstance(out.get(key), (dict, list)):
            out[key] = avro_reader_schema(out[key])
    if isinstance(out.get("fields"), list):
        out["fields"] = [avro_reader_schema(f) for f in out["fields"]]
    return out


def strip_wire(schema: dict[str, Any]) -> dict[str, Any]:
    """The Connect schema without avro_wire's marks."""
    return _with_parts({k: v for k, v in schema.items() if k != "wire"}, strip_wire)


def wire_type(schema: dict[str, Any]) -> str:
    """The type `from_json` reads the JSON value as, before decoding."""
    if schema.get("wire") == "avro":
        return "STRING"
    if schema.get("name") == VARIABLE_SCALE_DECIMAL:
        return struct_type([("scale", "INT"), ("value", "STRING")])
    return _composed_type(schema, wire_type, map_key=lambda _: "STRING", raw_bytes="STRING")


_names = itertools.count()


def _var() -> str:
    return f"v{next(_names)}"


def _let(expression: str, body) -> str:
    """Bind an expression to a lambda variable so it is written (and computed) once."""
    var = _var()
    return f"element_at(transform(array({expression}), {var} -> {body(var)}), 1)"


def _bytes(expression: str, avro: bool) -> str:
    """The bytes of a bytes-typed wire value: Avro's are bytes already, JsonConverter's are base64 text."""
    return expression if avro else _from_base64(expression)


def decode(expression: str, schema: dict[str, Any], *, avro: bool = False) -> str:
    """Spark SQL turning the wire value `expression` into the table type of `schema` (NULL: it does not fit).
    `avro`: the value is Avro's, as `from_avro` gives it (bytes as bytes)."""
    name, kind = schema.get("name"), schema.get("type")
    if schema.get("wire") == "avro":
        return f"try_cast({expression} AS {table_type(schema)})"
    if name == DECIMAL:
        scale = int(schema.get("parameters", {}).get("scale", 0))
        text = _with_scale(_unscaled(expression, avro), str(scale))
        return _exact_decimal(text, table_type(schema), scale)  # the table keeps the scale: no rounding check
    if name == VARIABLE_SCALE_DECIMAL:
        return _let(
            expression,
            lambda v: _exact_decimal(
                _with_scale(_unscaled(f"{v}.{quote('value')}", avro), f"{v}.{quote('scale')}"),
                VARIABLE_SCALE_DECIMAL_TYPE,
                None,
            ),
        )
    if name in _DATE:
        return f"date_from_unix_date({expression})"
    if name in _TIME_MICROS_FACTOR:
        factor = _TIME_MICROS_FACTOR[name]
        micros = f"(CAST({expression} AS BIGINT) * {factor})" if factor > 0 else f"({expression} div {-factor})"
        return _time_of_day(micros)
    if name in _TIMESTAMP:
        return _TIMESTAMP[name].format(e=expression)
    if name == ZONED_TIMESTAMP:
        return f"try_cast({expression} AS TIMESTAMP)"
    if kind == "bytes":
        return _bytes(expression, avro)
    if kind in _PRIMITIVE:
        return expression
    if kind == "array":
        var = _var()
        return f"transform({expression}, {var} -> {decode(var, schema['items'], avro=avro)})"
    if kind == "map":
        key, value = _var(), _var()
        return f"transform_values({expression}, ({key}, {value}) -> {decode(value, schema['values'], avro=avro)})"
    if kind == "struct":
        parts = ", ".join(_struct_part(expression, f, avro) for f in schema.get("fields", []))
        return f"CASE WHEN {expression} IS NULL THEN NULL ELSE named_struct({parts}) END"
    raise SchemaError(f"unsupported Connect schema type {kind!r} (name {name!r})")


def _struct_part(expression: str, field: dict[str, Any], avro: bool) -> str:
    name = check_identifier(field["field"], "struct field")
    return f"'{name}', {decode(f'{expression}.{quote(name)}', field, avro=avro)}"


def _unscaled(expression: str, avro: bool) -> str:
    """Big-endian two's complement bytes → the signed unscaled integer as DECIMAL(38,0).

    Negative numbers are read through their complement, so no intermediate exceeds 38 digits.
    """

    def digits(h: str) -> str:
        acc, i = _var(), _var()
        negative = f"(length({h}) > 0 AND conv(substr({h}, 1, 1), 16, 10) >= 8)"
        digit = f"CAST(conv(substr({h}, {i}, 1), 16, 10) AS INT)"
        # more than 38 digits overflow: the try_ forms make that NULL (and keep it NULL) instead of raising
        nibble = f"IF({i} > length({h}), 0, IF({negative}, 15 - {digit}, {digit}))"
        fold = (
            f"aggregate(sequence(1, greatest(length({h}), 1)), CAST(0 AS DECIMAL(38,0)), ({acc}, {i}) -> "
            f"try_cast(try_add(try_multiply({acc}, 16), {nibble}) AS DECIMAL(38,0)))"
        )
        # -(complement + 1), written so no intermediate needs a 39th digit
        return (
            f"IF({negative}, try_subtract(CAST(CAST(0 AS DECIMAL(38,0)) - {fold} AS DECIMAL(38,0)), "
            f"CAST(1 AS DECIMAL(1,0))), {fold})"
        )

    return _let(f"hex({_bytes(expression, avro)})", digits)


def _with_scale(unscaled: str, scale: str) -> str:
    """A decimal string with the point put `scale` digits from the right: exact, no floating point."""

    def text(u: str) -> str:
        def with_point(d: str) -> str:
            return (
                f"concat(IF({u} < 0, '-', ''), IF({scale} = 0, {d}, concat(substr({d}, 1, length({d}) - {scale}), "
                f"'.', substr({d}, length({d}) - {scale} + 1))))"
            )

        # lpad cuts strings longer than its width, so the width is never below the length
        # not abs() or unary minus: Spark 4.3 drops digits negating a DECIMAL(38,0)
        return _let(f"CAST(IF({u} < 0, CAST(0 AS DECIMAL(38,0)) - {u}, {u}) AS STRING)", lambda a: _let(f"lpad({a}, greatest(length({a}), {scale} + 1), '0')", with_point))

    return _let(unscaled, text)


def _from_base64(expression: str) -> str:
    """Base64 text → bytes; NULL for text that is not base64 (unbase64 raises on it)."""
    return f"try_to_binary({expression}, 'base64')"


def _exact_decimal(text: str, decimal_type: str, text_scale: int | None) -> str:
    """An exact decimal string as `decimal_type`, or NULL when it does not fit: too many integer digits, or
    non-zero digits past the type's scale, which a cast would round away. `text_scale`: the string's number of
    decimal places when known in advance (None: it varies per value)."""
    scale = int(decimal_type.rstrip(")").split(",")[1])
    cast = f"try_cast({{t}} AS {decimal_type})"
    if text_scale is not None and text_scale <= scale:
        return cast.format(t=text)  # nothing to round away
    return _let(text, lambda t: f"IF({t} RLIKE '[.][0-9]{{{scale}}}[0-9]*[1-9]', NULL, {cast.format(t=t)})")


_LOSSY = {DECIMAL, VARIABLE_SCALE_DECIMAL, ZONED_TIMESTAMP, *_TIMESTAMP}  # decode() may give NULL for these


def _can_lose(schema: dict[str, Any]) -> bool:
    """Whether decode() can turn a non-null wire value of this schema (or a part of it) into NULL."""
    name, kind = schema.get("name"), schema.get("type")
    if schema.get("wire") == "avro" or kind == "bytes" or name in _LOSSY:
        return True
    if kind == "array":
        return _can_lose(schema["items"])
    if kind == "map":
        return _can_lose(schema["values"])
    if kind == "struct":
        return any(_can_lose(f) for f in schema.get("fields", []))
    return False


def lost_inside(wire: str, decoded: str, schema: dict[str, Any]) -> str | None:
    """A boolean SQL expression: an element, map value or struct field of the non-null `wire` value is there
    but NULL in `decoded` (the value decode() made of it). None when nothing inside can be lost that way.

    The value itself being NULL is the caller's check: only it knows which wire values count as present
    (the TOAST placeholder does not)."""
    name, kind = schema.get("name"), schema.get("type")
    if schema.get("wire") == "avro" or name == VARIABLE_SCALE_DECIMAL:
        return None
    if kind in ("array", "map"):
        inner = schema["items"] if kind == "array" else schema["values"]
        if not _can_lose(inner):
            return None
        if kind == "map":  # transform_values and casts keep the entries in order
            wire, decoded = f"map_values({wire})", f"map_values({decoded})"
        w, d, lost = _var(), _var(), _var()
        return f"exists(zip_with({wire}, {decoded}, ({w}, {d}) -> {_missing(w, d, inner)}), {lost} -> {lost})"
    if kind == "struct":
        fields = [(check_identifier(f["field"], "struct field"), f) for f in schema.get("fields", [])]
        checks = [_missing(f"{wire}.{quote(n)}", f"{decoded}.{quote(n)}", f) for n, f in fields if _can_lose(f)]
        return " OR ".join(checks) or None
    return None


def _missing(wire: str, decoded: str, schema: dict[str, Any]) -> str:
    inner = lost_inside(wire, decoded, schema)
    return f"({wire} IS NOT NULL AND ({decoded} IS NULL{f' OR {inner}' if inner else ''}))"


def _time_of_day(micros: str) -> str:
    def fmt(m: str) -> str:
        two = "lpad(CAST({} AS STRING), 2, '0')"
        return (
            f"concat({two.format(f'{m} div 3600000000')}, ':', {two.format(f'({m} div 60000000) % 60')}, ':', "
            f"{two.format(f'({m} div 1000000) % 60')}, IF({m} % 1000000 = 0, '', "
            f"concat('.', TRIM(TRAILING '0' FROM lpad(CAST({m} % 1000000 AS STRING), 6, '0')))))"
        )

    return _let(micros, fmt)


def toast_forms(placeholder: str) -> dict[str, list[Any]]:
    """Every wire form of Debezium's unavailable-value placeholder, by the kind of value it stands in."""
    raw = placeholder.encode()
    uuid_form = str(uuid.UUID(bytes=hashlib.md5(raw).digest(), version=3))
    return {
        "string": [
            placeholder,
            base64.b64encode(raw).decode(),
            "hex:" + raw.hex(),
            raw.hex(),
            uuid_form,
            json.dumps({placeholder: placeholder}, separators=(",", ":")),
        ],
        "string_array": [[placeholder], [uuid_form]],
        "number_array": [list(raw)],
    }


def is_placeholder(expression: str, schema: dict[str, Any], placeholder: str, *, avro: bool = False) -> str | None:
    """A boolean SQL expression: the wire value is the placeholder. None when the type cannot be TOASTed.
    `avro`: the value is Avro's, compared as JsonConverter's text of it (`_as_text`), so that the same values
    count as the placeholder whichever way they came."""
    forms = toast_forms(placeholder)
    kind = schema.get("type")
    if kind in ("string", "bytes"):
        values = ", ".join(_literal(v) for v in forms["string"])
        return f"coalesce({_as_text(expression, schema, avro)} IN ({values}), false)"
    if kind == "array":
        items = schema.get("items", {})
        key = ("string_array" if items.get("type") in ("string", "bytes")
               else "number_array" if items.get("type") in _PRIMITIVE and not _as_typed(items, avro) else None)
        if key is None:
            return None
        var = _var()
        text = _as_text(var, items, avro)
        texts = expression if text == var else f"transform({expression}, {var} -> {text})"
        checks = " OR ".join(f"{texts} = array({', '.join(_literal(x) for x in form)})" for form in forms[key])
        return f"coalesce({checks}, false)"
    if kind == "map":
        value = _as_text(f"element_at({expression}, {_literal(placeholder)})", schema.get("values", {}), avro)
        return f"coalesce({value} = {_literal(placeholder)}, false)"
    return None


def _as_typed(schema: dict[str, Any], avro: bool) -> bool:
    """Whether Avro gives the value typed (a decimal, a date, a timestamp; see avro_wire), not as its number."""
    return avro and schema.get("wire") == "avro"


def _as_text(expression: str, schema: dict[str, Any], avro: bool) -> str:
    """The value as JsonConverter's text of it: Avro's bytes as base64, its typed values as their text."""
    if _as_typed(schema, avro):
        return f"CAST({expression} AS STRING)"
    return f"base64({expression})" if avro and schema.get("type") == "bytes" else expression


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(int(value))


def schema_hash(schema: Any) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]
