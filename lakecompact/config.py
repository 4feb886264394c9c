"""Configuration: TOML into typed, frozen dataclasses, validated once when loaded.

Every section is a frozen dataclass; `_build` is the one reader (types, unknown keys), and each section's
`validate` holds its value rules: Config's checks its sections in turn, and a section built directly
(HookConfig(...), RegistryConfig(...), S3Config(...)) checks itself.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
import string
import tomllib
import types
import typing
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lakecompact.errors import ConfigError, InputFileError

DeleteMode = Literal["soft", "hard"]
NameCase = Literal["lower", "upper", "preserve"]
SourceKind = Literal["files", "kafka"]
ChangeFeedMode = Literal["net", "events", "off"]
HookKind = Literal["python", "command", "http"]
HOOK_KINDS: tuple[str, ...] = typing.get_args(HookKind)
S3Committer = Literal["magic", "directory", "partitioned"]
S3_COMMITTERS: tuple[str, ...] = typing.get_args(S3Committer)
# [spark.conf] settings that name a shared metastore themselves (a Hive, JDBC or AWS Glue one)
METASTORE_SPARK_KEYS = (
    "spark.hadoop.hive.metastore.uris",
    "spark.hive.metastore.uris",
    "spark.hadoop.javax.jdo.option.ConnectionURL",
    "spark.hadoop.hive.metastore.client.factory.class",
)

TOAST_PLACEHOLDER = "__debezium_unavailable_value"
# a keyed table's hash buckets are numbered 0 ... MAX_BUCKETS-1; lake/partitions.py numbers the deltas above them
MAX_BUCKETS = 999_999

# Confluent's subject naming strategies as format strings over {topic}, {kind} and {record}
SUBJECT_STRATEGIES = {
    "topic": "{topic}-{kind}",  # TopicNameStrategy (the default)
    "record": "{record}",  # RecordNameStrategy
    "topic_record": "{topic}-{record}",  # TopicRecordNameStrategy
}
_SUBJECT_PLACEHOLDERS = ("topic", "kind", "record")
RUN_TRIGGERS = ("compact_after_batches", "compact_after_events", "compact_after_seconds", "compact_every_seconds")


@dataclass(frozen=True)
class HookConfig:
    """One schema-change hook. `target`: `package.module:function`, a shell command line, or an http(s) URL.

    `retries` and `backoff_seconds` apply to HTTP hooks within one firing; every kind is tried again
    on the next run after a failure. Header values may name environment variables (`${TOKEN}`).
    `name` identifies the hook in the state file (default `<kind>:<target>`; an HTTP target as `label` shows it
    and a digest of the whole URL, `http:<scheme://host:port>/…#<digest>`).
    """

    kind: HookKind
    target: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never printed
    timeout_seconds: float = 10.0
    retries: int = 3
    backoff_seconds: float = 0.5
    name: str = ""

    def __post_init__(self) -> None:
        self.validate(f"hooks.{self.name or self.kind}")

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(self.kind in HOOK_KINDS, f"{at}kind", f"one of {', '.join(HOOK_KINDS)}", self.kind)
        target = self.target
        _require(isinstance(target, str) and bool(target.strip()), f"{at}target", "a non-empty string", target)
        if self.kind == "python":
            module, _, function = target.partition(":")
            _require(bool(module) and function.isidentifier(), f"{at}target", "a Python callable as module:function", target)
        if self.kind == "http":
            _require(target.startswith(("http://", "https://")), f"{at}target", "an http:// or https:// URL", target)
        headers = self.headers
        _require(isinstance(headers, Mapping) and all(isinstance(v, str) for v in headers.values()),
                 f"{at}headers", "a table of string values (the values are secrets: not shown)")
        _require(_is_number(self.timeout_seconds) and self.timeout_seconds > 0,
                 f"{at}timeout_seconds", "a number of seconds > 0", self.timeout_seconds)
        _require(_is_count(self.retries), f"{at}retries", "a whole number >= 0", self.retries)
        _require(_is_number(self.backoff_seconds) and self.backoff_seconds >= 0,
                 f"{at}backoff_seconds", "a number of seconds >= 0", self.backoff_seconds)

    @property
    def id(self) -> str:
        if self.kind == "http" and not self.name:
            # a webhook URL's path or query often holds its secret: the state file keeps a digest of it, not the URL
            return f"{self.label}#{hashlib.sha256(self.target.encode()).hexdigest()[:16]}"
        return self.name or f"{self.kind}:{self.target}"

    @property
    def label(self) -> str:
        """The hook as messages name it: its `name`, or kind and target, an HTTP target without its path and query
        (a webhook URL often holds its secret there)."""
        return self.name or (f"http:{url_without_path(self.target)}" if self.kind == "http" else self.id)


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_FILE_URI = re.compile(r"file:(//[^/]*)?", re.IGNORECASE)  # file:/a, file:///a, file://localhost/a


def scheme(location: str) -> str:
    """The URI scheme of a warehouse or source path, lower-cased ("" for a plain path)."""
    found = _SCHEME.match(location)
    return found[1].lower() if found else ""


def is_local(location: str) -> bool:
    """Whether a warehouse or source path is on this machine's disk: a plain path or a file: URI (file:/a,
    file:///a). Any other scheme (s3a://, hdfs://, gs://, abfs://) is a remote file system."""
    return scheme(location) in ("", "file")


def local_path(location: str) -> Path:
    """The path on this machine's disk of a plain path or a file: URI."""
    return Path(_FILE_URI.sub("", location, count=1) if scheme(location) == "file" else location)


def url_without_path(url: str) -> str:
    """scheme://host[:port]/… : what a message may show of a URL (no user, password, path or query)."""
    parts = urllib.parse.urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}/…"


@dataclass(frozen=True)
class RegistryConfig:
    """How to reach a Confluent-compatible schema registry. `url` is the API root (for Apicurio:
    `http://host:8080/apis/ccompat/v7`).

    `verify` is True/False or a CA bundle path; `cert` a client certificate path (with the key in it, or
    in `key`). `retries` is the number of retries after the first attempt. `subject_format` is one of
    `topic`, `record`, `topic_record` or a format string over {topic}, {kind} ("value"/"key"), {record}.
    """

    url: str
    username: str = ""
    password: str = field(default="", repr=False)  # a secret: never printed
    verify: bool | str = True
    cert: str = ""
    timeout_seconds: float = 10.0
    retries: int = 5
    backoff_seconds: float = 0.2
    subject_format: str = "{topic}-{kind}"
    key: str = ""
    max_backoff_seconds: float = 10.0

    def __post_init__(self) -> None:
        self.validate("registry")

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(isinstance(self.url, str) and self.url.startswith(("http://", "https://")),
                 f"{at}url", "an http:// or https:// URL", self.url)
        _require(_is_count(self.retries), f"{at}retries", "a whole number >= 0", self.retries)
        for name in ("timeout_seconds", "backoff_seconds", "max_backoff_seconds"):
            value = getattr(self, name)
            _require(_is_number(value) and value >= 0, f"{at}{name}", "a number of seconds >= 0", value)
        _require(self.timeout_seconds > 0, f"{at}timeout_seconds", "a number of seconds > 0", self.timeout_seconds)
        _require(isinstance(self.verify, (bool, str)) and self.verify != "",
                 f"{at}verify", "true, false or the path of a CA bundle", self.verify)
        _require(not self.key or bool(self.cert), f"{at}cert", "a client certificate path when registry.key is set", self.cert)
        _require(not self.password or bool(self.username), f"{at}username",
                 "a user name when registry.password is set", self.username)
        _check_subject_format(self.subject_pattern, f"{at}subject_format")

    @classmethod
    def from_dict(cls, raw: Any, where: str = "registry") -> RegistryConfig:
        """From a TOML table such as `[registry]`; unknown keys are an error that names the known ones."""
        return _build(cls, raw, where)

    @property
    def subject_pattern(self) -> str:
        return SUBJECT_STRATEGIES.get(self.subject_format, self.subject_format)


@dataclass(frozen=True)
class S3Config:
    """How Hadoop's s3a client reaches S3 or an S3-compatible store (MinIO, Ceph): the `spark.hadoop.fs.s3a.*`
    settings, under the user's [spark.conf]. `endpoint` empty: AWS's own. No keys: the s3a client's own
    credential chain (environment, instance role). `committer`: the S3A committer of an s3a:// warehouse's writes.
    """

    endpoint: str = ""
    region: str = ""
    path_style_access: bool = False
    access_key: str = field(default="", repr=False)  # secrets: never printed
    secret_key: str = field(default="", repr=False)
    session_token: str = field(default="", repr=False)
    committer: S3Committer = "magic"

    def __post_init__(self) -> None:
        self.validate("s3")

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        endpoint = self.endpoint
        parts = _url_parts(endpoint)
        _require(endpoint == "" or (parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname)
                                    and parts.username is None),
                 f"{at}endpoint", "an http:// or https:// URL without a user or password (empty: AWS's own)",
                 endpoint if "@" not in str(endpoint) else None)  # a URL with a password in it is not echoed
        _require(isinstance(self.region, str), f"{at}region", "a string such as \"eu-west-1\"", self.region)
        _require(isinstance(self.path_style_access, bool), f"{at}path_style_access", "true or false",
                 self.path_style_access)
        for name in ("access_key", "secret_key", "session_token"):  # the value is never shown
            _require(isinstance(getattr(self, name), str), f"{at}{name}", "a string (the value is a secret: not shown)")
        _require(bool(self.access_key) == bool(self.secret_key), f"{at}secret_key",
                 f"both {at}access_key and {at}secret_key, or neither (the s3a client's own credential chain)")
        _require(not self.session_token or bool(self.access_key), f"{at}access_key",
                 f"{at}access_key and {at}secret_key with {at}session_token (temporary credentials)")
        _require(self.committer in S3_COMMITTERS, f"{at}committer", f"one of {', '.join(S3_COMMITTERS)}",
                 self.committer)


@dataclass(frozen=True)
class NamingConfig:
    """How a topic name becomes a table name."""

    prefix: str = ""
    regexp: str = ""
    replacement: str = ""
    case: NameCase = "lower"
    drop_server: bool = True

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        if self.regexp:
            try:
                re.compile(self.regexp)
            except re.error as exc:
                raise ConfigError(f"{at}regexp", "a valid regular expression", self.regexp, hint=str(exc)) from None


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
    merge_on_read: bool = True
    delta_share: float = 0.25  # merge-on-read: a bucket is rewritten, its delta folded in, past this share of its rows
    hooks: tuple[HookConfig, ...] = ()
    topic: str | None = None
    source_table: str | None = None  # `verify`: the table in the source database (default: from the topic)
    # `<t>_history`: every version of every key by source time (docs/design.md "Row history"); not
    # `lakecompact history`, which lists the base versions compactions wrote
    row_history: bool = False
    row_history_days: float = 0.0  # versions that ended this long before the latest source time are dropped; 0: kept

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(1 <= self.buckets <= MAX_BUCKETS, f"{at}buckets", f"a whole number from 1 to {MAX_BUCKETS}",
                 self.buckets)
        _require(self.keep_versions >= 1, f"{at}keep_versions", "a whole number of at least 1", self.keep_versions)
        _require(self.tombstone_retention_hours >= 0, f"{at}tombstone_retention_hours", "a number of hours >= 0")
        _require(_is_number(self.delta_share) and self.delta_share > 0, f"{at}delta_share",
                 "a number > 0 (the share of a bucket's rows its delta may reach)", self.delta_share)
        for column in self.key or ():
            _require(bool(_IDENTIFIER.match(column)), f"{at}key", "a list of column names", list(self.key or ()))
        _require(self.source_table is None or bool(_SOURCE_TABLE.match(self.source_table)), f"{at}source_table",
                 "a table name of the source database, as schema.table or table", self.source_table)
        _require(_is_number(self.row_history_days) and self.row_history_days >= 0, f"{at}row_history_days",
                 "a number of days >= 0 (0: every version kept)", self.row_history_days)
        _require(not (self.row_history and self.key == ()), f"{at}row_history",
                 "false for a table without a key (append-only: every event is a row, there are no versions)", True)


@dataclass(frozen=True)
class SourceConfig:
    kind: SourceKind = "files"
    paths: tuple[str, ...] = ()
    bootstrap_servers: str = ""
    topics: tuple[str, ...] = ()
    topic_pattern: str = ""
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_events_per_batch: int = 0
    connect_timeout_seconds: float = 120.0  # how long Kafka brokers that do not answer are waited for
    kafka_options: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets (sasl.jaas.config)

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        if self.kind == "files":
            _require(bool(self.paths), f"{at}paths", "a list of file paths or globs of kcat -J output")
        else:
            _require(bool(self.bootstrap_servers), f"{at}bootstrap_servers", "host:port[,host:port]")
            _require(bool(self.topics or self.topic_pattern), f"{at}topics", "a list of topics, or source.topic_pattern")
            _require(_is_number(self.connect_timeout_seconds) and self.connect_timeout_seconds > 0,
                     f"{at}connect_timeout_seconds", "a number of seconds > 0", self.connect_timeout_seconds)


@dataclass(frozen=True)
class MetastoreConfig:
    """No section: an embedded metastore kept under the warehouse."""

    uri: str = ""
    connect_timeout_seconds: float = 120.0  # how long a thrift metastore that does not answer is waited for
    jdbc_url: str = ""
    jdbc_password: str = field(default="", repr=False)  # a secret: never printed
    jdbc_driver: str = ""
    jdbc_user: str = ""

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        uris = self.uri.split(",") if self.uri else []
        _require(all(u.startswith("thrift://") and u[len("thrift://"):] for u in uris), f"{at}uri",
                 "thrift://host:port (several: comma-separated)", self.uri)
        _require(_is_number(self.connect_timeout_seconds) and self.connect_timeout_seconds > 0,
                 f"{at}connect_timeout_seconds", "a number of seconds > 0", self.connect_timeout_seconds)


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    app_name: str = "lakecompact"
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunConfig:
    """`lakecompact run`: land every `interval_seconds`, and compact a table as soon as one of its triggers
    holds (a trigger set to 0 is off). Metrics are served on `metrics_host:metrics_port` (port 0: not served)."""

    interval_seconds: float = 60.0
    compact_after_batches: int = 12  # pending batches
    compact_after_events: int = 1_000_000  # pending events
    compact_after_seconds: float = 3600.0  # age of the oldest pending batch
    compact_every_seconds: float = 0.0  # a fixed schedule: this long after the table's last compaction
    parallel_compactions: int = 2
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    status_file: str = ""  # default: <warehouse>/<database>/_state/run-status.json on a local warehouse

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(self.interval_seconds > 0, f"{at}interval_seconds", "a number of seconds > 0", self.interval_seconds)
        for name in RUN_TRIGGERS:
            _require(getattr(self, name) >= 0, f"{at}{name}", "a number >= 0 (0: this trigger is off)", getattr(self, name))
        _require(any(getattr(self, name) for name in RUN_TRIGGERS), f"{at}compact_after_batches",
                 f"at least one trigger above 0 ({', '.join(RUN_TRIGGERS)}): otherwise nothing is ever compacted")
        _require(self.parallel_compactions >= 1, f"{at}parallel_compactions", "a whole number of at least 1",
                 self.parallel_compactions)
        _require(0 <= self.metrics_port <= 65535, f"{at}metrics_port", "a TCP port (0: no metrics endpoint)",
                 self.metrics_port)
        _require(bool(self.metrics_host), f"{at}metrics_host", "a host name or address to listen on")


@dataclass(frozen=True)
class LocksConfig:
    """The lock files of the lander and of each table's compactor (docs/production.md "Locks")."""

    lease_seconds: float = 300.0  # a holder on another host that has not renewed its lock for this long is gone

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(_is_number(self.lease_seconds) and self.lease_seconds >= 10, f"{at}lease_seconds",
                 "a number of seconds >= 10 (a holder renews its lease every quarter of it)", self.lease_seconds)


JDBC_SCHEMES = ("postgresql", "mysql", "mariadb")


@dataclass(frozen=True)
class VerifyConfig:
    """How `lakecompact verify` reads the source database: Spark's JDBC source with the database's driver on the
    class path (docs/verify.md). The password is `password`, or the environment variable named by `password_env`."""

    jdbc_url: str
    user: str = ""
    password: str = field(default="", repr=False)  # a secret: never printed
    password_env: str = ""
    read_partitions: int = 4  # key ranges read side by side
    buckets: int = 256  # groups of keys whose counts and checksums are compared first
    fetch_size: int = 10_000
    shown: int = 10  # differing keys printed per kind (all of them go to <t>_verify)
    # how long verify waits for the lake to land past the source position it read at, when something differs
    # (0: no wait, and no log position read: every difference counts)
    settle_seconds: int = 120
    # `repair`: the connector's signalling table (its signal.data.collection, as the source names it)
    signal_table: str = ""

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        at = f"{where}." if where else ""
        _require(self.jdbc_kind in JDBC_SCHEMES, f"{at}jdbc_url",
                 "jdbc:postgresql://host:port/db, jdbc:mysql://… or jdbc:mariadb://…", self.jdbc_url)
        for name in ("read_partitions", "buckets", "fetch_size"):
            _require(_is_count(getattr(self, name)) and getattr(self, name) >= 1, f"{at}{name}",
                     "a whole number of at least 1", getattr(self, name))
        for name in ("shown", "settle_seconds"):
            _require(_is_count(getattr(self, name)), f"{at}{name}", "a whole number >= 0", getattr(self, name))
        _require(not (self.password and self.password_env), f"{at}password_env",
                 "either password or password_env, not both")
        _require(not self.signal_table or bool(_SOURCE_TABLE.match(self.signal_table)), f"{at}signal_table",
                 "the connector's signalling table, as schema.table or database.table", self.signal_table)

    @property
    def jdbc_kind(self) -> str:
        """postgresql, mysql or mariadb: the scheme after `jdbc:`."""
        return self.jdbc_url.split(":")[1] if self.jdbc_url.startswith("jdbc:") and self.jdbc_url.count(":") > 1 else ""


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
    s3: S3Config | None = None
    hooks: tuple[HookConfig, ...] = ()
    run: RunConfig = field(default_factory=RunConfig)
    locks: LocksConfig = field(default_factory=LocksConfig)
    verify: VerifyConfig | None = None

    def table(self, name: str) -> TableConfig:
        return self.tables.get(name, self.defaults)

    def validate(self, where: str) -> None:
        """The rules this section's values meet, each named by where it is set (`where`, e.g. "tables.orders")."""
        _require(bool(self.warehouse), "warehouse", "a path or URI for the lake's root")
        _require(local_path(self.warehouse).is_absolute() if is_local(self.warehouse) else "://" in self.warehouse,
                 "warehouse", "an absolute path or a URI such as s3a://bucket/lake", self.warehouse)
        _require(bool(_IDENTIFIER.match(self.database)), "database", "a database name of letters, digits and _", self.database)
        self.source.validate("source")
        self.metastore.validate("metastore")
        _check_shared_metastore(self)
        self.naming.validate("naming")
        self.defaults.validate("defaults")
        self.run.validate("run")
        self.locks.validate("locks")
        if self.verify is not None:
            self.verify.validate("verify")
        for name, table in self.tables.items():
            table.validate(f"tables.{name}")


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SOURCE_TABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$")


_CONFIG_FILE = "a TOML file (see docs/configuration.md)"


def load(path: str | Path) -> Config:
    """Read and validate a TOML config file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:  # a file named on the command line that is not there: exit 5, as for schema --avsc
        raise InputFileError("--config", str(path), _CONFIG_FILE, "there is no such file") from None
    except OSError as exc:  # a folder, no permission
        raise InputFileError("--config", str(path), _CONFIG_FILE,
                             f"it cannot be read ({exc.__class__.__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "valid TOML", hint=str(exc)) from None
    return from_dict(raw)


def from_dict(raw: dict[str, Any]) -> Config:
    """A Config from parsed TOML: `[tables.<t>]` sections take the values they do not set from `[defaults]`."""
    raw = dict(_expect(raw, dict, "config", "a table of settings"))
    defaults = _build(TableConfig, raw.get("defaults", {}), "defaults")
    tables_raw = _expect(raw.get("tables", {}), dict, "tables", "a table of [tables.<name>] sections")
    tables = {}
    for name, section in tables_raw.items():
        if not _IDENTIFIER.match(name):
            raise ConfigError(f"tables.{name}", "a table name of letters, digits and _", name)
        section = dict(_expect(section, dict, f"tables.{name}", "a table of table settings"))
        inherited = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(defaults) if f.name not in ("topic", "key", "source_table")}
        table = _build(TableConfig, {**inherited, **section}, f"tables.{name}")
        if "hooks" in section:  # a table's hooks come on top of the default ones
            table = dataclasses.replace(table, hooks=defaults.hooks + table.hooks)
        tables[name.lower()] = table
    return _build(Config, {**raw, "defaults": defaults, "tables": tables}, "")


# -- the one reader: TOML values into the dataclasses' types ------------------------------------------


def _build(cls: type, raw: Any, where: str) -> Any:
    if isinstance(raw, cls):
        return raw
    raw = _expect(raw, dict, where or "config", "a table of settings")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        path = f"{where}.{key}" if where else key
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            raise ConfigError(path, f"one of the keys {', '.join(fields)}", hint=f"did you mean {close[0]!r}?" if close else "unknown key")
        try:
            values[key] = _coerce(hints[key], value, path)
        except ConfigError as error:
            if fields[key].repr:
                raise
            raise ConfigError(path, error.expected, hint="the value is a secret: not shown") from None
    missing = [
        name
        for name, f in fields.items()
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where + '.' if where else ''}{missing[0]}", "a value (this setting is required)")
    built = cls(**values)
    if cls is Config:
        built.validate("")
    return built


def _coerce(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, path)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return value if len(inner) > 1 else _coerce(inner[0], value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(path, "one of " + ", ".join(repr(a) for a in args), value)
        return value
    if origin is tuple:
        if isinstance(value, str):
            raise ConfigError(path, "a list of strings", value, hint='write ["a", "b"]')
        value = _expect(list(value) if isinstance(value, tuple) else value, list, path, "a list")
        return tuple(_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping):
        value = _expect(value, dict, path, "a table of key = value")
        if args and args[1] is TableConfig:
            return value
        return {str(k): str(v) for k, v in value.items()}
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, "a number", value)
        return float(value)
    if hint is int:
        return _expect(value, int, path, "a whole number")
    if hint is bool:
        return _expect(value, bool, path, "true or false")
    if hint is str:
        return _expect(value, str, path, "a string")
    return value


def _expect(value: Any, kind: type, path: str, expected: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(path, expected, value)
    return value


# -- what the sections' validators share ------------------------------------------------------------


def _require(holds: bool, key: str, expected: str, got: Any = None) -> None:
    if not holds:
        raise ConfigError(key, expected, got)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _url_parts(url: Any) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # an unclosed [ of an IPv6 address
        return None


def _check_shared_metastore(config: Config) -> None:
    """Spark keeps an embedded Derby metastore on the local disk (in the working directory when the warehouse is
    not there): a remote warehouse needs a metastore that all its jobs share."""
    metastore = config.metastore
    if is_local(config.warehouse) or metastore.uri or metastore.jdbc_url:
        return
    if any(key in config.spark.conf for key in METASTORE_SPARK_KEYS):
        return
    raise ConfigError("metastore", '[metastore] uri = "thrift://host:port" (or jdbc_url = "jdbc:…") for a warehouse '
                      f"on {scheme(config.warehouse)}://", hint="an embedded metastore lives on the local disk, "
                      "not with the warehouse: Spark would create it in the working directory")


def _check_subject_format(pattern: str, key: str) -> None:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(pattern) if name is not None}
    except ValueError as error:
        raise ConfigError(key, "a format string", pattern, hint=str(error)) from None
    _require(bool(names) and names <= set(_SUBJECT_PLACEHOLDERS), key,
             f"{', '.join(SUBJECT_STRATEGIES)} or a format string using {{topic}}, {{kind}} and/or {{record}}", pattern)
