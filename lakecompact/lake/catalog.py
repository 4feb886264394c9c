"""The lake's tables: their folders in the warehouse and their objects in the Hive metastore."""

from __future__ import annotations

import functools
import time
from concurrent.futures import Future, ThreadPoolExecutor

from pyspark.sql import DataFrame, SparkSession

from lakecompact import sql
from lakecompact.config import Config
from lakecompact.errors import LakecompactError, LakeFormatTooNew, UnknownTable
from lakecompact.identifiers import column_list, qualified
from lakecompact.lake import view_definition
from lakecompact.lake.manifest import Manifests
from lakecompact.lake.model import (
    BASE_EXTRA,
    BASE_PARTITION,
    CHANGE_PARTITION,
    INCREMENT_PARTITIONS,
    META_COLUMNS,
    TableSchema,
    change_columns,
)
from lakecompact.lake.paths import DatabasePaths, TablePaths
from lakecompact.lake.storage import LocalFiles, Storage, VersionedState
from lakecompact.naming import base_table, changes_table, events_table, increments_table
from lakecompact.spark import jvm_class

# table properties of `<t>_base`
VERSION_PROPERTY = "lakecompact.base_version"  # the base version the metastore points at
# how the table's topic carries deletes, where lakes landed into before TablePaths.delete_form kept it
DELETE_FORM_PROPERTY = "lakecompact.deletes"
# the name, everywhere (land, status, quarantine), of events that belong to no table; no table starts with "_"
UNPLACED = "_unknown"
# the lake format this version writes and reads: how a table's folders, state files and metastore objects are laid
# out (docs/design.md "State files"). A table whose state names no format is format 1. A change that an older
# lakecompact would misread raises it, so that the older one stops with a message instead
LAKE_FORMAT = 1
# the meta columns' revision ("meta" in the same file; none: 1). Added meta columns are not a new format: an older
# lakecompact reads past them, and the files it wrote read them as null. A table of an older revision gets them in
# the metastore (and its views made again) the first time a command with a Spark session reads its schema.
# 2: `__source_ts_us`
META_REVISION = 2


def published_feed_versions(names: list[str], kept_versions: list[int]) -> list[int]:
    """The change feed's versions among the names in its folder: those of kept versions. A version's feed is
    written before its manifest, so a folder above the current version is a compaction's that has not committed (or
    was rolled back); an expired version's folder stays until the compaction after it expired."""
    kept = set(kept_versions)
    return sorted(v for v in (int(name[len("v="):]) for name in names if name.startswith("v=")) if v in kept)


class Catalog:
    """Metastore statements (rendered from sql_templates/) and the table state kept beside the data."""

    def __init__(self, spark: SparkSession | None, config: Config):
        self.spark, self.config = spark, config
        self.database = config.database
        self.database_paths = DatabasePaths.of(config.warehouse, config.database)
        self.root = self.database_paths.root
        self._readable: set[str] = set()  # tables whose lake format this version was found to read
        self._meta_revisions: dict[str, int] = {}  # the meta revision each read table's state recorded

    @functools.cached_property
    def storage(self) -> Storage | LocalFiles:
        """Through Spark's Hadoop FileSystem; without a session (reading a local warehouse), from the disk."""
        if self.spark is None:
            if not LocalFiles.is_local(self.root):
                raise LakecompactError(f"reading {self.root} needs Spark (only a local warehouse is read without)")
            return LocalFiles(self.root)
        return Storage(self.spark, self.root)

    def paths(self, table: str) -> TablePaths:
        return TablePaths(f"{self.root}/{table}")

    @property
    def unplaced_quarantine(self) -> str:
        """Where events that belong to no table go (lines that are no event at all)."""
        return self.database_paths.quarantine

    def quarantine(self, table: str | None) -> str:
        """A table's quarantine folder; None: the events of no table."""
        return self.paths(table).quarantine if table else self.unplaced_quarantine

    def run(self, template: str, **context) -> DataFrame:
        return sql.run(self.spark, template, database=self.database, **context)

    def ensure_database(self) -> None:
        self.storage.mkdirs(self.root)
        self.run("create_database.sql.j2", location=self.root)

    def ensure_database_meanwhile(self) -> Future[None]:
        """`ensure_database` in a thread of its own. A process's first metastore call starts the metastore client
        (~2 s in a new JVM, more when it makes an embedded metastore's tables): the caller does what needs only the
        files meanwhile, and waits on the future before its first metastore call."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metastore")
        try:
            return executor.submit(self.ensure_database)
        finally:
            executor.shutdown(wait=False)  # its one thread ends with the call

    # -- schemas ---------------------------------------------------------------------------------
    def _schema_state(self, table: str) -> VersionedState:
        return VersionedState(self.storage, self.paths(table).schema)

    def tables(self) -> list[str]:
        names = self.storage.list_names(self.root)
        return [n for n in names if not n.startswith("_") and self.storage.exists(self.paths(n).schema)]

    def not_made(self) -> list[str]:
        """Names that have quarantined events or held truncates but no table yet."""
        return [n for n in self._without_table() if self._quarantined(n) or self.held_truncates(n)]

    def held_truncates(self, table: str) -> list[str]:
        """The folders of the truncates held for `table` until its key is known (docs/design.md "Keys and keyless
        tables"), one per batch that held some."""
        root = self.paths(table).held_truncates
        return [f"{root}/{name}" for name in sorted(self.storage.list_names(root)) if name.startswith("batch=")]

    def quarantined_only(self) -> list[str]:
        """Names that have quarantined events but no table (none of their topic's events could land yet)."""
        return [n for n in self._without_table() if self._quarantined(n)]

    def _without_table(self) -> list[str]:
        """The names in the database's folder that are no table (its own `_` folders aside), sorted."""
        tables = set(self.tables())
        return sorted(n for n in self.storage.list_names(self.root) if not n.startswith("_") and n not in tables)

    def _quarantined(self, name: str) -> bool:
        return any(b.startswith("batch=") for b in self.storage.list_names(self.paths(name).quarantine))

    def schema(self, table: str) -> TableSchema | None:
        """The table's schema as saved (None: no such table), once its lake format is known to be readable: every
        command reads it before it works on a table."""
        _, raw = self._schema_state(table).latest()
        if not raw:
            return None
        self.require_readable(table)
        schema = TableSchema.from_json(raw)
        if self.spark is not None and self._meta_revisions.get(table, META_REVISION) < META_REVISION:
            self._add_meta_columns(schema)
        return schema

    def require_readable(self, table: str) -> None:
        """The table is in a lake format this version reads (LAKE_FORMAT or older); checked once per catalog."""
        if table in self._readable:
            return
        recorded = self.storage.read_json_or_none(self.paths(table).lake_format)
        found = int(recorded["format"]) if recorded else 1
        if found > LAKE_FORMAT:
            raise LakeFormatTooNew(table, found, LAKE_FORMAT)
        self._readable.add(table)
        self._meta_revisions[table] = int((recorded or {}).get("meta", 1))

    def _add_meta_columns(self, schema: TableSchema) -> None:
        """The meta columns a table of an older revision lacks, appended to its row tables' schemas, its views made
        again to show them, and the revision recorded. Setting a whole data schema (not ADD COLUMNS) lets a land and
        a compaction that both found the table old do it together."""
        session_catalog = self._session_catalog()
        struct_type = jvm_class(self.spark, "org.apache.spark.sql.types.StructType")
        for table in self._row_tables(schema.table):
            identifier = self._identifier(table)
            current = [(f.name(), f.dataType().sql()) for f in session_catalog.getTableMetadata(identifier).dataSchema().fields()]
            missing = [(name, kind) for name, kind in META_COLUMNS if name not in dict(current)]
            if missing:
                session_catalog.alterTableDataSchema(identifier, struct_type.fromDDL(column_list(current + missing)))
                self.refresh(table)
        view_definition.create_view(self, schema)
        self._write_lake_format(schema.table)
        self._meta_revisions[schema.table] = META_REVISION

    def _write_lake_format(self, table: str) -> None:
        self.storage.write_json(self.paths(table).lake_format, {"format": LAKE_FORMAT, "meta": META_REVISION},
                                overwrite=True)

    def require(self, table: str) -> TableSchema:
        schema = self.schema(table)
        if schema is None:
            raise UnknownTable(table, self.tables())
        return schema

    def save_schema(self, schema: TableSchema) -> None:
        self._schema_state(schema.table).write(schema.version, schema.to_json())

    # -- tables ----------------------------------------------------------------------------------
    def _statements(self, schema: TableSchema) -> dict[str, tuple[str, dict]]:
        """(template, context) of each metastore object of a table: base, increments, changes, view."""
        paths = self.paths(schema.table)
        properties = self._schema_properties(schema)
        return {
            "base": ("create_table.sql.j2", {
                "table": base_table(schema.table),
                "columns": schema.columns + list(META_COLUMNS) + list(BASE_EXTRA),
                "partitions": [BASE_PARTITION],
                "location": paths.base,
                "properties": {**properties, VERSION_PROPERTY: "0"},
            }),
            "increments": ("create_table.sql.j2", {
                "table": increments_table(schema.table),
                "columns": schema.columns + list(META_COLUMNS),
                "partitions": list(INCREMENT_PARTITIONS),
                "location": paths.increments,
                "properties": properties,
            }),
            "changes": ("create_table.sql.j2", {
                "table": changes_table(schema.table),
                "columns": change_columns(schema),
                "partitions": [CHANGE_PARTITION],
                "location": paths.changes_root,
                "properties": properties,
            }),
            "view": (view_definition.TEMPLATE, view_definition.view_context(schema, self.database)),
        }

    def ddl(self, schema: TableSchema) -> list[tuple[str, str]]:
        """(template, SQL) of every statement that creates a table's metastore objects, parse-checked."""
        return [
            (template, sql.render_checked(template, database=self.database, **context))
            for template, context in self._statements(schema).values()
        ]

    def create(self, schema: TableSchema) -> None:
        """Create `<t>_base`, `<t>_increments`, `<t>_changes` and the view `<t>` for a new table."""
        self.ensure_database()
        for template, statement in self.ddl(schema):
            self.spark.sql(statement)
            if template == view_definition.TEMPLATE:
                view_definition.record_view(self, schema.table, statement)
        if self.config.table(schema.table).row_history:
            view_definition.create_view(self, schema)  # and `<t>_history` with it
        # before the schema, which makes the table exist for every reader
        self._write_lake_format(schema.table)
        self.save_schema(schema)

    def widen(self, schema: TableSchema) -> None:
        """Apply safe type widenings: the tables' data schemas change in the metastore, files stay as written.

        Spark's ALTER TABLE cannot change a column's type, so this goes through the session catalog;
        parquet files written with the narrower type still read correctly (int → bigint, float → double,
        decimal precision up).
        """
        session_catalog = self._session_catalog()
        struct_type = jvm_class(self.spark, "org.apache.spark.sql.types.StructType")
        types = dict(schema.columns)
        for table in self._row_tables(schema.table):
            identifier = self._identifier(table)
            current = session_catalog.getTableMetadata(identifier)
            # keep the metastore's column order (ADD COLUMNS appends after the meta columns): Hive checks
            # type compatibility position by position
            data = [(f.name(), types.get(f.name(), f.dataType().sql())) for f in current.dataSchema().fields()]
            session_catalog.alterTableDataSchema(identifier, struct_type.fromDDL(column_list(data)))
            self.set_properties(table, self._schema_properties(schema))
            self.refresh(table)
        self.create_changes_table(schema)
        self.save_schema(schema)

    def create_changes_table(self, schema: TableSchema) -> None:
        """`<t>_changes`; its struct columns follow the schema, so an evolution recreates it (metadata only)."""
        table = changes_table(schema.table)
        if self.spark.catalog.tableExists(qualified(self.database, table)):
            self.run("drop_table.sql.j2", table=table)  # external: the files stay
        template, context = self._statements(schema)["changes"]
        self.run(template, **context)
        # the published versions are the folders of committed versions (a compaction writes a version's feed
        # before its manifest and adds the partition after), looked at after the table is back: a version a
        # compaction published meanwhile (it holds the table's lock, not the land's) is either among them or added
        # by that compaction
        paths = self.paths(schema.table)
        kept = Manifests(self.storage, paths.manifests).versions()
        published = published_feed_versions(self.storage.list_names(paths.changes_root), kept)
        self.add_partitions(table, [([(CHANGE_PARTITION[0], v)], paths.changes(v)) for v in published])

    def _row_tables(self, table: str) -> list[str]:
        """The tables that hold the table's rows as columns: base, increments, and `<t>_events` once made."""
        events = events_table(table)
        kept = [events] if self.spark.catalog.tableExists(qualified(self.database, events)) else []
        return [base_table(table), increments_table(table), *kept]

    def add_columns(self, schema: TableSchema, added: list[tuple[str, str]]) -> None:
        for table in self._row_tables(schema.table):
            self.run("add_columns.sql.j2", table=table, columns=added)
            self.set_properties(table, self._schema_properties(schema))
        self.create_changes_table(schema)
        self.save_schema(schema)

    @staticmethod
    def _schema_properties(schema: TableSchema) -> dict[str, str]:
        return {
            "lakecompact.schema_version": str(schema.version),
            "lakecompact.schema_hash": schema.hash,
            "lakecompact.key": ",".join(schema.key),
            "lakecompact.topic": schema.topic,
        }

    # -- partitions ------------------------------------------------------------------------------
    # Partitions and properties go through Spark's session catalog, not SHOW and ALTER TABLE statements: a statement's
    # analysis and run ask the metastore for the table ~12 times around the one call that does the work.
    # Each does what its statement does: the same metastore call, and after a
    # change the table's cached relation dropped (no cached data to refresh: lakecompact caches no table's rows).
    def partitions(self, table: str) -> list[dict[str, str]]:
        jvm = self._jvm
        names = jvm.converters.asJava(self._session_catalog().listPartitionNames(self._identifier(table), jvm.none))
        return [dict(part.split("=", 1) for part in name.split("/")) for name in names]  # metadata: one per partition

    def add_partitions(self, table: str, partitions: list[tuple[list[tuple[str, object]], str]]) -> None:
        """Add partitions at their folders, in the table's storage format (ADD IF NOT EXISTS)."""
        if not partitions:
            return
        session_catalog, identifier, jvm = self._session_catalog(), self._identifier(table), self._jvm
        storage = session_catalog.getTableMetadata(identifier).storage()
        created = int(time.time() * 1000)
        added = [jvm.partition(jvm.string_map(spec), _replaced(storage, 0, jvm.some(jvm.uri(location))), created)
                 for spec, location in partitions]
        session_catalog.createPartitions(identifier, jvm.seq(added), True)
        session_catalog.invalidateCachedTable(identifier)

    def drop_partitions(self, table: str, specs: list[list[tuple[str, object]]]) -> None:
        """Drop partitions from the metastore (DROP IF EXISTS); their folders stay."""
        if not specs:
            return
        session_catalog, identifier, jvm = self._session_catalog(), self._identifier(table), self._jvm
        session_catalog.dropPartitions(identifier, jvm.seq([jvm.string_map(spec) for spec in specs]), True, False, False)
        session_catalog.invalidateCachedTable(identifier)

    def set_partition_locations(self, table: str, locations: list[tuple[list[tuple[str, object]], str]]) -> None:
        """Point existing partitions at new folders in one metastore call (Hive's alter_partitions: one
        transaction, so a reader sees all of them moved or none), instead of one ALTER TABLE per partition."""
        if not locations:
            return
        session_catalog, identifier, jvm = self._session_catalog(), self._identifier(table), self._jvm
        wanted = {_spec_key(spec): location for spec, location in locations}
        names = [name for name, _ in locations[0][0]]
        moved = []
        for partition in jvm.converters.asJava(session_catalog.listPartitions(identifier, jvm.none)):
            spec = partition.spec()
            location = wanted.pop(tuple((name, spec.apply(name)) for name in names), None)
            if location is not None:
                moved.append(_replaced(partition, 1, _replaced(partition.storage(), 0, jvm.some(jvm.uri(location)))))
        if wanted:
            raise LakecompactError(f"table {table}: expected partitions {sorted(wanted)} in the metastore, missing")
        session_catalog.alterPartitions(identifier, jvm.seq(moved))

    def properties(self, table: str) -> dict[str, str]:
        properties = self._session_catalog().getTableMetadata(self._identifier(table)).properties()
        return dict(self._jvm.converters.asJava(properties))

    def set_properties(self, table: str, properties: dict[str, str]) -> None:
        """Set table properties, keeping the others (SET TBLPROPERTIES; see the partition writes above)."""
        session_catalog, identifier, jvm = self._session_catalog(), self._identifier(table), self._jvm
        current = session_catalog.getTableRawMetadata(identifier)
        fields = [current.productElementName(i) for i in range(current.productArity())]
        merged = current.properties().concat(jvm.string_map(properties.items()))
        session_catalog.alterTable(_replaced(current, fields.index("properties"), merged))
        session_catalog.invalidateCachedTable(identifier)

    def refresh(self, *tables: str) -> None:
        for table in tables:
            self.spark.catalog.refreshTable(qualified(self.database, table))

    @functools.cached_property
    def _jvm(self) -> _Jvm:
        return _Jvm(self.spark)

    def _session_catalog(self):
        return self.spark._jsparkSession.sessionState().catalog()

    def _identifier(self, table: str):
        return jvm_class(self.spark, "org.apache.spark.sql.catalyst.TableIdentifier")(
            table, jvm_class(self.spark, "scala.Some")(self.database))

    def table(self, table: str) -> DataFrame:
        return self.spark.table(qualified(self.database, table))


class _Jvm:
    """The JVM classes and values that the session catalog's calls take (each looked up once, when first used)."""

    def __init__(self, spark: SparkSession):
        self.spark = spark

    def _class(self, name: str):
        return jvm_class(self.spark, name)

    @functools.cached_property
    def converters(self):
        return self._class("scala.jdk.javaapi.CollectionConverters")

    @functools.cached_property
    def none(self):
        return self._class("scala.Option").empty()

    @functools.cached_property
    def empty_map(self):
        return getattr(self._class("scala.collection.immutable.Map$"), "MODULE$").empty()

    def some(self, value):
        return self._class("scala.Some")(value)

    def uri(self, location: str):
        return self._class("org.apache.spark.sql.catalyst.catalog.CatalogUtils").stringToURI(location)

    def partition(self, spec, storage, created_ms: int):
        """A CatalogTablePartition as ALTER TABLE ADD PARTITION makes it: no parameters, never accessed, no stats."""
        return self._class("org.apache.spark.sql.catalyst.catalog.CatalogTablePartition")(
            spec, storage, self.empty_map, created_ms, -1, self.none)

    def string_map(self, pairs) -> object:
        """A Scala immutable Map[String, String] of (name, value) pairs (a partition spec, table properties)."""
        java = self._class("java.util.HashMap")()
        for name, value in pairs:
            java.put(name, str(value))
        return self.empty_map.concat(self.converters.asScala(java))

    def seq(self, items: list) -> object:
        java = self._class("java.util.ArrayList")()
        for item in items:
            java.add(item)
        return self.converters.asScala(java).toSeq()


def _spec_key(spec: list[tuple[str, object]]) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(value)) for name, value in spec)


def _replaced(product, index: int, value):
    """A copy of a Scala case class (a JVM object) with its field at `index` replaced: its fields are read
    back rather than listed, so the call holds across Spark versions that add fields at the end."""
    fields = [product.productElement(i) for i in range(product.productArity())]
    fields[index] = value
    return product.copy(*fields)
