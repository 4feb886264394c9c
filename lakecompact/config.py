"""Configuration: TOML into typed, frozen dataclasses, validated once when loaded."""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lakecompact.errors import ConfigError
from lakecompact.hooks import HookConfig
from lakecompact.schema.registry import RegistryConfig

DeleteMode = Literal["soft", "hard"]
NameCase = Literal["lower", "upper", "preserve"]
SourceKind = Literal["files", "kafka"]
ChangeFeedMode = Literal["net", "events", "off"]

TOAST_PLACEHOLDER = "__debezium_unavailable_value"


@dataclass(frozen=True)
class NamingConfig:
    """How a topic name becomes a table name."""

    prefix: str = ""
    regexp: str = ""
    replacement: str = ""
    case: NameCase = "lower"
    drop_server: bool = True


@dataclass(frozen=True)
class TableConfig:
    """Per-table settings; the [defaults] section supplies the values not set here."""

    key: tuple[str, ...] | None = None
    delete_mode: DeleteMode = "soft"
    tombstone_retention_hours: float = 168.0
    buckets: int = 8
    keep_versions: int = 3
    toast_placeholder: str = TOAST_PLACEHOLDER
    change_feed: ChangeFeedMode = "net"
    hooks: tuple[HookConfig, ...] = ()
    topic: str | None = None


@dataclass(frozen=True)
class SourceConfig:
    kind: SourceKind = "files"
    paths: tuple[str, ...] = ()
    bootstrap_servers: str = ""
    topics: tuple[str, ...] = ()
    topic_pattern: str = ""
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_events_per_batch: int = 0
    kafka_options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetastoreConfig:
    """No section: an embedded metastore kept under the warehouse."""

    uri: str = ""
    jdbc_url: str = ""
    jdbc_driver: str = ""
    jdbc_user: str = ""
    jdbc_password: str = ""


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    app_name: str = "lakecompact"
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    warehouse: str
    database: str = "lake"
    source: SourceConfig = field(default_factory=SourceConfig)
    metastore: MetastoreConfig = field(default_factory=MetastoreConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    naming: NamingConfig = field(default_factory=NamingConfig)
    defaults: TableConfig = field(default_factory=TableConfig)
    tables: dict[str, TableConfig] = field(default_factory=dict)
    registry: RegistryConfig | None = None
    hooks: tuple[HookConfig, ...] = ()

    def table(self, name: str) -> TableConfig:
        return self.tables.get(name, self.defaults)


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def load(path: str | Path) -> Config:
    """Read and validate a TOML config file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError("--config", "an existing TOML file", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "valid TOML", hint=str(exc)) from None
    return from_dict(raw)


def _hooks(raw: Any, where: str) -> list[HookConfig]:
    """`[[hooks]]` arrays: each a table of HookConfig settings."""
    items = _expect(raw, list, where, "an array of [[hooks]] tables")
    built = []
    for i, item in enumerate(items):
        item = _expect(item, dict, f"{where}[{i}]", "a table with kind and target")
        known = {f.name for f in dataclasses.fields(HookConfig)}
        unknown = sorted(set(item) - known)
        if unknown:
            raise ConfigError(f"{where}[{i}].{unknown[0]}", "a known hook setting", hint=f"known keys: {', '.join(sorted(known))}")
        if "kind" not in item or "target" not in item:
            raise ConfigError(f"{where}[{i}]", "kind and target")
        built.append(HookConfig(**item))
    return built


def from_dict(raw: dict[str, Any]) -> Config:
    raw = dict(raw)
    if "registry" in raw:
        raw["registry"] = RegistryConfig.from_dict(raw["registry"])
    if "hooks" in raw:
        raw["hooks"] = _hooks(raw["hooks"], "hooks")
    defaults_raw = dict(_expect(raw.get("defaults", {}), dict, "defaults", "a table of table settings"))
    if "hooks" in defaults_raw:
        defaults_raw["hooks"] = _hooks(defaults_raw["hooks"], "defaults.hooks")
    defaults = _build(TableConfig, defaults_raw, "defaults")
    tables_raw = _expect(raw.get("tables", {}), dict, "tables", "a table of [tables.<name>] sections")
    tables = {}
    for name, section in tables_raw.items():
        if not _IDENTIFIER.match(name):
            raise ConfigError(f"tables.{name}", "a table name of letters, digits and _", name)
        section = dict(_expect(section, dict, f"tables.{name}", "a table of table settings"))
        if "hooks" in section:
            section["hooks"] = [*defaults.hooks, *_hooks(section["hooks"], f"tables.{name}.hooks")]
        merged = {**{k: v for k, v in _raw_of(defaults).items()}, **section}
        tables[name.lower()] = _build(TableConfig, merged, f"tables.{name}")
    config = _build(Config, {**raw, "defaults": defaults, "tables": tables}, "")
    _validate(config)
    return config


def _raw_of(table: TableConfig) -> dict[str, Any]:
    values = {f.name: getattr(table, f.name) for f in dataclasses.fields(table) if f.name not in ("topic", "key")}
    values["hooks"] = list(table.hooks)
    return values


def _validate(config: Config) -> None:
    if not config.warehouse:
        raise ConfigError("warehouse", "a path or URI for the lake's root")
    if "://" not in config.warehouse and not config.warehouse.startswith("/"):
        raise ConfigError("warehouse", "an absolute path or a URI such as s3a://bucket/lake", config.warehouse)
    if not _IDENTIFIER.match(config.database):
        raise ConfigError("database", "a database name of letters, digits and _", config.database)
    source = config.source
    if source.kind == "files" and not source.paths:
        raise ConfigError("source.paths", "a list of file paths or globs of kcat -J output")
    if source.kind == "kafka" and not source.bootstrap_servers:
        raise ConfigError("source.bootstrap_servers", "host:port[,host:port]")
    if source.kind == "kafka" and not (source.topics or source.topic_pattern):
        raise ConfigError("source.topics", "a list of topics, or source.topic_pattern")
    for name, table in [("defaults", config.defaults), *((f"tables.{n}", t) for n, t in config.tables.items())]:
        if table.buckets < 1:
            raise ConfigError(f"{name}.buckets", "a whole number of at least 1", table.buckets)
        if table.keep_versions < 1:
            raise ConfigError(f"{name}.keep_versions", "a whole number of at least 1", table.keep_versions)
        if table.tombstone_retention_hours < 0:
            raise ConfigError(f"{name}.tombstone_retention_hours", "a number of hours >= 0")
        for column in table.key or ():
            if not _IDENTIFIER.match(column):
                raise ConfigError(f"{name}.key", "a list of column names", list(table.key or ()))
    if config.naming.regexp:
        try:
            re.compile(config.naming.regexp)
        except re.error as exc:
            raise ConfigError("naming.regexp", "a valid regular expression", config.naming.regexp, hint=str(exc))


def _build(cls: type, raw: Any, where: str) -> Any:
    if dataclasses.is_dataclass(raw):
        return raw
    raw = _expect(raw, dict, where or "config", "a table of settings")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        path = f"{where}.{key}" if where else key
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(fields)}"
            raise ConfigError(path, "a known setting", key, hint=hint)
        values[key] = _coerce(hints[key], value, path)
    missing = [
        name
        for name, f in fields.items()
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where + '.' if where else ''}{missing[0]}", "a value (this setting is required)")
    return cls(**values)


def _coerce(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, path)
    if origin is typing.Union or (origin is not None and type(None) in args):
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(path, "one of " + ", ".join(repr(a) for a in args), value)
        return value
    if origin is tuple:
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, str):
            raise ConfigError(path, "a list of strings", value, hint='write ["a", "b"]')
        value = _expect(value, list, path, "a list")
        return tuple(_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        value = _expect(value, dict, path, "a table of key = value")
        if args and args[0] is str and args[1] is TableConfig:
            return value
        return {str(k): str(v) for k, v in value.items()}
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, "a number", value)
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, "a whole number", value)
        return value
    if hint is bool:
        return _expect(value, bool, path, "true or false")
    if hint is str:
        return _expect(value, str, path, "a string")
    return value


def _expect(value: Any, kind: type, path: str, expected: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(path, expected, value)
    return value
