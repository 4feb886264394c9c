"""Per topic, how its events become its table's rows (docs/design.md "Landing protocol"): the form of each
(topic, value schema) group, the table made or evolved for it, the decoder of its events, and how the topic
carries deletes. The batch protocol (`land.py`) asks; nothing here writes an increment."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from lakecompact.config import Config
from lakecompact.errors import SchemaError
from lakecompact.lake.catalog import DELETE_FORM_PROPERTY, Catalog
from lakecompact.lake.connect import Field, avro_reader_schema, avro_wire, strip_wire
from lakecompact.lake.model import TableSchema
from lakecompact.landing import avro_values, decode
from lakecompact.landing.decode import MessageShape
from lakecompact.landing.increments import with_reason
from lakecompact.naming import base_table
from lakecompact.report import say
from lakecompact.schema import apply
from lakecompact.schema.registry import Registry, RegistryError

DeleteForm = Literal["rows", "tombstones"]  # how a table's topic carries deletes (a table property)
NOT_A_ROW_EVENT = "not a row event of a table"
UNPLACED_DELETE = (
    "a Kafka tombstone of a flattened topic whose rows carry no delete marker: ExtractNewRecordState sent this "
    "delete as the tombstone alone, which has no source position to order it by; configure the SMT with "
    "delete.tombstone.handling.mode=rewrite (or rewrite-with-tombstone) and add.fields=op,source.lsn "
    "(MySQL: op,source.file,source.pos,source.row) so that deletes land"
)


@dataclass(frozen=True)
class GroupShape:
    """One (topic, value schema) group of a batch, and how its values are laid out (or why that is unknown)."""

    group: Row  # topic, value_schema_hash, value_schema, key_schema, key_sample, value_sample, events, values,
    # first_offset and truncates (not in a one-pass group's)
    shape: MessageShape | None
    error: str | None = None


class TopicSchemas:
    """A batch's schema decisions, per topic; what it learns (how a table's deletes come, the registry's client)
    is kept for the batch."""

    def __init__(self, catalog: Catalog, config: Config):
        self.catalog, self.config = catalog, config
        self.storage = catalog.storage
        self._delete_forms: dict[str, str | None] = {}  # table -> how its deletes come, as recorded, read once a run
        self._registry_client: Registry | None = None
        self._registry_keys: dict[str, tuple[str, ...]] = {}  # topic -> its key subject's columns, for the batch
        self.made: set[str] = set()  # the tables made by the batch being landed

    def shapes(self, topic: str, groups: list[Row]) -> list[GroupShape]:
        """How each group's values are laid out; a group whose schema cannot be had carries the reason."""
        shapes = []
        for group in groups:
            if group.values == 0:
                continue
            try:
                shape = decode.shape_of(self._value_schema(group), list(group.value_sample or []), topic)
            except (SchemaError, RegistryError) as exc:
                shapes.append(GroupShape(group, None, str(exc)))
                continue
            shapes.append(GroupShape(group, shape))
        return shapes

    def create_table(self, table: str, topic: str, shapes: list[GroupShape]) -> TableSchema | None:
        """A new table from the first group that shows its fields; None when no group does."""
        schema = self.new_table(table, topic, shapes)
        if schema is None:
            return None
        self.catalog.create(schema)
        self.made.add(table)
        say(f"  created {self.config.database}.{table} (key {list(schema.key) or 'none: append-only'}, "
            f"{len(schema.fields)} columns) from topic {topic}")
        return schema

    def new_table(self, table: str, topic: str, shapes: list[GroupShape]) -> TableSchema | None:
        """The schema of a new table, from the first group that shows its fields (not made); None when no group
        does."""
        first = next((s for s in shapes if s.shape is not None and s.shape.fields), None)
        if first is None:
            return None
        key = self.config.table(table).key
        if key is None:
            key = self._key_columns(topic, first.group)
        fields = tuple(Field(f.name, strip_wire(f.schema)) for f in first.shape.fields)
        return TableSchema(table, topic, fields, tuple(key))

    def key_unknown(
        self, table: str, topic: str, shapes: list[GroupShape], events_of: Callable[[Row], DataFrame]
    ) -> bool:
        """A new table's events do not show its key yet: each of them is a truncate, which carries no Kafka key,
        `tables.<t>.key` does not name it, and (Avro) the registry has no key schema of the topic yet. Made now,
        the table would be keyless for good (docs/design.md "Keys and keyless tables"). `events_of`: a group's
        events."""
        if self.config.table(table).key is not None:
            return False
        rows = sorted((s for s in shapes if s.shape is not None and s.shape.kind != "skip"),
                      key=lambda s: _is_avro(s.group))  # the counted groups first: an Avro group's count is a job
        if not rows or (any(_is_avro(s.group) for s in rows) and self.registry_key(topic)):
            return False
        return all(self._showing_no_key(s, events_of) == s.group.values for s in rows)

    def _showing_no_key(self, shaped: GroupShape, events_of: Callable[[Row], DataFrame]) -> int:
        """A group's events that show no key: its truncates, counted by the grouping pass, which reads no Avro
        value; an Avro group's by decoding its events' op (asked only of a new table whose key the registry does
        not name), with the values that have none (quarantined, they show nothing)."""
        group = shaped.group
        if not _is_avro(group):
            return group.truncates
        if shaped.shape.kind != "envelope":  # a flattened row carries no op to tell a truncate by
            return 0
        return avro_values.without_op_or_truncates(events_of(group), self._reader_schema(group))

    def decoder(
        self, schema: TableSchema, shaped: GroupShape, landed_at: str, *, evolve: bool = True
    ) -> tuple[TableSchema, Callable[[DataFrame], DataFrame]] | str:
        """How the group's events decode into rows (the table's schema evolved to take them; `evolve=False`: a
        table not made, as it is), or why none of them can land."""
        group, shape = shaped.group, shaped.shape
        if shape is None:
            return shaped.error or "unknown schema"
        if shape.kind == "skip":
            return NOT_A_ROW_EVENT
        writer_schema = self._reader_schema(group) if _is_avro(group) else None
        key_schema = json.loads(group.key_schema) if group.key_schema else None
        key = decode.key_columns(key_schema, []) if key_schema else None
        try:
            schema = self._evolve(schema, list(shape.fields), key) if evolve else schema
        except SchemaError as exc:
            return str(exc)
        placeholder = self.config.table(schema.table).toast_placeholder

        def decoded(events: DataFrame) -> DataFrame:
            if writer_schema is not None:
                return avro_values.decode_events(events, writer_schema, shape, schema, placeholder, landed_at)
            return decode.decode_events(events, shape, schema, placeholder, landed_at)

        return schema, decoded

    def unplaced_deletes(
        self, topic: str, table: str, shapes: list[GroupShape], messages: Callable[[], DataFrame]
    ) -> DataFrame | None:
        """The Kafka tombstones of a flattened topic whose rows carry no delete marker, or None.

        ExtractNewRecordState's default sends a delete as the tombstone alone: skipping it (docs/design.md "Kafka tombstones") would lose the
        delete, and it has no source position to be ordered by. So it is kept in quarantine, with what to configure.
        How a table's deletes come is kept for batches that hold only tombstones, in the table's state, which only
        the lander writes (under its lock): not as a table property, which a compactor's swap writes back as it read
        them (the metastore replaces a table's properties whole), dropping one set after that read.
        """
        seen = self._delete_form(shapes)  # a value that is no JSON object shows no fields, and proves nothing
        recorded = self.catalog.paths(table).delete_form
        if table not in self._delete_forms:
            self._delete_forms[table] = self._recorded_delete_form(table, recorded)
        if seen is not None and seen != self._delete_forms[table]:
            self.storage.write_json(recorded, {"deletes": seen}, overwrite=True)
            self._delete_forms[table] = seen
        if self._delete_forms[table] != "tombstones":
            return None
        tombstones = messages().where((F.col("__kafka_topic") == topic) & ~F.col("__has_value"))
        return with_reason(tombstones, UNPLACED_DELETE)

    def _recorded_delete_form(self, table: str, recorded: str) -> DeleteForm | None:
        """How the table's deletes come, as recorded; a lake landed into before the record holds it as a table
        property, which is recorded the new way once read."""
        if self.storage.exists(recorded):
            return self.storage.read_json(recorded)["deletes"]
        form = self.catalog.properties(base_table(table)).get(DELETE_FORM_PROPERTY)
        if form is not None:
            self.storage.write_json(recorded, {"deletes": form}, overwrite=True)
        return form

    @staticmethod
    def _delete_form(shapes: list[GroupShape]) -> DeleteForm | None:
        """"rows" (envelopes, or flattened rows with `__deleted` / `__op`), "tombstones", or None: not shown here."""
        kinds = [(s.shape.kind, s.shape.delete_marker) for s in shapes if s.shape is not None]
        if ("envelope", None) in kinds or ("flat", True) in kinds:
            return "rows"
        return "tombstones" if ("flat", False) in kinds else None

    def _registry(self) -> Registry:
        if self.config.registry is None:
            raise SchemaError("Avro event (Confluent wire format) but no [registry] is configured to resolve its schema id")
        if self._registry_client is None:
            self._registry_client = Registry(self.config.registry)
        return self._registry_client

    def _key_columns(self, topic: str, group) -> tuple[str, ...]:
        if _is_avro(group):
            return self.registry_key(topic)
        key_schema = json.loads(group.key_schema) if group.key_schema else None
        return decode.key_columns(key_schema, list(group.key_sample or []))

    def registry_key(self, topic: str) -> tuple[str, ...]:
        """The columns of the topic's key schema in the registry; none while it has none (AvroConverter registers
        it with the first event that has a key). Asked once a batch."""
        from lakecompact.schema import avro
        from lakecompact.schema.registry import SchemaNotFound

        if topic not in self._registry_keys:
            registry = self._registry()
            try:
                self._registry_keys[topic] = tuple(avro.key_fields(registry.schema(registry.subject(topic, "key")).schema))
            except SchemaNotFound:
                self._registry_keys[topic] = ()
        return self._registry_keys[topic]

    def _writer_schema(self, group) -> dict:
        return self._registry().schema_by_id(int(group.value_schema_hash[len(decode.AVRO_PREFIX):]))

    def _reader_schema(self, group) -> str:
        """What `from_avro` reads an Avro group's values with (connect.avro_reader_schema of its writer schema)."""
        return json.dumps(avro_reader_schema(self._writer_schema(group)))

    def _value_schema(self, group) -> dict | None:
        """The group's Connect schema: embedded in JSON events, or the Avro writer schema from the registry."""
        if _is_avro(group):
            from lakecompact.schema import avro

            return avro_wire(avro.connect_schema(self._writer_schema(group)))
        return json.loads(group.value_schema) if group.value_schema else None

    def _evolve(self, schema: TableSchema, fields: list[Field], key: tuple[str, ...] | None) -> TableSchema:
        if not fields:
            return schema
        if self.config.table(schema.table).key is not None:
            key = None  # a configured key overrides the message key
        fields = [Field(f.name, strip_wire(f.schema)) for f in fields]
        return apply.evolve(self.catalog, self.config, schema, fields, key)

    @staticmethod
    def written_with_schema(topic: str, samples: decode.Samples, seen: tuple[str, ...] = ()) -> decode.Written | None:
        """The form of a topic whose values embed their schema, when its key form is known and its values are
        rows whose deletes come as rows. `seen`: the value schema texts the sample and the planner saw the topic's
        lines start with, in the order they come; those that parse into one struct with the sampled one are
        expected too."""
        if topic not in samples.keys:
            return None
        sampled = samples.values[topic]
        accepted = {sampled: _rows_shape(sampled, topic)}
        if accepted[sampled] is None:
            return None
        texts = list(seen) if sampled in seen else [sampled, *seen]
        for text in texts:
            shape = accepted.get(text) or _rows_shape(text, topic)
            if shape is not None and decode.one_struct([*accepted.values(), shape]):
                accepted[text] = shape
        return decode.Written.of_versions(topic, samples.keys[topic],
                                          [(text, accepted[text]) for text in texts if text in accepted])

    def written_as_avro(self, topic: str, schema_id: int) -> decode.Written | None:
        """The form of a topic whose values are Avro of one schema id, when the registry gives its schema and its
        values are rows whose deletes come as rows; None otherwise (the careful way quarantines what it must, with
        the reason)."""
        try:
            schema = self._value_schema(Row(value_schema_hash=decode.avro_schema_hash(schema_id)))
            shape = decode.shape_of(schema, [], topic)
        except (SchemaError, RegistryError):
            return None
        if not _rows_with_deletes(shape):
            return None
        return decode.Written(topic, None, None, shape, avro_id=schema_id)


def _is_avro(group: Row) -> bool:
    """A group of Avro values (Confluent's wire format): its schema is the registry's, by id."""
    return bool(group.value_schema_hash and group.value_schema_hash.startswith(decode.AVRO_PREFIX))


def _rows_shape(text: str, topic: str) -> MessageShape | None:
    """The shape of values with this schema text, when they are rows whose deletes come as rows."""
    try:
        schema = json.loads(text)
        shape = decode.shape_of(schema, [], topic) if isinstance(schema, dict) else None
    except (ValueError, SchemaError):
        return None
    return shape if shape is not None and _rows_with_deletes(shape) else None


def _rows_with_deletes(shape: MessageShape) -> bool:
    """Values that are table rows whose deletes come as rows: envelopes, or flattened rows with a delete marker."""
    return bool(shape.fields) and (shape.kind == "envelope" or (shape.kind == "flat" and bool(shape.delete_marker)))
