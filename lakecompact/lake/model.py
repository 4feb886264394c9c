"""A table as lakecompact keeps it: source columns, key, and the meta columns it adds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakecompact.identifiers import struct_type
from lakecompact.lake.connect import Field, schema_hash

# Meta columns of every landed event (docs/design.md "Columns"); `__position` is the one comparable source
# position (LSN, or binlog file number / pos / row packed into 38 digits, or the finest timestamp).
META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("__op", "STRING"),
    ("__source_ts_ms", "BIGINT"),
    ("__source_ts_us", "BIGINT"),  # the finest source time Debezium gives (ts_us, ts_ns), else ts_ms's
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
# meta columns a reader of the view sees; __toast is always empty after resolution
VISIBLE_META: list[str] = [name for name, _ in META_COLUMNS if name != "__toast"]
# The change feed (`<t>_changes`): op, before/after images as in Debezium's envelope, the key, and where
# each change sits; partitioned by the base version that made it.
CHANGE_META: tuple[tuple[str, str], ...] = (
    ("__source_ts_ms", "BIGINT"),
    ("__position", "DECIMAL(38,0)"),
    ("__seq", "BIGINT"),
    ("__committed_at", "TIMESTAMP"),
)
CHANGE_PARTITION: tuple[str, str] = ("__version", "BIGINT")


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

    @property
    def map_columns(self) -> list[str]:
        """The columns whose type holds a MAP: their values cannot be ordered (nor compared in Spark)."""
        return [name for name, kind in self.columns if "MAP<" in kind.upper()]

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


def change_columns(schema: TableSchema) -> list[tuple[str, str]]:
    """Columns of `<t>_changes`; `before`/`after` are named as in Debezium's envelope."""
    image = struct_type(schema.columns)
    columns = [("op", "STRING"), ("before", image), ("after", image)]
    if schema.key:
        types = dict(schema.columns)
        columns.append(("key", struct_type((k, types[k]) for k in schema.key)))
    return columns + list(CHANGE_META)
