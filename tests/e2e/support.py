"""Shared helpers of the end-to-end tests: source databases, a seeded random workload, Kafka polling,
running lakecompact in-process, and the row-by-row comparison of the lake's view with the source table.

Values are compared in one canonical form on both sides (see `canonical`):
  int kinds -> int, decimal -> str with exactly the column's scale, date -> 'YYYY-MM-DD',
  timestamp kinds -> 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC for timestamptz / MariaDB TIMESTAMP),
  bool -> bool, double -> float, text -> str, NULL -> None.
The source side is read with SQL that prints exactly that (row_to_json / JSON_OBJECT), the lake side
with Spark SQL in a UTC session; the view's column types are checked separately (`spark_type`).

This module imports no Spark and no stack at import time: the fast test of the saved fixtures
(tests/unit/test_real_debezium_fixtures.py) uses `canonical_view_rows` and `compare_rows` too.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import os
import random
import re
import string
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "debezium"
PLACEHOLDER = "__debezium_unavailable_value"
SAVE_FIXTURES_ENV = "LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES"  # =1: the PG/MariaDB tests (re)write tests/fixtures/debezium
DELIVERY_TIMEOUT = 240.0  # seconds for Debezium to deliver a phase's events (polled, not slept)


_EXACT = decimal.Context(prec=80)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def say(message: str) -> None:
    print(f"[e2e] {message}", flush=True)


# ----------------------------------------------------------------------------------------------
# column kinds: DDL per database, expected Spark type, literals, canonical values
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # int, smallint, bigint, dec:P:S, date, ts6, ts3, tstz, bool, bit, tinyint1, double, varchar:N, text
    nullable: bool = True

    @property
    def scale(self) -> int:
        return int(self.kind.split(":")[2])


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


def spark_type(kind: str, connector: str) -> str:
    """The view's column type DESIGN asks for (as Spark's simpleString spells it)."""
    base, _, rest = kind.partition(":")
    if base == "dec":
        return f"decimal({rest.replace(':', ',')})"
    if base == "tinyint1" or (base == "bool" and connector == "mariadb"):
        # MariaDB BOOLEAN is TINYINT(1); Debezium's MariaDB connector sends it as INT16
        return "smallint"
    return {
        "int": "int", "smallint": "smallint", "bigint": "bigint", "date": "date", "ts6": "timestamp",
        "ts3": "timestamp", "tstz": "timestamp", "bool": "boolean", "bit": "boolean", "double": "double",
        "varchar": "string", "text": "string",
    }[base]


def canonical(column: Column, value: Any) -> Any:
    """One comparable form of a value read from either side (see the module docstring)."""
    if value is None:
        return None
    base = column.kind.split(":")[0]
    if base in ("int", "smallint", "bigint", "tinyint1"):
        return int(value)
    if base == "bool" and isinstance(value, (int, bool)) and not isinstance(value, bool):
        return int(value)  # MariaDB BOOLEAN: 0/1 on both sides
    if base in ("bool", "bit"):
        if isinstance(value, str):
            return value.lower() in ("t", "true", "1")
        return bool(value)
    if base == "dec":
        exact = Decimal(str(value))
        unscaled = exact.scaleb(column.scale, context=_EXACT)
        assert unscaled == unscaled.to_integral_value(), f"{column.name}: {value} has more than {column.scale} decimals"
        return _scaled(int(unscaled), column.scale)
    if base == "double":
        return float(value)
    if base == "date":
        return str(value)[:10]
    if base in ("ts6", "ts3", "tstz"):
        text = str(value).replace("T", " ")
        if "." not in text:
            text += ".000000"
        head, frac = text.split(".", 1)
        return f"{head}.{(frac + '000000')[:6]}"
    return str(value)


def _scaled(unscaled: int, scale: int) -> str:
    """An exact decimal string (Decimal arithmetic would round to 28 digits)."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return ("-" if unscaled < 0 else "") + text


def _literal_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


# ----------------------------------------------------------------------------------------------
# source databases
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]  # () = no primary key

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def with_column(self, column: Column) -> Table:
        return Table(self.name, self.columns + (column,), self.key)


class SourceDb:
    """One test's namespace in the stack's PostgreSQL (a schema) or MariaDB (a database)."""

    connector_type = ""
    kind = ""

    def __init__(self, stack, namespace: str):
        self.stack, self.namespace = stack, namespace
        self.connector = namespace
        self.topic_prefix = namespace

    # naming
    def qualified(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def topic(self, table: str) -> str:
        return f"{self.topic_prefix}.{self.namespace}.{table}"

    def lake_table(self, table: str) -> str:
        """DESIGN: topic server.schema.table -> table schema_table, lower-cased."""
        return f"{self.namespace}_{table}".lower()

    # to implement
    def run(self, script: str) -> list[str]:
        raise NotImplementedError

    def literal(self, kind: str, value: Any) -> str:
        raise NotImplementedError


class Postgres(SourceDb):
    connector_type = "postgresql"
    kind = "postgres"
    begin = "BEGIN;"

    def run(self, script: str) -> list[str]:
        s = self.stack.POSTGRES
        env = {**os.environ, "PGPASSWORD": s.password, "PGCLIENTENCODING": "UTF8", "PGCONNECT_TIMEOUT": "10"}
        p = subprocess.run(
            ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", s.host, "-p", str(s.port), "-U", s.user,
             "-d", s.database, "-f", "-"],
            input=script.encode(), capture_output=True, env=env, timeout=600, check=False,
        )
        if p.returncode != 0:
            raise RuntimeError(f"psql failed ({p.returncode}): {p.stderr.decode(errors='replace')[-3000:]}")
        return [line for line in p.stdout.decode().splitlines() if line]

    def create_namespace(self) -> None:
        self.run(f"DROP SCHEMA IF EXISTS {self.namespace} CASCADE; CREATE SCHEMA {self.namespace};")

    def drop_namespace(self) -> None:
        self.run(f"DROP SCHEMA IF EXISTS {self.namespace} CASCADE;")

    def create_table(self, table: Table) -> str:
        cols = [f"{c.name} {pg_type(c.kind)}{'' if c.nullable else ' NOT NULL'}" for c in table.columns]
        if table.key:
            cols.append(f"PRIMARY KEY ({', '.join(table.key)})")
        ddl = f"CREATE TABLE {self.qualified(table.name)} ({', '.join(cols)});\n"
        ddl += f"ALTER TABLE {self.qualified(table.name)} REPLICA IDENTITY DEFAULT;\n"
        for c in table.columns:
            if c.kind == "text":  # always out of line once the row is over ~2 KB: TOASTed, never compressed inline
                ddl += f"ALTER TABLE {self.qualified(table.name)} ALTER COLUMN {c.name} SET STORAGE EXTERNAL;\n"
        return ddl

    def add_column(self, table: Table, column: Column) -> str:
        return f"ALTER TABLE {self.qualified(table.name)} ADD COLUMN {column.name} {pg_type(column.kind)};\n"

    def literal(self, kind: str, value: Any) -> str:
        if value is None:
            return "NULL"
        base = kind.split(":")[0]
        if base in ("int", "smallint", "bigint"):
            return str(value)
        if base == "dec":
            return f"'{value}'::numeric"
        if base == "double":
            return repr(float(value))
        if base == "bool":
            return "TRUE" if value else "FALSE"
        if base == "date":
            return f"DATE '{value}'"
        if base in ("ts6", "ts3"):
            return f"TIMESTAMP '{value}'"
        if base == "tstz":
            return f"TIMESTAMPTZ '{value}'"
        return "'" + str(value).replace("'", "''") + "'"  # standard_conforming_strings: no backslash escapes

    def select_json(self, table: Table) -> str:
        parts = []
        for c in table.columns:
            base = c.kind.split(":")[0]
            if base in ("ts6", "ts3"):
                expr = f"to_char({c.name}, 'YYYY-MM-DD HH24:MI:SS.US')"
            elif base == "tstz":
                expr = f"to_char({c.name} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
            elif base == "date":
                expr = f"to_char({c.name}, 'YYYY-MM-DD')"
            elif base == "dec":
                expr = f"{c.name}::text"
            else:
                expr = c.name
            parts.append(f"{expr} AS {c.name}")
        return f"SELECT row_to_json(t) FROM (SELECT {', '.join(parts)} FROM {self.qualified(table.name)}) AS t;"

    def rows(self, table: Table) -> list[dict]:
        return [json.loads(line) for line in self.run(self.select_json(table))]

    def register(self, tables: list[Table], **overrides) -> None:
        self.stack.register_postgres_connector(
            self.connector, self.topic_prefix, [self.qualified(t.name) for t in tables], **overrides
        )

    def unregister(self) -> None:
        self.stack.delete_connector(self.connector)


class MariaDb(SourceDb):
    connector_type = "mariadb"
    kind = "mariadb"
    begin = "START TRANSACTION;"
    session_zone = "+02:00"  # TIMESTAMP literals of the workload are in this zone; Debezium sends UTC

    def run(self, script: str) -> list[str]:
        s = self.stack.MARIADB
        p = subprocess.run(
            ["mariadb", "--no-defaults", "--protocol=tcp", "-h", s.host, "-P", str(s.port), "-u", s.user,
             "--default-character-set=utf8mb4", "--raw", "-B", "-N", "--connect-timeout=10"],
            input=script.encode(), capture_output=True, env={**os.environ, "MYSQL_PWD": s.password},
            timeout=600, check=False,
        )
        if p.returncode != 0:
            raise RuntimeError(f"mariadb failed ({p.returncode}): {p.stderr.decode(errors='replace')[-3000:]}")
        return [line for line in p.stdout.decode().splitlines() if line]

    def create_namespace(self) -> None:
        self.run(f"DROP DATABASE IF EXISTS {self.namespace}; CREATE DATABASE {self.namespace} CHARACTER SET utf8mb4;")

    def drop_namespace(self) -> None:
        self.run(f"DROP DATABASE IF EXISTS {self.namespace};")

    def create_table(self, table: Table) -> str:
        cols = [f"{c.name} {maria_type(c.kind)}{'' if c.nullable else ' NOT NULL'}" for c in table.columns]
        if table.key:
            cols.append(f"PRIMARY KEY ({', '.join(table.key)})")
        return f"CREATE TABLE {self.qualified(table.name)} ({', '.join(cols)}) ENGINE=InnoDB;\n"

    def add_column(self, table: Table, column: Column) -> str:
        return f"ALTER TABLE {self.qualified(table.name)} ADD COLUMN {column.name} {maria_type(column.kind)};\n"

    def script_header(self) -> str:
        return f"SET time_zone = '{self.session_zone}';\n"

    def literal(self, kind: str, value: Any) -> str:
        if value is None:
            return "NULL"
        base = kind.split(":")[0]
        if base in ("int", "smallint", "bigint", "tinyint1"):
            return str(int(value))
        if base == "dec":
            return str(value)
        if base == "double":
            return repr(float(value))
        if base == "bool":
            return "TRUE" if value else "FALSE"
        if base == "bit":
            return "b'1'" if value else "b'0'"
        return _literal_text(str(value))

    def select_json(self, table: Table) -> str:
        parts = []
        for c in table.columns:
            base = c.kind.split(":")[0]
            if base in ("ts6", "ts3", "tstz"):
                expr = f"DATE_FORMAT({c.name}, '%Y-%m-%d %H:%i:%s.%f')"
            elif base == "date":
                expr = f"DATE_FORMAT({c.name}, '%Y-%m-%d')"
            elif base == "dec":
                expr = f"CAST({c.name} AS CHAR)"
            elif base == "bit":
                expr = f"{c.name} + 0"
            else:
                expr = c.name
            parts.append(f"'{c.name}', {expr}")
        return (
            "SET time_zone = '+00:00';\n"
            f"SELECT JSON_OBJECT({', '.join(parts)}) FROM {self.qualified(table.name)};"
        )

    def rows(self, table: Table) -> list[dict]:
        return [json.loads(line) for line in self.run(self.select_json(table))]

    def register(self, tables: list[Table], **overrides) -> None:
        self.stack.register_mariadb_connector(
            self.connector, self.topic_prefix, [self.qualified(t.name) for t in tables], **overrides
        )

    def unregister(self) -> None:
        self.stack.delete_connector(self.connector)


# ----------------------------------------------------------------------------------------------
# the workload: a seeded random mix, kept in a model to know which keys exist and how many events follow
# ----------------------------------------------------------------------------------------------
_TEXT_ALPHABET = string.ascii_letters + string.digits + "      ,.;:-!?()" + "éüßøñ€ж"


def accounts_table(db: SourceDb) -> Table:
    """Primary key, exact decimals, date and time kinds, and `notes`: ~10 KB of text for about half the rows."""
    cols = [
        Column("id", "int", nullable=False),
        Column("name", "varchar:60", nullable=False),
        Column("balance", "dec:12:2"),
        Column("big", "dec:30:10"),
        Column("opened", "date"),
        Column("updated_at", "ts6"),
        Column("seen_at", "tstz"),
        Column("active", "bool"),
        Column("score", "double"),
        Column("notes", "text"),
    ]
    if db.kind == "mariadb":
        cols.insert(8, Column("flag", "bit"))  # BIT(1): a Connect boolean (BOOLEAN is TINYINT(1), an INT16)
    return Table("accounts", tuple(cols), ("id",))


def orders_table(db: SourceDb) -> Table:
    return Table("orders", (
        Column("order_id", "int", nullable=False),
        Column("line", "smallint", nullable=False),
        Column("sku", "varchar:20"),
        Column("qty", "int"),
        Column("unit_price", "dec:10:2"),
        Column("discount", "dec:5:4"),
        Column("due", "date"),
        Column("created", "ts3"),
        Column("shipped_at", "tstz"),
        Column("paid", "bool"),
    ), ("order_id", "line"))


def audit_table(db: SourceDb) -> Table:
    """No primary key: insert-only (PostgreSQL refuses updates of such a table under a publication)."""
    return Table("audit", (
        Column("seq", "bigint"),
        Column("kind", "varchar:20"),
        Column("amount", "dec:9:3"),
        Column("at", "tstz"),
        Column("body", "text"),
    ), ())


def names_table(db: SourceDb) -> Table:
    """Columns named `key` and `payload`: ordinary names in a source table (snapshot rows only)."""
    return Table("names", (
        Column("id", "int", nullable=False),
        Column("key", "varchar:20"),
        Column("payload", "text"),
    ), ("id",))


TABLES = {"accounts": accounts_table, "orders": orders_table, "audit": audit_table, "names": names_table}
WEIGHTS = {"accounts": 5, "orders": 4, "audit": 1}

ADDED_COLUMNS = {  # one column added midway to each keyed table: accounts in phase 1, orders in phase 2
    "accounts": Column("tier", "varchar:16"),
    "orders": Column("gift_note", "varchar:64"),
}


@dataclass
class TableModel:
    table: Table
    rows: dict[tuple, dict] = field(default_factory=dict)  # live keys -> values (keyless: ignored)
    deleted: dict[tuple, dict] = field(default_factory=dict)  # deleted keys -> last values
    events: int = 0  # Kafka messages the workload makes Debezium write for this table (tombstones included)


class Workload:
    """Random statements against one source db; returns SQL scripts, keeps count of the expected events."""

    def __init__(self, db: SourceDb, seed: int, *, tables: tuple[str, ...] = ("accounts", "orders", "audit"),
                 equal_rows: bool = True, big_text: int = 10 * 1024):
        """`equal_rows`: some audit inserts repeat a row of the same phase in every column."""
        self.db, self.rng, self.big_text, self.equal_rows = db, random.Random(seed), big_text, equal_rows
        self.models = {name: TableModel(TABLES[name](db)) for name in tables}
        self.next_id = {"accounts": 1, "orders": 1, "audit": 1, "names": 1}
        self.ops = Counter()
        self.marker_count = 0
        self.phase_audit: list[dict] = []  # audit rows inserted in the current phase
        self.earlier_audit: list[dict] = []  # ... in the phases before
        self.copies_of_earlier_rows: list[dict] = []

    @property
    def tables(self) -> list[Table]:
        return [m.table for m in self.models.values()]

    def table(self, name: str) -> Table:
        return self.models[name].table

    # ---- values
    def value(self, column: Column) -> Any:
        r, base = self.rng, column.kind.split(":")[0]
        if column.nullable and r.random() < 0.08:
            return None
        if base in ("int",):
            return r.randint(-2_000_000_000, 2_000_000_000)
        if base == "smallint":
            return r.randint(-32000, 32000)
        if base == "bigint":
            return r.randint(-(2**62), 2**62)
        if base == "dec":
            _, p, s = column.kind.split(":")
            p, s = int(p), int(s)
            edge = r.random()
            if edge < 0.05:
                unscaled = 10**p - 1  # the largest value of the type
            elif edge < 0.10:
                unscaled = -(10**p - 1)
            elif edge < 0.15:
                unscaled = r.choice([0, 1, -1])
            else:
                unscaled = r.randint(-(10 ** r.randint(1, p)) + 1, 10 ** r.randint(1, p) - 1)
            return _scaled(unscaled, s)
        if base == "double":
            return r.randint(-(10**9), 10**9) / 4  # exact in binary and in short decimal
        if base in ("bool", "bit", "tinyint1"):
            return r.random() < 0.5
        if base == "date":
            return (dt.date(1901, 1, 1) + dt.timedelta(days=r.randint(0, 400 * 365))).isoformat()
        if base in ("ts6", "ts3"):
            micros = r.randint(-2_000_000_000, 4_000_000_000) * 1_000_000 + r.randint(0, 999_999)
            if base == "ts3":
                micros -= micros % 1000
            t = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
            return t.strftime("%Y-%m-%d %H:%M:%S.%f")
        if base == "tstz":
            # MariaDB TIMESTAMP: 1970..2038 only
            low, high = (1, 2_100_000_000) if self.db.kind == "mariadb" else (-2_000_000_000, 4_000_000_000)
            micros = r.randint(low, high) * 1_000_000 + r.randint(0, 999_999)
            utc = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
            if self.db.kind == "mariadb":  # a literal in the session zone (+02:00)
                return (utc + dt.timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S.%f")
            minutes = r.choice([0, 330, -420, 60, -150, 765])
            local = utc + dt.timedelta(minutes=minutes)
            sign = "+" if minutes >= 0 else "-"
            return local.strftime("%Y-%m-%d %H:%M:%S.%f") + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        if base == "varchar":
            n = int(column.kind.split(":")[1])
            return "".join(r.choices(_TEXT_ALPHABET, k=r.randint(1, n)))
        if base == "text":
            if column.name == "notes":
                if r.random() < 0.55:  # large: TOASTed out of line by PostgreSQL
                    return self.big(r.randint(self.big_text, self.big_text + 2048))
                return "".join(r.choices(_TEXT_ALPHABET + "\n", k=r.randint(0, 300)))
            return "".join(r.choices(_TEXT_ALPHABET, k=r.randint(0, 80)))
        raise AssertionError(column.kind)

    def big(self, n: int) -> str:
        return "".join(self.rng.choices(_TEXT_ALPHABET + "\n", k=n))

    def new_row(self, name: str, key: tuple | None = None) -> dict:
        table = self.table(name)
        row = {c.name: self.value(c) for c in table.columns}
        if name == "accounts":
            row["id"] = key[0] if key else self._next("accounts")
            if row["name"] is None:
                row["name"] = "x"
        elif name == "orders":
            if key:
                row["order_id"], row["line"] = key
            else:
                n = self._next("orders")
                row["order_id"], row["line"] = 1000 + n // 3, n % 3 + 1
        elif name == "audit":
            row["seq"] = self._next("audit")
        elif name == "names":
            row["id"] = self._next("names")
            row["key"], row["payload"] = f"k{row['id']}", f'{{"payload": {row["id"]}, "key": "not this one"}}'
        return row

    def _next(self, name: str) -> int:
        n = self.next_id[name]
        self.next_id[name] += 1
        return n

    def key_of(self, table: Table, row: dict) -> tuple:
        return tuple(row[k] for k in table.key)

    # ---- statements
    def _where(self, table: Table, key: tuple) -> str:
        return " AND ".join(f"{k} = {self.db.literal(table.column(k).kind, v)}" for k, v in zip(table.key, key))

    def insert(self, name: str, row: dict | None = None, key: tuple | None = None) -> str:
        model = self.models[name]
        table = model.table
        row = row or self.new_row(name, key)
        cols = [c for c in table.columns if c.name in row]
        sql = (
            f"INSERT INTO {self.db.qualified(name)} ({', '.join(c.name for c in cols)}) VALUES "
            f"({', '.join(self.db.literal(c.kind, row[c.name]) for c in cols)});\n"
        )
        if table.key:
            k = self.key_of(table, row)
            model.rows[k] = row
            model.deleted.pop(k, None)
        else:
            self.phase_audit.append(row)
        model.events += 1
        self.ops["insert"] += 1
        return sql

    def update(self, name: str, key: tuple, changes: dict) -> str:
        model = self.models[name]
        table = model.table
        if all(model.rows[key].get(c) == v for c, v in changes.items()):
            # MariaDB writes no binlog event for an update that changes nothing (PostgreSQL does): always change
            changes = {**changes, "qty" if name == "orders" else "score": self.rng.randint(1, 10**6) + 0.5}
        sets = ", ".join(f"{c} = {self.db.literal(table.column(c).kind, v)}" for c, v in changes.items())
        model.rows[key].update(changes)
        model.events += 1
        self.ops["update"] += 1
        return f"UPDATE {self.db.qualified(name)} SET {sets} WHERE {self._where(table, key)};\n"

    def delete(self, name: str, key: tuple) -> str:
        model = self.models[name]
        model.deleted[key] = model.rows.pop(key)
        model.events += 2  # the delete and its Kafka tombstone
        self.ops["delete"] += 1
        return f"DELETE FROM {self.db.qualified(name)} WHERE {self._where(model.table, key)};\n"

    def change_key(self, name: str, key: tuple, new_key: tuple) -> str:
        """A primary-key update: Debezium sends a delete (+ tombstone) of the old key and a create of the new."""
        model = self.models[name]
        table = model.table
        row = model.rows.pop(key)
        model.deleted[key] = row
        model.rows[new_key] = {**row, **dict(zip(table.key, new_key))}
        model.events += 3
        self.ops["key change"] += 1
        sets = ", ".join(f"{k} = {self.db.literal(table.column(k).kind, v)}" for k, v in zip(table.key, new_key))
        return f"UPDATE {self.db.qualified(name)} SET {sets} WHERE {self._where(table, key)};\n"

    def add_column(self, name: str) -> str:
        model = self.models[name]
        column = ADDED_COLUMNS[name]
        sql = self.db.add_column(model.table, column)
        model.table = model.table.with_column(column)
        for row in model.rows.values():
            row[column.name] = None
        self.ops["add column"] += 1
        return sql

    def random_changes(self, name: str, key: tuple, *, touch_notes: bool | None = None) -> dict:
        table = self.table(name)
        candidates = [c for c in table.columns if c.name not in table.key]
        if name == "accounts":
            if touch_notes is None:
                touch_notes = self.rng.random() < 0.3
            candidates = [c for c in candidates if c.name != "notes"]
        picked = self.rng.sample(candidates, self.rng.randint(1, min(3, len(candidates))))
        changes = {c.name: self.value(c) for c in picked}
        if "name" in changes and changes["name"] is None:
            changes["name"] = "renamed"
        added = ADDED_COLUMNS.get(name)
        if added and added.name in [c.name for c in table.columns] and self.rng.random() < 0.7:
            changes[added.name] = self.value(Column(added.name, added.kind, nullable=False))
        if name == "accounts" and touch_notes:
            changes["notes"] = self.value(Column("notes", "text"))
        return changes

    # ---- scripts
    def create_script(self, initial: dict[str, int]) -> str:
        sql = "".join(self.db.create_table(t) for t in self.tables)
        for name, count in initial.items():
            if name in self.models:
                for _ in range(count):
                    sql += self.insert(name)
        self.ops.clear()
        self.new_phase()
        return self._script(sql)

    def new_phase(self) -> None:
        self.earlier_audit += self.phase_audit
        self.phase_audit = []

    def phase_script(self, ops: int, **features) -> str:
        return self._script("".join(self.phase_statements(ops, **features)))

    def phase_statements(self, ops: int, *, add_column: str | None = None, transaction: bool = False,
                         key_change: bool = False, copy_earlier_row: bool = False) -> list[str]:
        """`ops` random statements; the column is added halfway, the transaction and key change a third in.

        `copy_earlier_row`: one audit insert repeats, in every column, a row of an earlier phase (so of an
        earlier batch)."""
        r = self.rng
        self.new_phase()
        statements: list[str] = []
        for i in range(ops):
            if copy_earlier_row and i == ops // 4:
                row = dict(r.choice([x for x in self.earlier_audit if x["kind"] != "marker"]))
                self.copies_of_earlier_rows.append(row)
                statements.append(self.insert("audit", row))
                self.phase_audit.pop()  # not a row of this phase to copy again
                self.ops["copy of an earlier row"] += 1
            if add_column and i == ops // 2:
                statements.append(self.add_column(add_column))
            if transaction and i == ops // 3:
                statements.append(self.transaction())
            if key_change and i == ops // 3 + 1:
                keys = sorted(self.models["orders"].rows)
                old = r.choice(keys)
                statements.append(self.change_key("orders", old, (old[0] + 50_000, old[1])))
            statements.append(self.random_statement())
        return statements

    def random_statement(self) -> str:
        r = self.rng
        names = [n for n in WEIGHTS if n in self.models]
        name = r.choices(names, weights=[WEIGHTS[n] for n in names])[0]
        model = self.models[name]
        if name == "audit":
            if self.equal_rows and self.phase_audit and r.random() < 0.25:
                self.ops["equal row"] += 1
                row = dict(r.choice(self.phase_audit))
                sql = self.insert("audit", row)  # the same values again: two equal rows
                self.phase_audit.pop()
                return sql
            return self.insert("audit")
        roll = r.random()
        if roll < 0.22 or not model.rows:
            return self.insert(name)
        if roll < 0.32 and model.deleted:
            key = r.choice(sorted(model.deleted))
            self.ops["re-insert"] += 1
            return self.insert(name, key=key)
        if roll < 0.47:
            return self.delete(name, r.choice(sorted(model.rows)))
        key = r.choice(sorted(model.rows))
        return self.update(name, key, self.random_changes(name, key))

    def transaction(self) -> str:
        """One transaction: the same key updated several times (some without its TOASTed notes), plus more."""
        accounts = self.models["accounts"]
        key = self.rng.choice(sorted(accounts.rows))
        body = self.update("accounts", key, {"balance": "1.00", "notes": self.big(self.big_text + 100)})
        body += self.update("accounts", key, {"balance": "2.00", "active": True})
        body += self.update("accounts", key, {"balance": "3.00", "score": 0.25})
        body += self.update("accounts", key, self.random_changes("accounts", key, touch_notes=False))
        other = self.rng.choice(sorted(k for k in accounts.rows if k != key))
        body += self.delete("accounts", other)
        body += self.insert("accounts", key=other)  # deleted and inserted again in the same transaction
        if "orders" in self.models:
            body += self.insert("orders")
        self.ops["transaction"] += 1
        return f"{self.db.begin}\n{body}COMMIT;\n"

    def marker_script(self) -> tuple[str, str]:
        """The last write of a phase: an audit row (else an accounts row) that carries a fresh token."""
        self.marker_count += 1
        token = f"marker-{self.marker_count}-{uuid.uuid4().hex[:8]}"
        if "audit" in self.models:
            row = {**self.new_row("audit"), "kind": "marker", "body": token}
            return self._script(self.insert("audit", row)), token
        row = {**self.new_row("accounts"), "name": token}
        return self._script(self.insert("accounts", row)), token

    def _script(self, sql: str) -> str:
        header = self.db.script_header() if isinstance(self.db, MariaDb) else ""
        return header + sql

    def expected_events(self) -> dict[str, int]:
        return {self.db.topic(name): m.events for name, m in self.models.items()}


# ----------------------------------------------------------------------------------------------
# Kafka: end offsets (a Kafka client in Spark's JVM) and whole topics (Spark's Kafka source)
# ----------------------------------------------------------------------------------------------
def end_offsets(spark, bootstrap: str, topics: list[str]) -> dict[str, int]:
    """{topic: end offset summed over partitions}; a topic that does not exist yet reads 0."""
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    props.setProperty("bootstrap.servers", bootstrap)
    props.setProperty("allow.auto.create.topics", "false")
    props.setProperty("default.api.timeout.ms", "20000")
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    props.setProperty("key.deserializer", deserializer)
    props.setProperty("value.deserializer", deserializer)
    consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
    try:
        existing = {str(t) for t in consumer.listTopics().keySet()}
        partitions = jvm.java.util.ArrayList()
        for topic in topics:
            if topic in existing:
                for info in consumer.partitionsFor(topic):
                    partitions.add(jvm.org.apache.kafka.common.TopicPartition(topic, info.partition()))
        ends = consumer.endOffsets(partitions) if not partitions.isEmpty() else {}
        result = {t: 0 for t in topics}
        for tp in partitions:
            result[str(tp.topic())] += int(ends.get(tp))
        return result
    finally:
        consumer.close()


def read_messages(spark, bootstrap: str, topics: list[str]) -> list[dict]:
    """Every message of the topics, as kcat -J objects (key and payload as the message texts)."""
    from pyspark.sql import functions as F

    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("topic", "partition", "offset", F.col("key").cast("string").alias("key"),
                F.col("value").cast("string").alias("payload"))
    )
    rows = frame.collect()
    messages = [{"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": r.key, "payload": r.payload}
                for r in rows]
    return sorted(messages, key=lambda m: (m["topic"], m["partition"], m["offset"]))


def wait_delivered(spark, stack, dbs: list[SourceDb], expected: dict[str, int], markers: dict[str, str], *,
                   exact: bool, timeout: float = DELIVERY_TIMEOUT) -> list[dict]:
    """Poll until every topic holds at least its expected number of messages, the end offsets stayed the same
    over two polls a second apart, and each marker token (written last) is in Kafka. Returns all messages.

    `exact`: no duplicates are possible (no restart), so more messages than expected is a failure.
    """
    topics = sorted(expected)
    deadline = time.monotonic() + timeout
    previous, stable_since = None, None
    while True:
        for db in dbs:
            status = stack.connector_status(db.connector)
            failed = [t for t in [status["connector"], *status.get("tasks", [])] if t["state"] == "FAILED"]
            if failed:
                raise AssertionError(f"connector {db.connector} failed: {failed[0].get('trace', '')[:3000]}")
        ends = end_offsets(spark, stack.KAFKA_BOOTSTRAP, topics)
        now = time.monotonic()
        if ends != previous:
            previous, stable_since = ends, now
        enough = all(ends[t] >= expected[t] for t in topics)
        if enough and now - stable_since >= 1.0:
            messages = read_messages(spark, stack.KAFKA_BOOTSTRAP, topics)
            found = {token for token in markers.values() if any(m["payload"] and token in m["payload"] for m in messages)}
            if found == set(markers.values()) and all(
                sum(1 for m in messages if m["topic"] == t) == ends[t] for t in topics
            ):
                counts = Counter(m["topic"] for m in messages)
                if exact:
                    assert dict(counts) == {t: expected[t] for t in topics if expected[t]}, (
                        f"Debezium wrote other numbers of messages than the workload makes: {dict(counts)} != {expected}"
                    )
                return messages
        if now >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for Debezium: end offsets {ends}, "
                                 f"expected at least {expected}, markers {markers}")
        time.sleep(0.5)


# ----------------------------------------------------------------------------------------------
# message analysis
# ----------------------------------------------------------------------------------------------
def envelope(message: dict) -> dict | None:
    if message["payload"] is None:
        return None
    value = json.loads(message["payload"])
    return value.get("payload", value)


def message_key(message: dict) -> Any:
    if message["key"] is None:
        return None
    key = json.loads(message["key"])
    return key.get("payload", key) if isinstance(key, dict) and "schema" in key else key


def position(message: dict) -> tuple | None:
    """The source position of an event (LSN, or binlog file/pos/row); None for a tombstone."""
    env = envelope(message)
    if env is None:
        return None
    src = env["source"]
    if src.get("lsn") is not None:
        return (src["lsn"],)
    return (src.get("file"), src.get("pos"), src.get("row"))


def op_counts(messages: list[dict]) -> Counter:
    counts = Counter()
    for m in messages:
        env = envelope(m)
        if env is None:
            counts["tombstone"] += 1
            continue
        counts[env["op"]] += 1
        if PLACEHOLDER in (m["payload"] or ""):
            counts["toast placeholder"] += 1
    return counts


def duplicates(messages: list[dict]) -> int:
    """Events delivered more than once: same topic, op, key and source position."""
    seen = Counter()
    for m in messages:
        env = envelope(m)
        if env is None:
            continue
        seen[(m["topic"], env["op"], json.dumps(message_key(m), sort_keys=True), position(m),
              json.dumps(env.get("after"), sort_keys=True))] += 1
    return sum(n - 1 for n in seen.values() if n > 1)


# ----------------------------------------------------------------------------------------------
# lakecompact in-process, and the comparison
# ----------------------------------------------------------------------------------------------
def lake_config(stack, warehouse: Path, database: str, topics: list[str] | None = None, *,
                topic_pattern: str = "", defaults: dict | None = None, **source: Any):
    from lakecompact import config as config_module

    return config_module.from_dict({
        "warehouse": str(warehouse),
        "database": database,
        "source": {
            "kind": "kafka",
            "bootstrap_servers": stack.KAFKA_BOOTSTRAP,
            **({"topics": topics} if topics else {}),
            **({"topic_pattern": topic_pattern} if topic_pattern else {}),
            **source,
        },
        "defaults": {"buckets": 2, **(defaults or {})},
    })


def check_session(spark, e2e_spark):
    """The tests run lakecompact in-process in the suite's one session: Hive catalog (tests/conftest.py
    `spark`, created first) joined by `e2e_spark` (which adds Spark's Kafka jars when missing)."""
    assert spark is e2e_spark or spark.sparkContext is e2e_spark.sparkContext, "two Spark sessions"
    implementation = spark.conf.get("spark.sql.catalogImplementation")
    assert implementation == "hive", (
        f"the session's catalog is {implementation!r}: lakecompact needs Hive support (e2e_spark was created "
        "before the `spark` fixture of tests/conftest.py)"
    )
    return spark


def canonical_view_rows(spark, database: str, table: str, columns: list[Column]) -> tuple[list[dict], dict[str, str]]:
    """The view's rows in canonical form (timestamps formatted by Spark in the UTC session) and its column types."""
    spark.catalog.refreshTable(f"`{database}`.`{table}`")
    frame = spark.table(f"`{database}`.`{table}`")
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    exprs = []
    for c in columns:
        if c.name not in types:
            continue
        base = c.kind.split(":")[0]
        if types[c.name] == "timestamp":
            exprs.append(f"date_format(`{c.name}`, 'yyyy-MM-dd HH:mm:ss.SSSSSS') AS `{c.name}`")
        elif base in ("dec", "date"):
            exprs.append(f"CAST(`{c.name}` AS STRING) AS `{c.name}`")
        else:
            exprs.append(f"`{c.name}`")
    rows = [r.asDict() for r in frame.selectExpr(*exprs).collect()]
    return [{c.name: canonical(c, row.get(c.name)) for c in columns} for row in rows], types


@dataclass
class Comparison:
    """One table of the lake against its source table at one stage of a scenario."""

    stage: str
    db: str
    table: Table
    lake_table: str
    source_rows: int
    view_rows: int
    type_problem: str | None = None
    problems: list[str] = field(default_factory=list)  # keyed tables: missing, extra, differing keys
    missing: Counter = field(default_factory=Counter)  # keyless tables: source rows (as JSON) not in the view
    extra: Counter = field(default_factory=Counter)  # ... view rows not in the source

    @property
    def equal(self) -> bool:
        return not (self.type_problem or self.problems or self.missing or self.extra)

    def describe(self) -> str:
        text = (f"{self.stage}: {self.lake_table} vs {self.db} {self.table.name} "
                f"({self.source_rows} source rows, {self.view_rows} view rows)")
        if self.type_problem:
            text += f"\n  types: {self.type_problem}"
        text += "".join(f"\n  {p}" for p in self.problems[:12])
        if len(self.problems) > 12:
            text += f"\n  ... {len(self.problems)} problems in all"
        if self.missing:
            text += f"\n  missing from the view: {[_short(r, 160) for r in list(self.missing.elements())[:5]]}"
        if self.extra:
            text += f"\n  in the view only: {[_short(r, 160) for r in list(self.extra.elements())[:5]]}"
        return text


def row_json(table: Table, row: dict) -> str:
    return json.dumps([row[c.name] for c in table.columns], default=str, ensure_ascii=False)


def compare_rows(table: Table, source: list[dict], lake: list[dict], comparison: Comparison) -> Comparison:
    """Row by row: the same keys and every value equal; keyless: the same multiset of rows."""
    names = [c.name for c in table.columns]
    src = [{c.name: canonical(c, r.get(c.name)) for c in table.columns} for r in source]
    if not table.key:
        a = Counter(row_json(table, r) for r in src)
        b = Counter(row_json(table, r) for r in lake)
        comparison.missing, comparison.extra = a - b, b - a
        return comparison
    by_key_src = {tuple(r[k] for k in table.key): r for r in src}
    by_key_lake: dict[tuple, dict] = {}
    for r in lake:
        k = tuple(r[k] for k in table.key)
        if k in by_key_lake:
            comparison.problems.append(f"key {k} twice in the view")
        by_key_lake[k] = r
    for k in sorted(set(by_key_src) - set(by_key_lake), key=repr):
        comparison.problems.append(f"missing from the view: key {k}")
    for k in sorted(set(by_key_lake) - set(by_key_src), key=repr):
        comparison.problems.append(f"in the view, not in the source: key {k} {_short(by_key_lake[k])}")
    for k in sorted(set(by_key_src) & set(by_key_lake), key=repr):
        a, b = by_key_src[k], by_key_lake[k]
        bad = [n for n in names if a[n] != b[n]]
        if bad:
            comparison.problems.append(
                f"key {k}: " + "; ".join(f"{n}: source {_short(a[n])} != view {_short(b[n])}" for n in bad))
    return comparison


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) and value.startswith("[") else repr(value)
    return text if len(text) <= limit else f"{text[:limit - 20]}...({len(text)} chars)"


def compare_with_source(spark, config, db: SourceDb, tables: list[Table], stage: str) -> list[Comparison]:
    """Every table's view against the source table (values, and the column types DESIGN asks for)."""
    results = []
    for table in tables:
        lake_table = db.lake_table(table.name)
        source_rows = db.rows(table)
        lake_rows, types = canonical_view_rows(spark, config.database, lake_table, list(table.columns))
        comparison = Comparison(stage, db.kind, table, lake_table, len(source_rows), len(lake_rows))
        expected = {c.name: spark_type(c.kind, db.connector_type) for c in table.columns}
        actual = {c.name: types.get(c.name) for c in table.columns}
        if actual != expected:
            comparison.type_problem = f"{actual} != expected {expected}"
        compare_rows(table, source_rows, lake_rows, comparison)
        verdict = "equals" if comparison.equal else "DIFFERS FROM"
        say(f"{stage}: {config.database}.{lake_table} {verdict} {db.kind} {db.qualified(table.name)}: "
            f"{comparison.source_rows} source rows, {comparison.view_rows} view rows, {len(table.columns)} columns")
        results.append(comparison)
    return results


def assert_equal(comparisons: list[Comparison], *, keyed: bool | None = None) -> int:
    """Every comparison (optionally only of keyed or keyless tables) found the view equal; returns rows compared."""
    picked = [c for c in comparisons if keyed is None or bool(c.table.key) == keyed]
    assert picked, "nothing was compared"
    bad = [c for c in picked if not c.equal]
    assert not bad, "the view differs from the source:\n" + "\n".join(c.describe() for c in bad)
    total = sum(c.source_rows for c in picked)
    say(f"{len(picked)} comparisons, {total} rows equal: "
        + ", ".join(f"{c.stage}/{c.table.name}={c.source_rows}" for c in picked))
    return total


def jvm_cpu_seconds(spark) -> float:
    """CPU time the session's JVM used so far (less dependent on other load than wall time)."""
    try:
        proc = spark.sparkContext._gateway.proc
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # noqa: BLE001 - only for the printed timings
        return 0.0


def land(spark, config):
    from lakecompact.landing.land import land as land_

    started, cpu = time.monotonic(), jvm_cpu_seconds(spark)
    report = land_(spark, config)
    say(f"land: batch {report.batch}, {report.events_in} events in, rows out {report.rows_out}, "
        f"quarantined {report.quarantined}, {time.monotonic() - started:.1f}s "
        f"({jvm_cpu_seconds(spark) - cpu:.1f}s JVM CPU)")
    assert not report.quarantined, f"events were quarantined: {report.quarantined}"
    return report


def compact(spark, config):
    from lakecompact.compaction.compact import compact as compact_

    started, cpu = time.monotonic(), jvm_cpu_seconds(spark)
    reports = compact_(spark, config)
    say(f"compact: {time.monotonic() - started:.1f}s ({jvm_cpu_seconds(spark) - cpu:.1f}s JVM CPU)")
    return reports


def increments_landed_once(spark, config, db: SourceDb, tables: list[Table], messages: list[dict]) -> int:
    """Every non-tombstone Kafka message is in the lake's increments (pending or archived) exactly once."""
    from lakecompact.catalog import Catalog

    catalog = Catalog(spark, config)
    total = 0
    for table in tables:
        name = db.lake_table(table.name)
        paths, storage = catalog.paths(name), catalog.storage
        batches = [f"{root}/{hour}/{batch}"
                   for root in (paths.increments, f"{paths.root}/archive")
                   for hour in storage.list_names(root) if hour.startswith("hour=")
                   for batch in storage.list_names(f"{root}/{hour}") if batch.startswith("batch=")]
        landed = Counter()
        if batches:
            frame = spark.read.parquet(*batches).select("__kafka_partition", "__kafka_offset")
            landed.update((r["__kafka_partition"], r["__kafka_offset"]) for r in frame.collect())
        wanted = Counter((m["partition"], m["offset"]) for m in messages
                         if m["topic"] == db.topic(table.name) and m["payload"] is not None)
        twice = {k: n for k, n in landed.items() if n > 1}
        assert not twice, f"{name}: events landed more than once: {list(twice.items())[:5]}"
        assert set(landed) == set(wanted), (
            f"{name}: landed offsets differ from Kafka's: missing {sorted(set(wanted) - set(landed))[:5]}, "
            f"extra {sorted(set(landed) - set(wanted))[:5]}"
        )
        total += len(landed)
    return total


# ----------------------------------------------------------------------------------------------
# the saved fixtures (tests/fixtures/debezium)
# ----------------------------------------------------------------------------------------------
def save_fixture(name: str, db: SourceDb, tables: list[Table], messages: list[dict], first_batch: list[dict],
                 keys_per_table: dict[str, int] | None = None) -> None:
    """A few hundred real events in kcat -J form, and the rows the view must show after landing them.

    All events of a sample of keys are kept (the full history of a key is independent of other keys), chosen
    to cover every op, TOAST placeholders, the added columns and the transaction; the keyless table is kept
    whole. The expected rows are the source's rows of those keys, read from the source database.
    """
    FIXTURES.mkdir(parents=True, exist_ok=True)
    first_ids = {(m["topic"], m["partition"], m["offset"]) for m in first_batch}
    chosen: list[dict] = []
    expected_tables = {}
    for table in tables:
        topic = db.topic(table.name)
        msgs = [m for m in messages if m["topic"] == topic]
        if table.key:
            by_key: dict[str, list[dict]] = {}
            for m in msgs:
                by_key.setdefault(json.dumps(message_key(m), sort_keys=True), []).append(m)
            # every event of accounts carries the ~4 KB schema and often ~10 KB of text: fewer of its keys
            limit = (keys_per_table or {"accounts": 14}).get(table.name, 30)
            keys = _cover(by_key, limit)
            msgs = [m for m in msgs if json.dumps(message_key(m), sort_keys=True) in keys]
            wanted_keys = {tuple(json.loads(k)[c] for c in table.key) for k in keys}
        else:
            wanted_keys = None
        chosen += msgs
        source = [{c.name: canonical(c, r.get(c.name)) for c in table.columns} for r in db.rows(table)]
        if wanted_keys is not None:
            source = [r for r in source if tuple(r[k] for k in table.key) in wanted_keys]
        expected_tables[db.lake_table(table.name)] = {
            "source_table": db.qualified(table.name),
            "key": list(table.key),
            "columns": [[c.name, c.kind] for c in table.columns],
            "types": {c.name: spark_type(c.kind, db.connector_type) for c in table.columns},
            "rows": sorted(source, key=lambda r: json.dumps([r[k] for k in table.key] or r, sort_keys=True, default=str)),
        }
    chosen.sort(key=lambda m: ((m["topic"], m["partition"], m["offset"]) not in first_ids, m["topic"], m["offset"]))
    first_lines = sum(1 for m in chosen if (m["topic"], m["partition"], m["offset"]) in first_ids)
    with open(FIXTURES / f"{name}.jsonl", "w") as f:
        for m in chosen:
            f.write(json.dumps({k: m[k] for k in ("topic", "partition", "offset", "key", "payload")}) + "\n")
    counts = op_counts(chosen)
    (FIXTURES / f"{name}.expected.json").write_text(json.dumps({
        "about": f"real Debezium {db.connector_type} events from tests/e2e (written with {SAVE_FIXTURES_ENV}=1): "
                 f"the view after landing {name}.jsonl (first_batch_lines, compact, the rest, compact)",
        "connector": db.connector_type,
        "first_batch_lines": first_lines,
        "events": dict(sorted(counts.items())),
        "tables": expected_tables,
    }, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    say(f"saved {len(chosen)} real events ({dict(counts)}) to {FIXTURES / (name + '.jsonl')}")


def _cover(by_key: dict[str, list[dict]], limit: int) -> set[str]:
    """Keys whose histories cover the most kinds of event, smallest first among equals."""
    def features(msgs: list[dict]) -> set[str]:
        found = set()
        ops = [envelope(m)["op"] if envelope(m) else "tombstone" for m in msgs]
        found |= set(ops)
        if "d" in ops and ops[-1] in ("c", "r", "u") and ops.index("d") < len(ops) - 1:
            found.add("re-insert")
        if ops and ops[-1] in ("d", "tombstone"):
            found.add("deleted at the end")
        if any(PLACEHOLDER in (m["payload"] or "") for m in msgs):
            found.add("toast")
        if sum(1 for o in ops if o == "u") >= 3:
            found.add("many updates")
        for m in msgs:
            env = envelope(m)
            if env and env.get("after"):
                found |= {f"column {k}" for k, v in env["after"].items() if v is not None}
        return found

    size = {k: sum(len(m["payload"] or "") for m in msgs) for k, msgs in by_key.items()}
    feats = {k: features(msgs) for k, msgs in by_key.items()}
    chosen: set[str] = set()
    covered: set[str] = set()
    while len(chosen) < limit:
        # the most new kinds of event per byte: a few histories of the large TOASTed text, many small ones
        best = max((k for k in by_key if k not in chosen),
                   key=lambda k: (len(feats[k] - covered) / size[k], -size[k]), default=None)
        if best is None:
            break
        if not feats[best] - covered:
            # everything covered: fill with small histories, of several events first
            rest = sorted((k for k in by_key if k not in chosen), key=lambda k: (len(by_key[k]) == 1, size[k]))
            chosen |= set(rest[: limit - len(chosen)])
            break
        chosen.add(best)
        covered |= feats[best]
    return chosen


# ----------------------------------------------------------------------------------------------
# the scenario of test_postgres_to_lake and test_mariadb_to_lake
# ----------------------------------------------------------------------------------------------
INITIAL_ROWS = {"accounts": 30, "orders": 36, "audit": 8, "names": 3}


@dataclass
class Scenario:
    db: SourceDb
    workload: Workload
    config: Any = None
    comparisons: list[Comparison] = field(default_factory=list)
    first: list[dict] = field(default_factory=list)  # the messages of the first land
    messages: list[dict] = field(default_factory=list)  # all messages, at the end
    landed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def lake_tables(self) -> list[Table]:
        return [t for t in self.workload.tables if t.name != "names"]

    @property
    def topics(self) -> list[str]:
        return sorted(self.db.topic(t.name) for t in self.lake_tables)


def landed_positions(spark, config) -> dict[str, int]:
    """The Kafka positions ("topic:partition" -> next offset) the lake's last committed batch recorded."""
    from lakecompact.catalog import Catalog
    from lakecompact.storage import VersionedState

    catalog = Catalog(spark, config)
    _, state = VersionedState(catalog.storage, f"{catalog.root}/_state/land").latest()
    return dict((state or {}).get("kafka", {}))


def land_names_table(spark, stack, db: SourceDb, table: Table, tmp_path: Path) -> Comparison | str:
    """The `names` table landed alone: its comparison, or the error landing it raised."""
    config = lake_config(stack, tmp_path / "warehouse", f"names_{db.namespace}", [db.topic(table.name)])
    try:
        land(spark, config)
        return compare_with_source(spark, config, db, [table], f"{db.kind} columns named key and payload")[0]
    except Exception as exc:  # noqa: BLE001 - recorded for the test that expects it to work
        say(f"landing {db.topic(table.name)} failed: {type(exc).__name__}: {str(exc)[:300]}")
        return f"{type(exc).__name__}: {str(exc)[:2000]}"


def snapshot_and_connect(spark, stack, db: SourceDb, workload: Workload) -> list[dict]:
    """Tables with rows, then the connector; returns once its initial snapshot (op r) is all in Kafka."""
    db.create_namespace()
    db.run(workload.create_script(INITIAL_ROWS))
    db.register(workload.tables)
    stack.wait_connector_running(db.connector)
    return wait_delivered(spark, stack, [db], workload.expected_events(), {}, exact=True)


def write_phase(spark, stack, db: SourceDb, workload: Workload, ops: int, *, exact: bool = True, **features) -> list[dict]:
    db.run(workload.phase_script(ops, **features))
    marker, token = workload.marker_script()
    db.run(marker)
    messages = wait_delivered(spark, stack, [db], workload.expected_events(), {db.kind: token}, exact=exact)
    say(f"{db.kind}: {len(messages)} messages in Kafka after {dict(workload.ops)}: {dict(op_counts(messages))}")
    return messages


def source_to_lake(spark, stack, db: SourceDb, tmp_path: Path, seed: int, *, latest_lake: bool = False,
                   names_table: bool = False) -> Scenario:
    """Snapshot, workload, land, compact, compare; more workload, land, compare, compact, compare.

    Records every comparison instead of stopping at the first difference: each test then reports on its own
    part (tables with a key, the keyless table, Kafka, ...) with every difference found. `latest_lake`: also
    land, from a second lake with starting_offsets = "latest" and a topic pattern, what arrives after its first
    run. `names_table`: also capture a table with columns named `key` and `payload`, landed into a lake of its own.
    """
    started = time.monotonic()
    names = ("accounts", "orders", "audit", "names") if names_table else ("accounts", "orders", "audit")
    scenario = Scenario(db, Workload(db, seed, tables=names))
    workload = scenario.workload
    try:
        snapshot_and_connect(spark, stack, db, workload)
        scenario.first = write_phase(spark, stack, db, workload, 110, add_column="accounts", transaction=True,
                                     key_change=True)
        if latest_lake:
            pattern = re.escape(f"{db.topic_prefix}.{db.namespace}.") + "(accounts|orders|audit)"
            latest = lake_config(stack, tmp_path / "warehouse", f"latest_{db.namespace}", topic_pattern=pattern,
                                 starting_offsets="latest", kafka_options={"security.protocol": "PLAINTEXT"})
            scenario.extra["latest_start"] = end_offsets(spark, stack.KAFKA_BOOTSTRAP, scenario.topics)
            report = land(spark, latest)
            scenario.extra["latest_first_run"] = report.events_in
            scenario.extra["latest_recorded"] = landed_positions(spark, latest)
        if names_table:
            scenario.extra["names"] = land_names_table(spark, stack, db, workload.table("names"), tmp_path)
        config = scenario.config = lake_config(stack, tmp_path / "warehouse", f"lake_{db.namespace}", scenario.topics)
        land(spark, config)
        compact(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} compaction 1")

        scenario.messages = write_phase(spark, stack, db, workload, 70, add_column="orders", copy_earlier_row=True)
        land(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} landed, not compacted")
        compact(spark, config)
        scenario.comparisons += compare_with_source(spark, config, db, scenario.lake_tables, f"{db.kind} compaction 2")
        scenario.landed = increments_landed_once(spark, config, db, scenario.lake_tables, scenario.messages)
        if latest_lake:  # what the next run of the "latest" lake would land: all that came after its first run
            from lakecompact.landing import kafka

            scenario.extra["latest_next_plan"] = kafka.plan(spark, latest.source, scenario.extra["latest_recorded"])
            scenario.extra["latest_end"] = end_offsets(spark, stack.KAFKA_BOOTSTRAP, scenario.topics)
        if os.environ.get(SAVE_FIXTURES_ENV) == "1":
            save_fixture(db.kind, db, scenario.lake_tables, scenario.messages, scenario.first)
            if names_table:
                names = [m for m in scenario.messages if m["topic"] == db.topic("names")]
                save_fixture(f"{db.kind}_names", db, [workload.table("names")], names, names)
        scenario.seconds = time.monotonic() - started
        say(f"{db.kind}: scenario done in {scenario.seconds:.0f}s ({jvm_cpu_seconds(spark):.0f}s JVM CPU so far)")
        return scenario
    finally:
        try:
            db.unregister()
        finally:
            db.drop_namespace()


# ----------------------------------------------------------------------------------------------
# the scenario of test_restarts: Kafka Connect killed mid-workload, `land` crashed mid-batch
# ----------------------------------------------------------------------------------------------
@dataclass
class Restarts:
    dbs: list[SourceDb]
    workloads: dict[str, Workload]
    comparisons: list[Comparison] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)
    landed: int = 0
    facts: dict[str, Any] = field(default_factory=dict)

    def tables(self, db: SourceDb) -> list[Table]:
        return self.workloads[db.kind].tables

    @property
    def topics(self) -> list[str]:
        return sorted(db.topic(t.name) for db in self.dbs for t in self.tables(db))


def expected_events(workloads: dict[str, Workload]) -> dict[str, int]:
    return {topic: n for w in workloads.values() for topic, n in w.expected_events().items()}


class Writer(threading.Thread):
    """Runs statements against the source databases in small scripts, alternating between them."""

    def __init__(self, jobs: list[tuple[SourceDb, Workload, list[str]]], chunk: int = 3, pause: float = 0.1):
        super().__init__(daemon=True)
        per_db = [[(db, workload._script("".join(statements[i:i + chunk]))) for i in range(0, len(statements), chunk)]
                  for db, workload, statements in jobs]
        self.scripts = [item for group in itertools.zip_longest(*per_db) for item in group if item]
        self.pause, self.done, self.error = pause, 0, None

    def run(self):
        try:
            for db, script in self.scripts:
                db.run(script)
                self.done += 1
                time.sleep(self.pause)  # pacing: the workload is spread over a few seconds, so Connect dies mid-way
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def kill_connect_mid_workload(spark, stack, restarts: Restarts, ops: int) -> dict:
    """Writes go on while Connect is killed (SIGKILL) as soon as their events flow into Kafka."""
    jobs = [(db, restarts.workloads[db.kind], restarts.workloads[db.kind].phase_statements(ops, transaction=True))
            for db in restarts.dbs]
    before = end_offsets(spark, stack.KAFKA_BOOTSTRAP, restarts.topics)
    wanted = sum(before.values()) + 10
    writer = Writer(jobs)
    writer.start()
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    previous = sum(before.values())
    while True:
        total = sum(end_offsets(spark, stack.KAFKA_BOOTSTRAP, restarts.topics).values())
        if total >= wanted and total > previous:  # events arrived since the last poll: some are not committed yet
            break
        assert writer.is_alive() or total < wanted, "the workload ended before Connect could be killed mid-way"
        assert time.monotonic() < deadline, f"no events reached Kafka ({total} of {wanted})"
        previous = total
        time.sleep(0.1)
    stack.kill_connect()
    at_kill = {"scripts_done": writer.done, "scripts": len(writer.scripts), "messages": total}
    say(f"killed Kafka Connect (SIGKILL) after {writer.done} of {len(writer.scripts)} workload scripts, "
        f"{total - sum(before.values())} new messages in Kafka")
    writer.join(timeout=600)
    assert writer.error is None, f"workload failed: {writer.error}"
    return at_kill


def crash_landing_mid_batch(spark, config) -> dict:
    """`land` dies right after the batch's first table's increment is written and registered, before the other
    tables and the commit (DESIGN: the intent is written first; a rerun lands the same batch again)."""
    from lakecompact.landing import land as land_module

    calls = []
    original = land_module.Landing._write_increment

    def write_then_crash(self, table, rows, batch, hour):
        original(self, table, rows, batch, hour)  # written and registered in the metastore ...
        calls.append(table)
        raise SimulatedCrash(f"crash after writing {table} in batch {batch}")  # ... then the process dies

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(land_module.Landing, "_write_increment", write_then_crash)
        with pytest.raises(SimulatedCrash):
            land(spark, config)
    landing = land_module.Landing(spark, config)
    intent = landing.storage.read_json(landing.intent_path) if landing.storage.exists(landing.intent_path) else None
    say(f"land crashed mid-batch after writing {calls}; intent left: batch {intent and intent['batch']}")
    return {"written_before_crash": calls, "intent": intent}


def crash_after_commit(spark, config) -> dict:
    """`land` dies after its state file is written, before it removes the intent (the next run must see that the
    intent's batch was committed, and not land it again)."""
    from lakecompact.storage import Storage

    original = Storage.delete
    crashed = []

    def delete_or_crash(self, path):
        if path.endswith("land-intent.json") and not crashed:
            crashed.append(path)
            raise SimulatedCrash("crash before removing the intent")
        return original(self, path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Storage, "delete", delete_or_crash)
        try:
            report = land(spark, config)
        except SimulatedCrash:
            report = None
    return {"crashed": bool(crashed), "report": report}


class SimulatedCrash(RuntimeError):
    pass


MAX_EVENTS_PER_BATCH = 120


def restarts_scenario(spark, stack, tmp_path: Path, seeds: dict[str, int]) -> Restarts:
    started = time.monotonic()
    dbs = [Postgres(stack, unique("e2e_rpg")), MariaDb(stack, unique("e2e_rmaria"))]
    tables = {"postgres": ("accounts", "audit"), "mariadb": ("accounts",)}  # a keyless table once is enough
    workloads = {db.kind: Workload(db, seeds[db.kind], tables=tables[db.kind], equal_rows=False) for db in dbs}
    result = Restarts(dbs, workloads)
    try:
        for db in dbs:
            db.create_namespace()
            db.run(workloads[db.kind].create_script({"accounts": 20, "audit": 5}))
            db.register(workloads[db.kind].tables)
        for db in dbs:
            stack.wait_connector_running(db.connector)
        wait_delivered(spark, stack, dbs, expected_events(workloads), {}, exact=True)

        config = lake_config(stack, tmp_path / "warehouse", unique("restarts"),
                             topic_pattern="|".join(re.escape(f"{db.topic_prefix}.") + ".*" for db in dbs),
                             max_events_per_batch=MAX_EVENTS_PER_BATCH)
        result.facts["kills"] = []
        for attempt in range(1, 4):
            # 1. Connect dies while the workload runs (the first time: what reached Kafka is landed, with a
            # crash right after the batch's commit, and compacted while Connect is down)
            result.facts["kills"].append(kill_connect_mid_workload(spark, stack, result, 60))
            if attempt == 1:
                result.facts["after_commit"] = crash_after_commit(spark, config)
                compact(spark, config)
            # 2. Connect comes back; Debezium sends again what it had not committed when it died
            stack.start_connect()
            for db in dbs:
                stack.wait_connector_running(db.connector)
            markers = {}
            for db in dbs:
                marker, markers[db.kind] = workloads[db.kind].marker_script()
                db.run(marker)
            messages = wait_delivered(spark, stack, dbs, expected_events(workloads), markers, exact=False)
            for db in dbs:
                mine = [m for m in messages if m["topic"].startswith(f"{db.topic_prefix}.")]
                result.duplicates[db.kind] = duplicates(mine)
            say(f"kill {attempt}: events delivered more than once after the restart: {result.duplicates}")
            if sum(result.duplicates.values()):
                break  # else Connect had committed its offsets just before it died: kill it again

        # 3. more workload, with a column added
        markers = {}
        for db in dbs:
            workload = workloads[db.kind]
            db.run(workload.phase_script(40, add_column="accounts"))
            marker, markers[db.kind] = workload.marker_script()
            db.run(marker)
        result.messages = wait_delivered(spark, stack, dbs, expected_events(workloads), markers, exact=False)

        # 4. land (which first finds batch 1's intent committed) crashes mid-batch and is run again
        result.facts["crash"] = crash_landing_mid_batch(spark, config)
        result.facts["rerun"] = land(spark, config)
        result.facts["more"] = []  # max_events_per_batch: the rest comes in more batches, each run lands one
        while len(result.facts["more"]) < 10:
            report = land(spark, config)
            result.facts["more"].append(report)
            if report.batch is None:
                break
        compact(spark, config)
        for db in dbs:
            result.comparisons += compare_with_source(spark, config, db, result.tables(db), f"{db.kind} after restarts")
            result.landed += increments_landed_once(spark, config, db, result.tables(db), result.messages)
        say(f"restarts: scenario done in {time.monotonic() - started:.0f}s ({jvm_cpu_seconds(spark):.0f}s JVM CPU so far)")
        return result
    finally:
        stack.start_connect()  # no-op when it runs
        for db in dbs:
            try:
                db.unregister()
            finally:
                db.drop_namespace()
