"""A table as lakecompact keeps it: source columns, key, and the meta columns it adds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecompact.errors import SchemaError
from lakecompact.schema.connect import Field, schema_hash

# Meta columns of every landed event (DESIGN "Columns"); `__position` is the one comparable source
# position (LSN, or binlog file number / pos / row packed into 38 digits, or the finest timestamp).
META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("__op", "STRING"),
    ("__source_ts_ms", "BIGINT"),
    ("__lsn", "BIGINT"),
    ("__binlog_file", "STRING"),
    ("__binlog_pos", "BIGINT"),
    ("__binlog_row", "INT"),
    ("__position", "DECIMAL(38,0)"),
    ("__kafka_topic", "STRING"),
    ("__kafka_partition", "INT"),
    ("__kafka_offset", "BIGINT"),
    ("__deleted", "BOOLEAN"),
    ("__landed_at", "TIMESTAMP"),
    ("__toast", "ARRAY<STRING>"),
)
INCREMENT_PARTITIONS: tuple[tuple[str, str], ...] = (("__hour", "STRING"), ("__batch", "BIGINT"))
ORDER_TYPE = "STRUCT<position DECIMAL(38,0), op_rank INT, batch BIGINT, partition INT, offset BIGINT>"
# In the base, where each value came from: '*' for the columns every event carries, and each TOAST-able
# column by name, so an older event delivered after a compaction is weighed as if the history were there.
ORIGINS_TYPE = f"MAP<STRING, {ORDER_TYPE}>"
BASE_EXTRA: tuple[tuple[str, str], ...] = (("__batch", "BIGINT"), ("__origins", ORIGINS_TYPE))
BASE_PARTITION: tuple[str, str] = ("__bucket", "INT")


@dataclass(frozen=True)
class TableSchema:
    """What lakecompact knows of one source table."""

    table: str
    topic: str
    fields: tuple[Field, ...]
    key: tuple[str, ...]  # empty: keyless, append-only
    version: int = 1

    @property
    def keyless(self) -> bool:
        return not self.key

    @property
    def columns(self) -> list[tuple[str, str]]:
        return [(f.name, f.table_type) for f in self.fields]

    @property
    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    @property
    def hash(self) -> str:
        return schema_hash([self.key, [(f.name, f.schema) for f in self.fields]])

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "topic": self.topic,
            "key": list(self.key),
            "version": self.version,
            "fields": [{"field": f.name, **f.schema} for f in self.fields],
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TableSchema:
        fields = tuple(Field(f["field"], {k: v for k, v in f.items() if k != "field"}) for f in raw["fields"])
        return cls(raw["table"], raw["topic"], fields, tuple(raw["key"]), raw.get("version", 1))

    def merged_with(self, fields: list[Field]) -> tuple[TableSchema, list[Field]]:
        """This schema with the new fields appended; columns never disappear (dropped ones read as null).

        Returns the merged schema and the added fields. A changed type raises SchemaError here; the
        schema package decides what is a safe widening.
        """
        known = {f.name: f for f in self.fields}
        added = []
        for field in fields:
            old = known.get(field.name)
            if old is None:
                added.append(field)
            elif old.table_type != field.table_type:
                raise SchemaError(
                    f"table {self.table}: column {field.name} changed type from {old.table_type} to {field.table_type}"
                )
        if not added:
            return self, []
        return TableSchema(self.table, self.topic, self.fields + tuple(added), self.key, self.version + 1), added
