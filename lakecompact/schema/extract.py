"""`lakecompact schema`: table schemas from the registry (or a local .avsc), as Hive DDL or applied.

The registry's Avro schema of the Debezium envelope becomes a Connect schema (schema/avro.py), whose
`after` record becomes the table's columns (lake/connect.py), rendered as DDL from sql_templates/.
"""

from __future__ import annotations

import json
from pathlib import Path

from lakecompact.config import Config
from lakecompact.errors import InputFileError, LakecompactError
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.connect import row_fields
from lakecompact.lake.model import TableSchema
from lakecompact.naming import table_for_topic
from lakecompact.report import say, warn
from lakecompact.schema import apply, avro, evolution
from lakecompact.schema.registry import Registry, SchemaNotFound


def from_avro(value_schema, key_schema, *, table: str, topic: str, key: tuple[str, ...] | None = None) -> TableSchema:
    row = avro.envelope_row_schema(value_schema)
    fields = tuple(row_fields(row))
    key_columns = key if key is not None else tuple(avro.key_fields(key_schema))
    if not key_columns and key is None:
        key_columns = ()
    return TableSchema(table, topic, fields, tuple(key_columns))


def from_registry(registry: Registry, topic: str, config: Config) -> TableSchema:
    table = table_for_topic(topic, config)
    value = registry.schema(registry.subject(topic, "value")).schema
    try:
        key_schema = registry.schema(registry.subject(topic, "key")).schema
    except SchemaNotFound:
        key_schema = None  # no key subject: a table without a primary key, append-only
    return from_avro(value, key_schema, table=table, topic=topic, key=config.table(table).key)


def registry_topics(registry: Registry, config: Config) -> list[str]:
    if config.source.topics:
        return list(config.source.topics)
    import re

    pattern = re.compile(config.source.topic_pattern) if config.source.topic_pattern else None
    topics = [s[: -len("-value")] for s in registry.subjects() if s.endswith("-value")]
    return sorted(t for t in topics if pattern is None or pattern.fullmatch(t))


def _read_avsc(option: str, path: str):
    expected = "an Avro schema file (JSON)"
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputFileError(option, path, expected, "there is no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputFileError(option, path, expected, f"it cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(option, path, expected, f"it is not JSON ({exc})") from None


def check_avsc_arguments(avsc: str, key_avsc: str | None, table: str | None) -> tuple[dict, dict | None]:
    """The value and key schemas of `schema --avsc` (key None without --key-avsc), once --table is given and the
    files are there and JSON: what `run` reads, checked by the command line before a JVM starts."""
    if not table:
        raise LakecompactError("schema --avsc: expected --table NAME for the table the schema describes")
    return _read_avsc("--avsc", avsc), _read_avsc("--key-avsc", key_avsc) if key_avsc else None


def run(spark, config: Config, *, avsc: str | None, key_avsc: str | None, table: str | None,
        topic: str | None, dry_run: bool) -> list[TableSchema]:
    """Create (or evolve) the tables, or with dry_run print the DDL. `spark` may be None for a dry run."""
    if avsc:
        value, key_schema = check_avsc_arguments(avsc, key_avsc, table)
        if key_schema is None and config.table(table.lower()).key is None:
            warn(f"schema {table}: no --key-avsc and no tables.{table.lower()}.key: the table has no key, so it is "
                 "append-only (every event a new row, deletes and updates do not replace rows)")
        schemas = [from_avro(value, key_schema, table=table.lower(), topic=topic or table, key=config.table(table.lower()).key)]
    else:
        if config.registry is None:
            raise LakecompactError(
                "schema: expected a [registry] section (url = ...) or --avsc FILE --table T; without a registry, "
                "`lakecompact land` takes each table's schema from the events' embedded schema"
            )
        registry = Registry(config.registry)
        topics = [topic] if topic else registry_topics(registry, config)
        schemas = [from_registry(registry, t, config) for t in topics]
    catalog = Catalog(spark, config)
    for schema in schemas:
        existing = None if dry_run and spark is None else catalog.schema(schema.table)
        if existing is None:
            if dry_run:
                say(f"-- {config.database}.{schema.table}: key {list(schema.key) or 'none (append-only)'}, "
                    f"{len(schema.fields)} columns, from {schema.topic}")
                for _, statement in catalog.ddl(schema):
                    print(statement + ";\n")
            else:
                catalog.create(schema)
                say(f"schema: created {config.database}.{schema.table} ({len(schema.fields)} columns)")
            continue
        changes = evolution.diff(existing.fields, schema.fields)
        if dry_run:
            say(f"-- {config.database}.{schema.table}: " + (", ".join(f"{c.change} {c.column}" for c in changes) or "no change"))
            continue
        apply.evolve(catalog, config, existing, list(schema.fields), schema.key or None)
    return schemas
