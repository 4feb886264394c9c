"""The source databases: one test's namespace in the stack's PostgreSQL (a schema) or MariaDB (a database),
its DDL, literals and connector, and its rows read back in canonical form (row_to_json / JSON_OBJECT)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.e2e.support.columns import Column, Table
from tests.support.poll import poll


def pg_type(kind: str) -> str:
    base, _, rest = kind.partition(":")
    return {
        "int": "integer", "smallint": "smallint", "bigint": "bigint", "date": "date",
        "ts6": "timestamp(6)", "ts3": "timestamp(3)", "tstz": "timestamptz(6)", "bool": "boolean",
        "double": "double precision", "text": "text",
        "dec": f"numeric({rest.replace(':', ',')})", "varchar": f"varchar({rest})",
    }[base]


def maria_type(kind: str) -> str:
    base, _, rest = kind.partition(":")
    return {
        "int": "INT", "smallint": "SMALLINT", "bigint": "BIGINT", "date": "DATE",
        "ts6": "DATETIME(6)", "ts3": "DATETIME(3)", "tstz": "TIMESTAMP(6) NULL DEFAULT NULL",
        "bool": "BOOLEAN", "tinyint1": "TINYINT(1)", "bit": "BIT(1)", "double": "DOUBLE", "text": "MEDIUMTEXT",
        "dec": f"DECIMAL({rest.replace(':', ',')})", "varchar": f"VARCHAR({rest})",
    }[base]


def _literal_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class Moment:
    """What a source held at one moment: the database's clock (UTC, ISO, to the microsecond) and the rows of
    each table, with the columns it had then, read in one transaction."""

    clock: str
    tables: tuple[Table, ...]
    rows: dict[str, list[dict]]


_TABLE_MARK = "-- table "


class SourceDb:
    """One test's namespace in the stack's PostgreSQL (a schema) or MariaDB (a database)."""

    connector_type = ""
    kind = ""  # also names the stack's register_<kind>_connector
    begin = ""  # the statement that starts a transaction
    drop_statement = create_statement = ""  # of the namespace {ns}

    def __init__(self, stack, namespace: str):
        self.stack, self.namespace = stack, namespace
        self.connector = namespace
        self.topic_prefix = namespace

    # naming
    def qualified(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def topic(self, table: str) -> str:
        return f"{self.topic_prefix}.{self.namespace}.{table}"

    def jdbc_url(self) -> str:
        """The source database as `verify` reads it."""
        s = self.settings
        return f"jdbc:{self.connector_type}://{s.host}:{s.port}/{s.database}"

    def lake_table(self, table: str) -> str:
        """docs/design.md "Contract": topic server.schema.table -> table schema_table, lower-cased."""
        return f"{self.namespace}_{table}".lower()

    # to implement: the database's client, types, literals and canonical SELECT
    def run(self, script: str) -> list[str]:
        raise NotImplementedError

    def column_type(self, kind: str) -> str:
        """The column type of the database for a column kind."""
        raise NotImplementedError

    def literal(self, kind: str, value: Any) -> str:
        """An SQL literal of `value` for a column of `kind` (NULL, doubles and booleans alike in both)."""
        if value is None:
            return "NULL"
        base = kind.split(":")[0]
        if base == "double":
            return repr(float(value))
        if base == "bool":
            return "TRUE" if value else "FALSE"
        return self.typed_literal(base, value)

    def typed_literal(self, base: str, value: Any) -> str:
        raise NotImplementedError

    def select_json(self, table: Table) -> str:
        raise NotImplementedError

    # how a column of a kind is read in the canonical form (see columns.canonical); the others as they are
    canonical_reads: ClassVar[dict[str, str]] = {}

    def canonical_read(self, column: Column) -> str:
        return self.canonical_reads.get(column.kind.split(":")[0], "{c}").format(c=column.name)

    # the same in both
    def create_namespace(self) -> None:
        self.run(f"{self.drop_statement} {self.create_statement}".format(ns=self.namespace))

    def drop_namespace(self) -> None:
        self.run(self.drop_statement.format(ns=self.namespace))

    def script_header(self) -> str:
        """What a script of the workload starts with."""
        return ""

    def _client(self, command: list[str], script: str, env: dict[str, str]) -> list[str]:
        """The database's command-line client run on `script`: the lines it printed."""
        p = subprocess.run(command, input=script.encode(), capture_output=True, env=env, timeout=600, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-3000:]}")
        return [line for line in p.stdout.decode().splitlines() if line]

    def columns_ddl(self, table: Table) -> str:
        """The column definitions and primary key of CREATE TABLE."""
        cols = [f"{c.name} {self.column_type(c.kind)}{'' if c.nullable else ' NOT NULL'}" for c in table.columns]
        if table.key:
            cols.append(f"PRIMARY KEY ({', '.join(table.key)})")
        return ", ".join(cols)

    def add_column(self, table: Table, column: Column) -> str:
        return f"ALTER TABLE {self.qualified(table.name)} ADD COLUMN {column.name} {self.column_type(column.kind)};\n"

    def rows(self, table: Table) -> list[dict]:
        return [json.loads(line) for line in self.run(self.select_json(table))]

    # the database's clock, UTC, as `YYYY-MM-DD HH:MM:SS.ffffff`; and a transaction that reads one snapshot
    clock_statement = snapshot_begin = ""

    def moment(self, tables: list[Table]) -> Moment:
        """The clock and the tables' rows in one transaction; returns once the clock is in the next second, so
        that no later commit shares a source time with the moment (MariaDB's binlog times are whole seconds)."""
        script = self.snapshot_begin + self.clock_statement + "".join(
            f"SELECT '{_TABLE_MARK}{t.name}';\n{self.select_json(t)}\n" for t in tables) + "COMMIT;\n"
        lines = self.run(script)
        clock, rows, table = lines[0], {t.name: [] for t in tables}, None
        for line in lines[1:]:
            if line.startswith(_TABLE_MARK):
                table = line.removeprefix(_TABLE_MARK)
            else:
                rows[table].append(json.loads(line))
        poll(lambda: self.run(self.clock_statement)[0][:19] != clock[:19], 10,
             f"{self.kind}: the clock past {clock}", interval=0.05)
        return Moment(clock, tuple(tables), rows)

    def register(self, tables: list[Table], **overrides) -> None:
        register = getattr(self.stack, f"register_{self.kind}_connector")
        register(self.connector, self.topic_prefix, [self.qualified(t.name) for t in tables], **overrides)

    def unregister(self) -> None:
        self.stack.delete_connector(self.connector)


class Postgres(SourceDb):
    connector_type, kind, begin = "postgresql", "postgres", "BEGIN;"
    clock_statement = "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US');\n"
    snapshot_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
    drop_statement, create_statement = "DROP SCHEMA IF EXISTS {ns} CASCADE;", "CREATE SCHEMA {ns};"

    @property
    def settings(self):
        return self.stack.POSTGRES

    def run(self, script: str) -> list[str]:
        s = self.stack.POSTGRES
        env = {**os.environ, "PGPASSWORD": s.password, "PGCLIENTENCODING": "UTF8", "PGCONNECT_TIMEOUT": "10"}
        return self._client(
            ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", s.host, "-p", str(s.port), "-U", s.user,
             "-d", s.database, "-f", "-"],
            script, env,
        )

    def column_type(self, kind: str) -> str:
        return pg_type(kind)

    def create_table(self, table: Table) -> str:
        ddl = f"CREATE TABLE {self.qualified(table.name)} ({self.columns_ddl(table)});\n"
        ddl += f"ALTER TABLE {self.qualified(table.name)} REPLICA IDENTITY DEFAULT;\n"
        for c in table.columns:
            if c.kind == "text":  # always out of line once the row is over ~2 KB: TOASTed, never compressed inline
                ddl += f"ALTER TABLE {self.qualified(table.name)} ALTER COLUMN {c.name} SET STORAGE EXTERNAL;\n"
        return ddl

    def typed_literal(self, base: str, value: Any) -> str:
        if base in ("int", "smallint", "bigint"):
            return str(value)
        if base == "dec":
            return f"'{value}'::numeric"
        if base == "date":
            return f"DATE '{value}'"
        if base in ("ts6", "ts3"):
            return f"TIMESTAMP '{value}'"
        if base == "tstz":
            return f"TIMESTAMPTZ '{value}'"
        return "'" + str(value).replace("'", "''") + "'"  # standard_conforming_strings: no backslash escapes

    canonical_reads: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("ts6", "ts3"), "to_char({c}, 'YYYY-MM-DD HH24:MI:SS.US')"),
        "tstz": "to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')",
        "date": "to_char({c}, 'YYYY-MM-DD')", "dec": "{c}::text",
    }

    def select_json(self, table: Table) -> str:
        parts = ", ".join(f"{self.canonical_read(c)} AS {c.name}" for c in table.columns)
        return f"SELECT row_to_json(t) FROM (SELECT {parts} FROM {self.qualified(table.name)}) AS t;"


class MariaDb(SourceDb):
    connector_type, kind, begin = "mariadb", "mariadb", "START TRANSACTION;"
    drop_statement, create_statement = "DROP DATABASE IF EXISTS {ns};", "CREATE DATABASE {ns} CHARACTER SET utf8mb4;"
    session_zone = "+02:00"  # TIMESTAMP literals of the workload are in this zone; Debezium sends UTC
    clock_statement = "SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%d %H:%i:%s.%f');\n"
    snapshot_begin = "START TRANSACTION WITH CONSISTENT SNAPSHOT;\n"

    @property
    def settings(self):
        return self.stack.MARIADB

    def run(self, script: str) -> list[str]:
        s = self.stack.MARIADB
        return self._client(
            ["mariadb", "--no-defaults", "--protocol=tcp", "-h", s.host, "-P", str(s.port), "-u", s.user,
             "--default-character-set=utf8mb4", "--raw", "-B", "-N", "--connect-timeout=10"],
            script, {**os.environ, "MYSQL_PWD": s.password},
        )

    def column_type(self, kind: str) -> str:
        return maria_type(kind)

    def create_table(self, table: Table) -> str:
        return f"CREATE TABLE {self.qualified(table.name)} ({self.columns_ddl(table)}) ENGINE=InnoDB;\n"

    def script_header(self) -> str:
        return f"SET time_zone = '{self.session_zone}';\n"

    def typed_literal(self, base: str, value: Any) -> str:
        if base in ("int", "smallint", "bigint", "tinyint1"):
            return str(int(value))
        if base == "dec":
            return str(value)
        if base == "bit":
            return "b'1'" if value else "b'0'"
        return _literal_text(str(value))

    canonical_reads: ClassVar[dict[str, str]] = {  # in the UTC session select_json sets
        **dict.fromkeys(("ts6", "ts3", "tstz"), "DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')"),
        "date": "DATE_FORMAT({c}, '%Y-%m-%d')", "dec": "CAST({c} AS CHAR)", "bit": "{c} + 0",
    }

    def select_json(self, table: Table) -> str:
        parts = ", ".join(f"'{c.name}', {self.canonical_read(c)}" for c in table.columns)
        return f"SET time_zone = '+00:00';\nSELECT JSON_OBJECT({parts}) FROM {self.qualified(table.name)};"
