"""A lake for one test: events written as kcat files, landed, compacted and read back as plain rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakecompact import config as config_module
from lakecompact.compaction.compact import compact
from lakecompact.compaction.rollback import rollback
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.partitions import DELTA_BUCKETS_FROM
from lakecompact.landing.land import land
from tests.support.debezium import write_kcat

META = {"__op", "__source_ts_ms", "__source_ts_us", "__lsn", "__binlog_file", "__binlog_pos", "__binlog_row", "__position",
        "__kafka_topic", "__kafka_partition", "__kafka_offset", "__deleted", "__landed_at", "__toast", "__batch",
        "__bucket", "__hour"}


def quarantined(lake: Lake, table: str | None) -> list[dict]:
    """The quarantined events of a table (of no table: None), as rows."""
    catalog = Catalog(lake.spark, lake.config)
    root = catalog.paths(table).quarantine if table else f"{catalog.root}/_quarantine"
    if not catalog.storage.list_names(root):
        return []
    return [row.asDict() for row in lake.spark.read.parquet(root).collect()]


class Lake:
    def __init__(self, spark, tmp_path: Path, database: str, **settings: Any):
        self.spark, self.tmp, self.database = spark, tmp_path, database
        self.events_dir = tmp_path / "events"
        self.events_dir.mkdir(exist_ok=True)
        self.configure(**settings)

    def configure(self, defaults: dict | None = None, tables: dict | None = None, **extra: Any) -> None:
        raw = {
            "warehouse": str(self.tmp / "warehouse"),
            "database": self.database,
            "source": {"kind": "files", "paths": [str(self.events_dir / "*.jsonl")]},
            "defaults": {"buckets": 4, **(defaults or {})},
            "tables": tables or {},
            **extra,
        }
        self.config = config_module.from_dict(raw)

    def write(self, lines: list, name: str = "events.jsonl", mode: str = "a") -> Path:
        path = self.events_dir / name
        write_kcat(path, lines, mode)
        return path

    def land(self, requeue: str | None = None):
        return land(self.spark, self.config, requeue)

    def land_then_compact(self, table: str, view: list[dict]) -> None:
        """Land what was written, then compact: `table`'s view (without meta columns) is `view` after each."""
        self.land()
        assert self.view(table) == view
        self.compact()
        assert self.view(table) == view

    def compact(self, *tables: str):
        return compact(self.spark, self.config, list(tables) or None)

    def rollback(self, table: str, to_version: int | None = None):
        return rollback(self.spark, self.config, table, to_version)

    def rows(self, query: str) -> list[dict]:
        return [json.loads(r[0]) for r in self.spark.sql(f"SELECT to_json(struct(*)) FROM ({query})").collect()]

    def view(self, table: str, *, meta: bool = False, order: str = "") -> list[dict]:
        return self._table(table, meta, order)

    def base(self, table: str, *, meta: bool = True, order: str = "") -> list[dict]:
        """The base's rows (the truncate marker aside), each key's delta row in place of its bucket row
        (merge-on-read: a delta is partition DELTA_BUCKETS_FROM + b of `<t>_base`)."""
        key = Catalog(self.spark, self.config).require(table).key
        if not key:
            return self._table(f"{table}_base", meta, order, where="__op <> 't'")
        same_key = " AND ".join(f"d.`{k}` = f.`{k}`" for k in key)
        where = (f"__op <> 't' AND (f.__bucket >= {DELTA_BUCKETS_FROM} OR NOT EXISTS (SELECT 1 FROM "
                 f"`{self.database}`.`{table}_base` AS d WHERE d.__bucket >= {DELTA_BUCKETS_FROM} AND {same_key}))")
        return self._table(f"{table}_base", meta, order, where=where, alias="f")

    def _table(self, name: str, meta: bool, order: str, where: str = "true", alias: str = "t") -> list[dict]:
        # a view has no cached plan: refreshing the tables it reads suffices, and Spark's refreshTable of the
        # view itself would analyse the view's whole query first (5x the time of both tables' refreshes)
        for table in [name] if name.endswith("_base") else [f"{name}_base", f"{name}_increments"]:
            self.spark.catalog.refreshTable(f"`{self.database}`.`{table}`")
        rows = self.rows(f"SELECT * FROM `{self.database}`.`{name}` AS {alias} WHERE {where}")
        if not meta:
            rows = [{k: v for k, v in r.items() if k not in META} for r in rows]
        key = order or next(iter(rows[0])) if rows else None
        return sorted(rows, key=lambda r: json.dumps(r.get(key), sort_keys=True)) if rows else rows

    def state(self, table: str) -> dict:
        """The view as {key: row-without-meta}, for comparison with a reference model."""
        return {r["id"]: {k: v for k, v in r.items()} for r in self.view(table)}
