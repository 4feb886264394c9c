"""The lake's tables: their folders in the warehouse and their objects in the Hive metastore."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from lakecompact import sql
from lakecompact.config import Config
from lakecompact.errors import UnknownTable
from lakecompact.schema.model import (
    BASE_EXTRA,
    BASE_PARTITION,
    INCREMENT_PARTITIONS,
    META_COLUMNS,
    ORDER_TYPE,
    ORIGINS_TYPE,
    TableSchema,
)
from lakecompact.spark import warehouse_uri
from lakecompact.storage import Storage, VersionedState

# meta columns a reader of the view sees; __toast is always empty after resolution
VISIBLE_META = [name for name, _ in META_COLUMNS if name != "__toast"]


@dataclass(frozen=True)
class TablePaths:
    """Where one table's parts live (DESIGN "Storage layout")."""

    root: str

    @property
    def base(self) -> str:
        return f"{self.root}/base"

    def base_version(self, version: int) -> str:
        return f"{self.base}/v={version}"

    def base_bucket(self, version: int, bucket: int) -> str:
        return f"{self.base_version(version)}/__bucket={bucket}"

    @property
    def increments(self) -> str:
        return f"{self.root}/increments"

    def increment(self, hour: str, batch: int) -> str:
        return f"{self.increments}/hour={hour}/batch={batch}"

    def archived(self, hour: str, batch: int) -> str:
        return f"{self.root}/archive/hour={hour}/batch={batch}"

    def changes(self, version: int) -> str:
        return f"{self.root}/changes/v={version}"

    def changes_staging(self, version: int) -> str:
        return f"{self.root}/changes/_staging/v={version}"

    @property
    def quarantine(self) -> str:
        return f"{self.root}/_quarantine"

    @property
    def state(self) -> str:
        return f"{self.root}/_state"


class Catalog:
    """Metastore statements (rendered from sql_templates/) and the table state kept beside the data."""

    def __init__(self, spark: SparkSession | None, config: Config):
        self.spark, self.config = spark, config
        self.database = config.database
        self.root = f"{warehouse_uri(config.warehouse).rstrip('/')}/{config.database}"

    @functools.cached_property
    def storage(self) -> Storage:
        return Storage(self.spark, self.root)

    def paths(self, table: str) -> TablePaths:
        return TablePaths(f"{self.root}/{table}")

    def run(self, template: str, **context) -> DataFrame:
        return sql.run(self.spark, template, database=self.database, **context)

    def ensure_database(self) -> None:
        self.storage.mkdirs(self.root)
        self.run("create_database.sql.j2", location=self.root)

    # -- schemas ---------------------------------------------------------------------------------
    def _schema_state(self, table: str) -> VersionedState:
        return VersionedState(self.storage, f"{self.paths(table).state}/schema")

    def tables(self) -> list[str]:
        names = self.storage.list_names(self.root)
        return [n for n in names if not n.startswith("_") and self.storage.exists(f"{self.root}/{n}/_state/schema")]

    def schema(self, table: str) -> TableSchema | None:
        _, raw = self._schema_state(table).latest()
        return TableSchema.from_json(raw) if raw else None

    def require(self, table: str) -> TableSchema:
        schema = self.schema(table)
        if schema is None:
            raise UnknownTable(table, self.tables())
        return schema

    def save_schema(self, schema: TableSchema) -> None:
        self._schema_state(schema.table).write(schema.version, schema.to_json())

    # -- tables ----------------------------------------------------------------------------------
    def ddl(self, schema: TableSchema) -> list[tuple[str, str]]:
        """(template, SQL) of every statement that creates a table's metastore objects, parse-checked."""
        from lakecompact.compaction.changes import CHANGE_PARTITION, change_columns

        paths = self.paths(schema.table)
        properties = self._schema_properties(schema)
        statements = [
            ("create_table.sql.j2", dict(
                table=f"{schema.table}_base",
                columns=schema.columns + list(META_COLUMNS) + list(BASE_EXTRA),
                partitions=[BASE_PARTITION],
                location=paths.base,
                properties={**properties, "lakecompact.base_version": "0"},
            )),
            ("create_table.sql.j2", dict(
                table=f"{schema.table}_increments",
                columns=schema.columns + list(META_COLUMNS),
                partitions=list(INCREMENT_PARTITIONS),
                location=paths.increments,
                properties=properties,
            )),
            ("create_table.sql.j2", dict(
                table=f"{schema.table}_changes",
                columns=change_columns(schema),
                partitions=[CHANGE_PARTITION],
                location=f"{paths.root}/changes",
                properties=properties,
            )),
            ("create_view.sql.j2", dict(view=schema.table, **self.view_context(schema))),
        ]
        rendered = []
        for template, context in statements:
            text = sql.render(template, database=self.database, **context)
            sql.parse_check(text, template)
            rendered.append((template, text))
        return rendered

    def create(self, schema: TableSchema) -> None:
        """Create `<t>_base`, `<t>_increments`, `<t>_changes` and the view `<t>` for a new table."""
        self.ensure_database()
        for _, statement in self.ddl(schema):
            self.spark.sql(statement)
        self.save_schema(schema)

    def widen(self, schema: TableSchema) -> None:
        """Apply safe type widenings: the tables' data schemas change in the metastore, files stay as written.

        Spark's ALTER TABLE cannot change a column's type, so this goes through the session catalog;
        parquet files written with the narrower type still read correctly (int → bigint, float → double,
        decimal precision up).
        """
        jvm = self.spark.sparkContext._jvm
        session_catalog = self.spark._jsparkSession.sessionState().catalog()
        types = dict(schema.columns)
        for suffix in ("_base", "_increments"):
            table = f"{schema.table}{suffix}"
            identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier(table, jvm.scala.Some(self.database))
            current = session_catalog.getTableMetadata(identifier)
            # keep the metastore's column order (ADD COLUMNS appends after the meta columns): Hive checks
            # type compatibility position by position
            data = [(f.name(), types.get(f.name(), f.dataType().sql())) for f in current.dataSchema().fields()]
            ddl = ", ".join(f"`{name}` {kind}" for name, kind in data)
            session_catalog.alterTableDataSchema(identifier, jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl))
            self.set_properties(table, self._schema_properties(schema))
            self.refresh(table)
        self.create_changes_table(schema)
        self.save_schema(schema)
        self.create_view(schema)

    def create_changes_table(self, schema: TableSchema) -> None:
        """`<t>_changes`; its struct columns follow the schema, so an evolution recreates it (metadata only)."""
        table = f"{schema.table}_changes"
        exists = self.spark.catalog.tableExists(f"{self.database}.{table}")
        versions = [int(p["__version"]) for p in self.partitions(table)] if exists else []
        if exists:
            self.run("drop_table.sql.j2", table=table)  # external: the files stay
        statement = next(text for _, text in self.ddl(schema) if f"`{table}`" in text.split("(", 1)[0])
        self.spark.sql(statement)
        paths = self.paths(schema.table)
        self.add_partitions(table, [([("__version", v)], paths.changes(v)) for v in versions])

    def add_columns(self, schema: TableSchema, added: list[tuple[str, str]]) -> None:
        for suffix in ("_base", "_increments"):
            self.run("add_columns.sql.j2", table=f"{schema.table}{suffix}", columns=added)
            self.run("set_tblproperties.sql.j2", table=f"{schema.table}{suffix}", properties=self._schema_properties(schema))
        self.create_changes_table(schema)
        self.save_schema(schema)
        self.create_view(schema)

    @staticmethod
    def _schema_properties(schema: TableSchema) -> dict[str, str]:
        return {
            "lakecompact.schema_version": str(schema.version),
            "lakecompact.schema_hash": schema.hash,
            "lakecompact.key": ",".join(schema.key),
            "lakecompact.topic": schema.topic,
        }

    def create_view(self, schema: TableSchema) -> None:
        self.run("create_view.sql.j2", view=schema.table, **self.view_context(schema))

    def view_context(self, schema: TableSchema, *, dialect_names: bool = False) -> dict:
        db = f"`{self.database}`"
        return semantics_context(
            schema,
            base=f"{db}.`{schema.table}_base`",
            increments=f"{db}.`{schema.table}_increments`",
            live_only=True,
        )

    # -- partitions ------------------------------------------------------------------------------
    def partitions(self, table: str) -> list[dict[str, str]]:
        rows = self.run("show_partitions.sql.j2", table=table).collect()  # metadata: one row per partition
        return [dict(part.split("=", 1) for part in row[0].split("/")) for row in rows]

    def add_partitions(self, table: str, partitions: list[tuple[list[tuple[str, object]], str]]) -> None:
        if partitions:
            self.run("add_partitions.sql.j2", table=table, partitions=partitions)

    def drop_partitions(self, table: str, specs: list[list[tuple[str, object]]]) -> None:
        if specs:
            self.run("drop_partitions.sql.j2", table=table, specs=specs)

    def set_partition_location(self, table: str, spec: list[tuple[str, object]], location: str) -> None:
        self.run("set_partition_location.sql.j2", table=table, spec=spec, location=location)

    def properties(self, table: str) -> dict[str, str]:
        rows = self.run("show_tblproperties.sql.j2", table=table).collect()
        return {row[0]: row[1] for row in rows}

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        self.run("set_tblproperties.sql.j2", table=table, properties=properties)

    def refresh(self, *tables: str) -> None:
        for table in tables:
            self.spark.catalog.refreshTable(f"`{self.database}`.`{table}`")


def semantics_context(schema: TableSchema, *, base: str, increments: str, live_only: bool, **extra) -> dict:
    """The inputs of latest_rows.sql.j2 / appended_rows.sql.j2 for one table."""
    types = dict(schema.columns + list(META_COLUMNS) + list(BASE_EXTRA))
    return {
        "query": "appended_rows.sql.j2" if schema.keyless else "latest_rows.sql.j2",
        "base": base,
        "increments": increments,
        "key": list(schema.key),
        "columns": schema.column_names,
        "toastable": [f.name for f in schema.fields if f.toastable and f.name not in schema.key],
        "meta": [name for name, _ in META_COLUMNS],
        "visible_meta": VISIBLE_META,
        "types": types,
        "origins_type": ORIGINS_TYPE,
        "order_type": ORDER_TYPE,
        "live_only": live_only,
        "new_rows_only": False,
        "dialect": "spark",
        **extra,
    }


def semantics_sql(schema: TableSchema, **kwargs) -> str:
    context = semantics_context(schema, **kwargs)
    query = sql.render(context["query"], **context)
    sql.parse_check(query, context["query"])
    return query
