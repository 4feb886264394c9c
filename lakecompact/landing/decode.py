"""Kafka Connect JSON messages (Debezium envelopes, or ExtractNewRecordState rows) into table rows.

Everything here is a DataFrame -> DataFrame function built from Spark SQL expressions; the driver only
sees the few distinct schemas of a batch, never the rows.
"""

from __future__ import annotations

import functools
import json
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from lakecompact.errors import SchemaError
from lakecompact.identifiers import quote, struct_type
from lakecompact.lake.connect import Field, decode, is_placeholder, lost_inside, row_fields, schema_hash
from lakecompact.lake.model import META_COLUMNS, TableSchema

# The columns every raw event has, whatever the source (files or Kafka).
RAW_COLUMNS = ("__kafka_topic", "__kafka_partition", "__kafka_offset", "key", "payload", "__origin", "__value_bytes")
AVRO_PREFIX = "avro:"

# the fields of an envelope's `source` that decoding reads, with their wire types
SOURCE_FIELDS = (
    ("connector", "STRING"), ("ts_ms", "BIGINT"), ("ts_sec", "BIGINT"), ("ts_us", "BIGINT"), ("ts_ns", "BIGINT"),
    ("lsn", "BIGINT"), ("file", "STRING"), ("pos", "BIGINT"), ("row", "INT"), ("snapshot", "STRING"),
    ("db", "STRING"), ("schema", "STRING"), ("table", "STRING"),
)
_SOURCE_WIRE = struct_type(SOURCE_FIELDS)
# ExtractNewRecordState add.fields names, as `__<field>` or `__source_<field>`.
FLAT_META = {
    "__op": "STRING",
    "__deleted": "STRING",
    "__lsn": "BIGINT",
    "__source_lsn": "BIGINT",
    "__file": "STRING",
    "__source_file": "STRING",
    "__pos": "BIGINT",
    "__source_pos": "BIGINT",
    "__row": "INT",
    "__source_row": "INT",
    "__source_ts_ms": "BIGINT",
    "__source_ts_us": "BIGINT",
    "__source_ts_ns": "BIGINT",
    "__ts_ms": "BIGINT",
}
_NOT_TABLE_SCHEMAS = (
    "io.debezium.connector.common.Heartbeat",
    "io.debezium.connector.common.TransactionMetadataValue",
    "io.debezium.connector.mysql.SchemaChangeValue",
    "io.debezium.connector.mariadb.SchemaChangeValue",
    "io.debezium.connector.postgresql.MessageValue",
)
OPS = ("c", "r", "u", "d", "t")
_DELETE_MARKERS = {"__deleted", "__op"}


# "envelope", "flat" (ExtractNewRecordState rows), or "skip" (heartbeats, transactions, schema changes, PG messages)
ShapeKind = Literal["envelope", "flat", "skip"]
SHAPE_KINDS: tuple[str, ...] = typing.get_args(ShapeKind)


@dataclass(frozen=True)
class MessageShape:
    """How the values of one topic (with one schema) are laid out."""

    kind: ShapeKind
    fields: tuple[Field, ...] = ()
    schema_hash: str | None = None  # None: events without an embedded schema
    # flattened rows: whether they say a row was deleted (`__deleted` / `__op`); None: no field seen to tell
    delete_marker: bool | None = None


# Connect's JSON converter with schemas on: {"schema": ..., "payload": ...}; each part as its JSON text. One
# parse for both parts (get_json_object would parse the message once per part); control characters are
# allowed as get_json_object and json_object_keys allow them, so the three agree on what parses.
_WRAPPER = struct_type([("schema", "STRING"), ("payload", "STRING")])
_PAYLOAD_ONLY = struct_type([("payload", "STRING")])
_WRAPPER_OPTIONS = {"allowUnquotedControlChars": "true"}
# a parse that says when a text does not parse whole into its struct: `__corrupt` holds it then
_WHOLE = {"columnNameOfCorruptRecord": "__corrupt", "mode": "PERMISSIVE"}
# How Connect's JSON converter writes a value with its schema: no space, the schema first.
_CONNECT_FORM = '{"schema":'
_CONNECT_PAYLOAD = ',"payload":'
# the value_schema_hash of the values that start with their topic's schema as written (`split_message`)
SCHEMA_AS_WRITTEN = "written"
_WRAPPER_KEYS = {"schema", "payload"}
SAMPLE_LINES = 1000


def schemas_as_written(raw: DataFrame) -> dict[str, str]:
    """Per topic, the text of a schema that values in Connect's form start with, among the first SAMPLE_LINES
    lines: a whole JSON object, so that a value starting with `{"schema":` + it + `,"payload":` has that schema.
    `raw` needs only the topic and the value (`payload`)."""
    for name, kind in (("key", "string"), ("__value_bytes", "binary"), ("__kafka_offset", "bigint")):
        if name not in raw.columns:
            raw = raw.withColumn(name, F.lit(None).cast(kind))
    return as_written_samples(head(raw)).values


def head(raw: DataFrame) -> DataFrame:
    """The first lines of `raw`, which `as_written_samples` reads."""
    return raw.limit(SAMPLE_LINES)


@dataclass(frozen=True)
class Samples:
    """What the batch's first lines show of each topic's form (`as_written_samples`)."""

    values: dict[str, str]  # the value schema's text as written (`schemas_as_written`)
    keys: dict[str, str | None]  # the key schema's text as written; None: the keys are null
    plain: frozenset[str]  # topics whose values are envelopes without a schema, their keys without one too
    avro: dict[str, int]  # per topic whose values are Avro of one schema id, their keys null or Avro: that id
    # per topic, every value schema text as written that the lines show, in the order they first come
    versions: dict[str, tuple[str, ...]]


def as_written_samples(raw: DataFrame) -> Samples:
    """From the first lines (`head`; of each topic, the input's own; of a Kafka batch, each partition's last
    too), in one job: per topic, the schema text values start with first (`schemas_as_written`) and every other
    they start with; per topic whose keys there are all null or all in Connect's form, the key schema's
    text (the first whole object in text order), or None when they are all null (a keyless topic); the topics
    whose values there are all Debezium envelopes without a schema (Connect JSON with `schemas.enable=false`),
    their keys null or without one; and per topic whose values there are all Avro of one schema id (Confluent's
    wire format), their keys null or Avro, that id. A few distinct texts reach the driver, not rows."""
    head = raw.where(F.col("__kafka_topic").isNotNull())

    def text(column: str) -> Column:
        return F.when(F.startswith(column, F.lit(_CONNECT_FORM + "{")),
                      F.substring_index(column, _CONNECT_PAYLOAD, 1).substr(len(_CONNECT_FORM) + 1, 1 << 30))

    def plain(column: str) -> Column:  # no embedded schema: its top-level keys
        return F.when(~F.startswith(column, F.lit(_CONNECT_FORM)), F.sort_array(F.json_object_keys(column)))

    forms = head.select(F.col("__kafka_topic").alias("topic"), text("payload").alias("value"),
                        F.col("key").isNull().alias("null_key"), text("key").alias("key"),
                        plain("payload").alias("plain_value"), plain("key").alias("plain_key"),
                        F.col("payload").isNull().alias("tombstone"),
                        F.when(_avro_value(), _schema_id().cast("bigint")).alias("avro_id"),
                        key_null_or_avro().alias("avro_key"), "__kafka_offset")
    rows = forms.groupBy(*[c for c in forms.columns if c != "__kafka_offset"]).agg(
        F.min("__kafka_offset").alias("first")).collect()
    versions: dict[str, dict[str, None]] = {}
    for row in sorted(rows, key=lambda r: (r.topic, -1 if r.first is None else r.first, r.value or "")):
        if _whole_object(row.value):
            versions.setdefault(row.topic, {})[row.value] = None
    # the value schema a topic's values come with first (a table is made from it, and evolves through the others)
    values = {topic: next(iter(texts)) for topic, texts in versions.items()}
    keys: dict[str, str | None] = {}
    plains = set()
    for topic in sorted({row.topic for row in rows}):
        of_topic = [row for row in rows if row.topic == topic]
        whole = sorted(row.key for row in of_topic if _whole_object(row.key))
        if all(row.null_key for row in of_topic):
            keys[topic] = None
        elif all(row.key is not None for row in of_topic) and whole:
            keys[topic] = whole[0]
        with_values = [row for row in of_topic if not row.tombstone]
        if with_values and all(_plain_envelope(row) for row in with_values):
            plains.add(topic)
    return Samples(values, keys, frozenset(plains), _avro_ids(rows),
                   {topic: tuple(texts) for topic, texts in versions.items()})


def _avro_ids(rows: list[Row]) -> dict[str, int]:
    """Per topic whose sampled values are all Avro of one schema id and its keys all null or Avro: that id."""
    ids = {}
    for topic in sorted({row.topic for row in rows}):
        of_topic = [row for row in rows if row.topic == topic]
        seen = {row.avro_id for row in of_topic if not row.tombstone}
        if len(seen) == 1 and None not in seen and all(row.avro_key for row in of_topic):
            ids[topic] = seen.pop()
    return ids


def _plain_envelope(row: Row) -> bool:
    """A sampled value that is a Debezium envelope without a schema, its key null or a JSON object without one."""
    value = list(row.plain_value or [])
    key_plain = row.null_key or (row.plain_key is not None and not _WRAPPER_KEYS <= set(row.plain_key))
    return (bool(value) and not _WRAPPER_KEYS & set(value) and shape_of(None, value, row.topic).kind == "envelope"
            and key_plain)


def _whole_object(text: str | None) -> bool:
    try:
        return isinstance(json.loads(text or ""), dict)
    except ValueError:
        return False


def split_message(raw: DataFrame, known: dict[str, str] | None = None) -> DataFrame:
    """Separate the embedded schema from the payload of key and value; a null value is a Kafka tombstone.
    The raw columns stay, with any others of `raw`.

    `known` (of `schemas_as_written`; docs/design.md "Landing protocol"): a value that starts with its topic's schema
    text as written is not parsed for it (parsed and written out again per event, as a string, the schema costs more
    than the rest of the message); its `value_schema_hash` is SCHEMA_AS_WRITTEN and its `value_schema` null, the
    text being known. Other values have their schema parsed."""
    # Each message is parsed once, in a projection of its own: every column below reads the parse, and Spark
    # keeps a projection apart when folding it in would evaluate an expensive expression more than once (inside
    # CASE WHEN branches it would parse the value up to three times).
    as_written = F.lit(False)
    if known:
        prefixes = F.create_map(*[part for topic, text in sorted(known.items())
                                  for part in (F.lit(topic), F.lit(_CONNECT_FORM + text + _CONNECT_PAYLOAD))])
        as_written = F.coalesce(F.startswith("payload", prefixes[F.col("__kafka_topic")]), F.lit(False))
    # Confluent wire format: magic byte 0, a 4-byte schema id, then Avro binary. Such a value or key is never
    # JSON, and a JSON parse that fails costs more than one that succeeds: it is not parsed as JSON at all.
    avro_value = _avro_value()
    avro_key = _avro_key()
    value = F.when(avro_value, F.lit(None).cast(_WRAPPER)).when(as_written, F.struct(
        F.lit(None).cast("string").alias("schema"),
        F.from_json("payload", _PAYLOAD_ONLY, _WRAPPER_OPTIONS)["payload"].alias("payload"),
    )).otherwise(F.from_json("payload", _WRAPPER, _WRAPPER_OPTIONS))
    parsed = raw.select(
        "*",
        value.alias("__value"),
        as_written.alias("__as_written"),
        F.when(~avro_key, F.from_json("key", _WRAPPER, _WRAPPER_OPTIONS)).alias("__key"),
        avro_value.alias("__avro"),
        avro_key.alias("__avro_key"),
    )
    # The top-level keys of value and key, parsed again only when the first parse cannot tell whether the text is
    # Connect's {"schema": ..., "payload": ...} (a null or missing schema): one with a schema is classified by it.
    avro, avro_key = F.col("__avro"), F.col("__avro_key")
    with_schema = (F.col("__value.schema").isNotNull() | F.col("__as_written")) & F.col("__value.payload").isNotNull()
    key_with_schema = F.col("__key.schema").isNotNull() & F.col("__key.payload").isNotNull()
    parsed = parsed.select(
        "*",
        F.when(~with_schema & ~avro, F.json_object_keys("payload")).alias("__value_keys"),
        F.when(~key_with_schema & ~avro_key, F.json_object_keys("key")).alias("__key_keys"),
    )
    value_wrapped = with_schema | _wrapper_keys("__value_keys")
    key_wrapped = key_with_schema | _wrapper_keys("__key_keys")
    value_schema = F.when(~avro & value_wrapped, F.col("__value.schema"))
    schema_id = _schema_id()
    return parsed.select(
        *raw.columns,
        F.col("payload").isNotNull().alias("__has_value"),  # a Kafka tombstone has none
        F.when(avro, F.lit(None)).when(value_wrapped, F.col("__value.payload")).otherwise(F.col("payload"))
        .alias("value_json"),
        value_schema.alias("value_schema"),
        F.when(avro, F.concat(F.lit(AVRO_PREFIX), schema_id))
        .when(F.col("__as_written") & value_wrapped, F.lit(SCHEMA_AS_WRITTEN))
        .otherwise(F.sha2(value_schema, 256).substr(1, 16)).alias("value_schema_hash"),
        # an Avro key is not read: the row's key columns come from its value
        F.when(key_wrapped, F.col("__key.payload")).when(~avro_key, F.col("key")).alias("key_json"),
        F.when(key_wrapped, F.col("__key.schema")).alias("key_schema"),
        # what a group without a schema is classified by (a group with one never reads it)
        F.when(avro, F.array().cast("array<string>")).otherwise(F.coalesce("__value_keys", F.array()))
        .alias("value_keys"),
    )


@dataclass(frozen=True)
class Written:
    """A topic whose values (and keys) are expected in the form its first lines show: the schema texts as written
    (`as_written_samples`; key None: the topic's keys are null; `versions`: the value schema texts the sample and
    the planner saw besides) and the value's shape; or, `plain`, envelopes without a schema, read with the table's own (its keys
    JSON without one, or null); or, `avro_id`, Avro values of that schema id in Confluent's wire format
    (`avro_values.as_written`), their keys null or Avro."""

    topic: str
    value_schema: str | None
    key_schema: str | None
    shape: MessageShape  # with several versions, their fields' union (`Written.of_versions`)
    plain: bool = False
    avro_id: int | None = None
    # every value schema text the topic's values come with, in the order they come, each with its own shape (the
    # table evolves through them in that order); empty: `value_schema` alone
    versions: tuple[tuple[str, MessageShape], ...] = ()

    @property
    def value_schemas(self) -> tuple[str, ...]:
        return tuple(text for text, _ in self.versions) or (self.value_schema,)

    @property
    def shapes(self) -> tuple[MessageShape, ...]:
        """Each version's shape, in the order the table evolves through them."""
        return tuple(shape for _, shape in self.versions) or (self.shape,)

    @staticmethod
    def of_versions(topic: str, key_schema: str | None, versions: list[tuple[str, MessageShape]]) -> Written:
        """Values written with any of `versions` (text, shape), parsed into one struct: the union of their fields.
        The versions must agree on the form (`one_struct`)."""
        fields = {f.name: f for _, shape in versions for f in shape.fields}
        text, first = versions[0]
        union = MessageShape(first.kind, tuple(fields.values()), first.schema_hash, first.delete_marker)
        return Written(topic, text, key_schema, union, versions=tuple(versions) if len(versions) > 1 else ())

    @property
    def schema_hash(self) -> str | None:
        """The `value_schema_hash` of the careful way's group of these events (`split_message`) when it names
        their schema: an Avro schema id's; None for JSON."""
        return None if self.avro_id is None else avro_schema_hash(self.avro_id)


def one_struct(shapes: list[MessageShape]) -> bool:
    """Whether values of these shapes parse into one struct and decode alike: one form, and each column with one
    Connect schema wherever it appears (a column of another type in one version decodes otherwise)."""
    kinds = {(shape.kind, shape.delete_marker) for shape in shapes}
    columns: dict[str, dict] = {}
    for shape in shapes:
        for f in shape.fields:
            if columns.setdefault(f.name, f.schema) != f.schema:
                return False
    return len(kinds) == 1


def avro_schema_hash(schema_id: int) -> str:
    """The `value_schema_hash` of Avro values of a schema id (`split_message`)."""
    return f"{AVRO_PREFIX}{schema_id}"


def as_written(raw: DataFrame, written: Written, fields: list[Field], key_wire: list[tuple[str, str]]) -> DataFrame:
    """The raw events with, for those of `written.topic` in the form written, the value parsed straight into its
    wire struct of `fields` as `m` (and the key's into `k`) in one parse each: `__fits` says the event takes the
    one-pass decode (that form, its value starting with one of `written.value_schemas`; the parse whole: no part of
    the message failed), `__tombstone` that it is a Kafka tombstone of the topic. Every other event of the topic
    fits neither, and lands the careful way (split_message). A plain value fits when it parses whole with neither of Connect's wrapper keys and has an op; its key, when
    it has one, likewise."""
    options = {**_WRAPPER_OPTIONS, **_WHOLE}
    of_topic = event_of(written.topic)
    if written.plain:
        # parsed as the careful way parses a value without a schema (`_parse`): control characters not allowed
        probes = tuple((name, "STRING") for name in sorted(_WRAPPER_KEYS))
        candidate = of_topic & F.col("payload").isNotNull()
        key_parsed = struct_type([*key_wire, *probes, ("__corrupt", "STRING")])
        key = F.when(candidate, F.from_json("key", key_parsed, _WHOLE)) if key_wire else F.lit(None).cast(key_parsed)
        parsed = raw.select("*", of_topic.alias("__of_topic"), candidate.alias("__candidate"),
                            F.when(candidate, F.from_json("payload", wire_struct(written.shape, fields, probes),
                                                          _WHOLE)).alias("m"),
                            key.alias("k"))
        unwrapped = F.col("m.schema").isNull() & F.col("m.payload").isNull()
        key_whole = F.lit(True) if not key_wire else F.col("key").isNull() | (
            F.col("k.__corrupt").isNull() & F.col("k.schema").isNull() & F.col("k.payload").isNull())
        fits = (F.col("__candidate") & F.col("m").isNotNull() & F.col("m.__corrupt").isNull() & unwrapped
                & F.col("m.op").isNotNull() & key_whole)
    else:
        value_form = functools.reduce(Column.__or__, [
            F.startswith("payload", F.lit(_CONNECT_FORM + text + _CONNECT_PAYLOAD)) for text in written.value_schemas])
        key_form = (F.col("key").isNull() if written.key_schema is None
                    else F.startswith("key", F.lit(_CONNECT_FORM + written.key_schema + _CONNECT_PAYLOAD)))
        candidate = of_topic & F.coalesce(value_form & key_form, F.lit(False))
        key_parsed = struct_type([("payload", struct_type(key_wire or [("_", "STRING")])), ("__corrupt", "STRING")])
        key = (F.when(candidate, F.from_json("key", key_parsed, options))
               if key_wire and written.key_schema is not None else F.lit(None).cast(key_parsed))
        value_wire = struct_type([("payload", wire_struct(written.shape, fields)), ("__corrupt", "STRING")])
        parsed = raw.select("*", of_topic.alias("__of_topic"), candidate.alias("__candidate"),
                            F.when(candidate, F.from_json("payload", value_wire, options)).alias("__v"),
                            key.alias("__k"))
        parsed = parsed.select("*", F.col("__v.payload").alias("m"), F.col("__k.payload").alias("k"))
        key_whole = (F.col("__k.__corrupt").isNull() if key_wire and written.key_schema is not None
                     else F.lit(True))
        fits = F.col("__candidate") & F.col("__v.payload").isNotNull() & F.col("__v.__corrupt").isNull() & key_whole
    return parsed.select(*raw.columns, *flags(fits, F.col("__of_topic")), "m", "k")


def event_of(topic: str) -> Column:
    """A line that is an event of `topic`."""
    return F.col("__line_reason").isNull() & F.coalesce(F.col("__kafka_topic") == topic, F.lit(False))


def flags(fits: Column, of_topic: Column) -> list[Column]:
    """What a one-pass scan counts by (`as_written`): `__fits`, `__tombstone` (a Kafka tombstone of the topic)
    and `__of_topic`."""
    return [F.coalesce(fits, F.lit(False)).alias("__fits"),
            (of_topic & F.col("payload").isNull()).alias("__tombstone"), of_topic.alias("__of_topic")]


# what only the quarantine reads of a split message: the texts as they came and where each came from
_AS_CAME = ("key", "payload", "__origin", "__line")


def without_texts(messages: DataFrame) -> DataFrame:
    """Split messages without what only the quarantine reads (null): the texts as they came, where each came
    from, and the bytes of every value but an Avro one (which is decoded from them). What a batch keeps in
    memory: the rest is a fraction of a message's size (the schema text of a group repeats, and compresses)."""
    avro = F.coalesce(F.col("value_schema_hash").startswith(AVRO_PREFIX), F.lit(False))
    kept = {name: F.lit(None).cast("string") for name in _AS_CAME}
    kept["__value_bytes"] = F.when(avro, F.col("__value_bytes"))
    return messages.select(*[kept.get(name, F.col(name)).alias(name) for name in messages.columns])


def _avro_value() -> Column:
    """A value in Confluent's wire format: the magic byte 0 and a 4-byte schema id (then the Avro binary)."""
    value_bytes = F.col("__value_bytes")
    return value_bytes.isNotNull() & (F.length(value_bytes) >= 5) & (F.hex(value_bytes.substr(1, 1)) == "00")


def _avro_key() -> Column:
    return F.coalesce(F.startswith("key", F.lit("\u0000")), F.lit(False))


def key_null_or_avro() -> Column:
    """A key that gives its event's group no key schema: none, or Avro's (which is not read)."""
    return F.col("key").isNull() | _avro_key()


def _schema_id() -> Column:
    """The schema id of an Avro value (`_avro_value`), as decimal digits."""
    return F.conv(F.hex(F.col("__value_bytes").substr(2, 4)), 16, 10)


def _wrapper_keys(keys: str) -> Column:
    return F.coalesce(F.array_contains(keys, "schema") & F.array_contains(keys, "payload"), F.lit(False))


def shape_of(schema: dict[str, Any] | None, sample_keys: list[str], topic: str) -> MessageShape:
    """Classify one topic's messages from their embedded schema, or from a sample's top-level keys."""
    if schema is not None:
        name = schema.get("name") or ""
        if name in _NOT_TABLE_SCHEMAS:
            return MessageShape("skip")
        fields = {f.get("field"): f for f in schema.get("fields", [])}
        if name.endswith(".Envelope") or ("op" in fields and ("after" in fields or "before" in fields)):
            row = fields.get("after") or fields.get("before")
            if row is None:
                raise SchemaError(f"topic {topic}: envelope schema {name!r} has neither after nor before")
            return MessageShape("envelope", tuple(row_fields(row)), schema_hash(schema))
        flat = {**schema, "fields": [f for f in schema.get("fields", []) if not f.get("field", "").startswith("__")]}
        return MessageShape("flat", tuple(row_fields(flat)), schema_hash(schema), bool(_DELETE_MARKERS & set(fields)))
    keys = set(sample_keys)
    if topic.startswith("__debezium-heartbeat") or keys == {"ts_ms"}:
        return MessageShape("skip")
    if {"ddl", "tableChanges"} & keys or {"status", "event_count"} <= keys or "message" in keys:
        return MessageShape("skip")
    if "op" in keys and ({"after", "before", "source"} & keys):
        return MessageShape("envelope")
    return MessageShape("flat", delete_marker=bool(_DELETE_MARKERS & keys) if keys else None)


def key_columns(key_schema: dict[str, Any] | None, key_sample: list[str]) -> tuple[str, ...]:
    if key_schema is not None:
        return tuple(f.name for f in row_fields(key_schema))
    return tuple(key_sample)


def decode_events(
    events: DataFrame,
    shape: MessageShape,
    table: TableSchema,
    placeholder: str,
    landed_at: str,
    *,
    parsed: bool = False,
    avro: bool = False,
) -> DataFrame:
    """Split events of one table and one message shape into rows; the `__reason` column is set for bad ones.

    Decoding never raises: a value that does not fit its column's type (a DECIMAL(65,30) value of 1e8 in
    DECIMAL(38,30), say) decodes to NULL, and the row's reason names each such column (`_unfit`). `parsed`: the
    events carry the value already parsed as `m` and the key as `k` (`as_written`, `avro_values.parsed`), not
    their texts; `avro`: in Avro's representation (`avro_values`).
    """
    fields = list(shape.fields) or list(table.fields)
    key_wire = decode_key_wire(shape, table)
    parsed, meta = _parse(events, shape, fields, key_wire, parsed=parsed)
    columns, toast_checks, unfit = _data_columns(table, fields, bool(key_wire), placeholder, avro)
    toast = f"filter(array({', '.join(toast_checks)}), x -> x IS NOT NULL)" if toast_checks else "CAST(array() AS ARRAY<STRING>)"
    meta["__toast"] = F.expr(toast)
    meta["__landed_at"] = F.to_timestamp(F.lit(landed_at))
    rows = parsed.select(
        *columns,
        *[meta[name].cast(kind).alias(name) for name, kind in META_COLUMNS],
        F.col("m").isNull().alias("__not_object"),
        F.col("m.__corrupt").isNotNull().alias("__corrupt"),
        F.col("image").isNull().alias("__no_image"),
        # the message texts under reserved names: a source column may be called key or payload
        F.col("key").alias("__raw_key"),
        F.col("payload").alias("__raw_payload"),
        "__origin",
        "__value_bytes",  # an Avro value as it came: its text form above is not the message
        # the wire values, for the check over the decoded columns in the next step (not decoded twice)
        F.col("image").alias("__image"),
        (F.col("k") if key_wire else F.lit(None)).alias("__key"),
    )
    # array_join, not concat_ws: Spark (4.2+) counts it as expensive, so a filter on `__reason` stays above
    # this step rather than being pushed below it with every decoding inlined (and so computed twice)
    rows = rows.withColumn("__unfit", F.array_join(F.array(*unfit), "; ") if unfit else F.lit(""))
    return rows.withColumn("__reason", _reason(table)).drop(
        "__not_object", "__corrupt", "__no_image", "__image", "__key", "__unfit"
    )


def decode_key_wire(shape: MessageShape, table: TableSchema) -> list[tuple[str, str]]:
    """The key columns the message key is read for (as a fallback for the image's), with their wire types."""
    fields = list(shape.fields) or list(table.fields)
    return [(f.name, f.wire_type) for f in fields if f.name in table.key]


def wire_struct(shape: MessageShape, fields: list[Field], probes: tuple[tuple[str, str], ...] = ()) -> str:
    """The value's wire struct of one message shape, with `__corrupt` for a value that does not parse whole, and
    `probes`: top-level fields read only to tell the message's form."""
    wire_row = [(f.name, f.wire_type) for f in fields]
    if shape.kind == "envelope":
        return struct_type(
            [("before", struct_type(wire_row)), ("after", struct_type(wire_row)), ("source", _SOURCE_WIRE),
             ("op", "STRING"), *probes, ("__corrupt", "STRING")]
        )
    if shape.kind == "flat":
        return struct_type(wire_row + list(FLAT_META.items()) + [*probes, ("__corrupt", "STRING")])
    raise SchemaError(f"decoding rows: expected an envelope or flat message shape, got {shape.kind!r}")


def _parse(
    events: DataFrame, shape: MessageShape, fields: list[Field], key_wire: list[tuple[str, str]], *, parsed: bool
) -> tuple[DataFrame, dict[str, Column]]:
    """The value as `m` (its wire struct), the key as `k`, the `op`, the row `image`; and the meta columns.
    `parsed`: `m` and `k` are there already."""
    wire = wire_struct(shape, fields)
    if not parsed:
        events = events.withColumn(
            "m", F.from_json("value_json", wire, _WHOLE)
        )
        if key_wire:
            events = events.withColumn("k", F.from_json("key_json", struct_type(key_wire)))
    parsed = events
    if shape.kind == "envelope":
        parsed = parsed.withColumn("op", F.col("m.op")).withColumn(
            "image", F.when(F.col("op") == "d", F.col("m.before")).otherwise(F.col("m.after"))
        )
        return parsed, _envelope_meta()
    deleted = F.lower(F.col("m.__deleted")) == "true"
    op = F.coalesce(F.col("m.__op"), F.when(deleted, F.lit("d")).otherwise(F.lit("u")))
    return parsed.withColumn("op", op).withColumn("image", F.col("m")), _flat_meta()


def _data_columns(
    table: TableSchema, fields: list[Field], keyed_message: bool, placeholder: str, avro: bool
) -> tuple[list[Column], list[str], list[Column]]:
    """Each table column decoded from the image (a key column falling back to the message key); the TOAST
    checks (SQL naming the column whose value is the placeholder); the reasons of values that do not fit."""
    present = {f.name: f for f in fields}
    columns: list[Column] = []
    toast_checks: list[str] = []
    unfit: list[Column] = []
    for field in table.fields:
        name = field.name
        if name not in present:
            columns.append(F.lit(None).cast(field.table_type).alias(name))
            continue
        wire_schema = present[name].schema  # this event's own type; a widened table type is a cast away
        value = decode(f"image.{quote(name)}", wire_schema, avro=avro)
        check = is_placeholder(f"image.{quote(name)}", wire_schema, placeholder, avro=avro)
        if check:
            toast_checks.append(f"IF({check}, '{name}', NULL)")
            value = f"IF({check}, NULL, {value})"
        keyed = name in table.key and keyed_message
        if keyed:
            value = f"coalesce({value}, {decode(f'k.{quote(name)}', wire_schema, avro=avro)})"
        columns.append(F.expr(f"try_cast({value} AS {field.table_type})").alias(name))
        unfit.append(_unfit(name, field.table_type, wire_schema, toastable=bool(check), keyed=keyed))
    return columns, toast_checks, unfit


def _unfit(name: str, table_type: str, wire: dict[str, Any], *, toastable: bool, keyed: bool) -> Column:
    """The reason text when the column's wire value (not the TOAST placeholder; or, for a key column, the
    message key's value) is there but its decoded value, or a part of it, is NULL; else NULL."""
    present = f"__image.{quote(name)} IS NOT NULL"
    if toastable:
        present += f" AND NOT array_contains(__toast, '{name}')"
    if keyed:
        present = f"({present}) OR __key.{quote(name)} IS NOT NULL"
    lost = f"{quote(name)} IS NULL"
    inner = lost_inside(f"__image.{quote(name)}", quote(name), wire)
    if inner:
        lost += f" OR ({inner})"
    reason = F.lit(f"value of column {name} does not fit {table_type}")
    return F.when(F.expr(f"coalesce(({present}) AND ({lost}), false)"), reason)


def _envelope_meta() -> dict[str, Column]:
    source = "m.source"
    ts_ms = F.coalesce(F.col(f"{source}.ts_ms"), F.col(f"{source}.ts_sec") * 1000)
    return _position_meta(
        op=F.col("op"),
        ts_ms=ts_ms,
        ts_fine=F.coalesce(
            F.col(f"{source}.ts_ns"), F.col(f"{source}.ts_us") * 1000, F.col(f"{source}.ts_ms") * 1_000_000
        ),
        ts_us=F.coalesce(F.col(f"{source}.ts_us"), F.expr(f"{source}.ts_ns div 1000"), ts_ms * 1000),
        lsn=F.col(f"{source}.lsn"),
        file=F.col(f"{source}.file"),
        pos=F.col(f"{source}.pos"),
        row=F.col(f"{source}.row"),
    )


def _flat_meta() -> dict[str, Column]:
    def either(name: str) -> Column:
        return F.coalesce(F.col(f"m.__{name}"), F.col(f"m.__source_{name}"))

    ts_ms = F.coalesce(F.col("m.__source_ts_ms"), F.col("m.__ts_ms"))
    return _position_meta(
        op=F.col("op"),
        ts_ms=ts_ms,
        ts_fine=F.coalesce(F.col("m.__source_ts_ns"), F.col("m.__source_ts_us") * 1000, ts_ms * 1_000_000),
        ts_us=F.coalesce(F.col("m.__source_ts_us"), F.expr("m.__source_ts_ns div 1000"), ts_ms * 1000),
        lsn=either("lsn"),
        file=either("file"),
        pos=either("pos"),
        row=either("row"),
    )


def _position_meta(op, ts_ms, ts_fine, ts_us, lsn, file, pos, row) -> dict[str, Column]:
    """The one comparable position: LSN; else binlog (file number, pos, row) as 8+20+10 digits; else time."""

    def digits(value: Column, width: int) -> Column:
        text = value.cast("string")
        return F.lpad(text, width, "0")

    binlog = F.concat(
        digits(F.coalesce(F.regexp_extract(file, r"([0-9]+)$", 1).cast("bigint"), F.lit(0)), 8),
        digits(pos, 20),
        digits(F.coalesce(row, F.lit(0)), 10),
    ).cast("decimal(38,0)")
    position = (
        F.when(lsn.isNotNull(), lsn.cast("decimal(38,0)"))
        .when(file.isNotNull() & pos.isNotNull(), binlog)
        .otherwise(ts_fine.cast("decimal(38,0)"))
    )
    return {
        "__op": op,
        "__source_ts_ms": ts_ms,
        "__source_ts_us": ts_us,
        "__lsn": lsn,
        "__binlog_file": file,
        "__binlog_pos": pos,
        "__binlog_row": row,
        "__position": position,
        "__kafka_topic": F.col("__kafka_topic"),
        "__kafka_partition": F.col("__kafka_partition"),
        "__kafka_offset": F.col("__kafka_offset"),
        "__deleted": op == "d",
    }


def _reason(table: TableSchema) -> Column:
    """Why an event cannot be applied, or null; evaluated over the decoded row."""
    op = F.col("__op")
    key_missing = F.lit(False)
    for name in table.key:
        key_missing = key_missing | F.col(name).isNull()
    key_list = json.dumps(list(table.key))
    return (
        F.when(F.col("__not_object"), F.lit("payload is not a JSON object"))
        .when(F.col("__corrupt"), F.lit("payload does not match its schema"))
        .when(op.isNull(), F.lit("no op in the event"))
        .when(~op.isin(*OPS), F.concat(F.lit("unknown op '"), op, F.lit("'")))
        .when(op.isin("c", "r", "u") & F.col("__no_image"), F.concat(F.lit("op "), op, F.lit(" without an after image")))
        .when(F.col("__unfit") != "", F.col("__unfit"))
        .when((op != "t") & key_missing, F.lit(f"missing key: expected values for key columns {key_list}"))
    )
