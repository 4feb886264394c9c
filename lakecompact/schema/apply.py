"""Schema changes applied to a live table: added columns, widenings, refusals, and the hooks they fire."""

from __future__ import annotations

from lakecompact.config import Config
from lakecompact.errors import IncompatibleSchemaChange
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.connect import Field, schema_hash
from lakecompact.lake.model import TableSchema
from lakecompact.lake.view_definition import create_view
from lakecompact.report import say
from lakecompact.schema import evolution
from lakecompact.schema import hooks as hooks_module


def evolve(catalog: Catalog, config: Config, schema: TableSchema, fields: list[Field],
           key: tuple[str, ...] | None = None) -> TableSchema:
    """The table's schema after events with `fields` (and message key `key`) arrive.

    Added columns are added, widenings applied, dropped columns kept (they read as null); a key change
    or any other type change raises IncompatibleSchemaChange, and the table's schema stays as it was.
    Every change fires the configured hooks once, keyed by the hash of the source schema.
    """
    changes = evolution.diff(schema.fields, fields)
    source_hash = schema_hash([list(key or schema.key), [(f.name, f.schema) for f in fields]])
    if key is not None and tuple(key) and evolution.key_changed(schema.key, key):
        changes.append(evolution.Change(f"key ({','.join(schema.key)})", "incompatible", ",".join(schema.key), ",".join(key)))
    if not changes:
        return schema
    incompatible = [c for c in changes if c.change == "incompatible"]
    if incompatible:
        _fire(catalog, config, schema, schema.version, source_hash, changes)
        first = incompatible[0]
        raise IncompatibleSchemaChange(schema.table, first.column, first.old_type or "-", first.new_type or "-")
    by_name = {f.name: f for f in fields}
    widened = {c.column for c in changes if c.change == "widened"}
    added = [by_name[c.column] for c in changes if c.change == "added"]
    if not widened and not added:
        _fire(catalog, config, schema, schema.version, source_hash, changes)  # only dropped columns
        return schema
    merged_fields = tuple(by_name[f.name] if f.name in widened else f for f in schema.fields) + tuple(added)
    merged = TableSchema(schema.table, schema.topic, merged_fields, schema.key, schema.version + 1)
    if added:
        catalog.add_columns(merged, [(f.name, f.table_type) for f in added])
    if widened:
        catalog.widen(merged)
    create_view(catalog, merged)
    say(
        f"  {config.database}.{schema.table}: schema v{schema.version} -> v{merged.version}: "
        + ", ".join(f"{c.change} {c.column}" + (f" {c.old_type}->{c.new_type}" if c.change == "widened" else "")
                    for c in changes)
    )
    _fire(catalog, config, schema, merged.version, source_hash, changes)
    return merged


def _fire(catalog: Catalog, config: Config, schema: TableSchema, new_version: int, source_hash: str, changes) -> None:
    body = hooks_module.payload(schema.table, config.database, schema.version, new_version, source_hash, changes)
    pending = catalog.paths(schema.table).schema_change(source_hash)
    if not catalog.storage.exists(pending):
        catalog.storage.write_json(pending, body, overwrite=True)
    retry_hooks(catalog, config, schema.table)


def retry_hooks(catalog: Catalog, config: Config, table: str) -> None:
    """Fire every recorded change's hooks that have not fired yet (a failed hook is retried each run)."""
    hooks = [*config.hooks, *config.table(table).hooks]
    if not hooks:
        return
    paths = catalog.paths(table)
    for name in catalog.storage.list_names(paths.schema_changes):
        body = catalog.storage.read_json(f"{paths.schema_changes}/{name}")
        hooks_module.fire(hooks, body, catalog.storage, path=paths.hooks_fired)
