"""The workload: a seeded random mix of statements, kept in a model to know which keys exist and how many
events Debezium makes of them."""

from __future__ import annotations

import datetime as dt
import random
import string
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.support.columns import Column, Table, scaled
from tests.e2e.support.sources import SourceDb

_TEXT_ALPHABET = string.ascii_letters + string.digits + "      ,.;:-!?()" + "éüßøñ€ж"


def required(**kinds: str) -> list[Column]:
    """NOT NULL columns, `name=kind`, in that order."""
    return [Column(name, kind, nullable=False) for name, kind in kinds.items()]


def nullable(**kinds: str) -> list[Column]:
    """Columns that may be NULL, `name=kind`, in that order."""
    return [Column(name, kind) for name, kind in kinds.items()]


def accounts_table(db: SourceDb) -> Table:
    """Primary key, exact decimals, date and time kinds, and `notes`: ~10 KB of text for about half the rows."""
    cols = [
        *required(id="int", name="varchar:60"),
        *nullable(balance="dec:12:2", big="dec:30:10", opened="date", updated_at="ts6", seen_at="tstz",
                  active="bool", score="double", notes="text"),
    ]
    if db.kind == "mariadb":
        cols.insert(8, Column("flag", "bit"))  # BIT(1): a Connect boolean (BOOLEAN is TINYINT(1), an INT16)
    return Table("accounts", tuple(cols), ("id",))


def orders_table(db: SourceDb) -> Table:
    return Table("orders", (
        *required(order_id="int", line="smallint"),
        *nullable(sku="varchar:20", qty="int", unit_price="dec:10:2", discount="dec:5:4", due="date",
                  created="ts3", shipped_at="tstz", paid="bool"),
    ), ("order_id", "line"))


def audit_table(db: SourceDb) -> Table:
    """No primary key: insert-only (PostgreSQL refuses updates of such a table under a publication)."""
    return Table("audit", (
        *nullable(seq="bigint", kind="varchar:20", amount="dec:9:3", at="tstz", body="text"),
    ), ())


def names_table(db: SourceDb) -> Table:
    """Columns named `key` and `payload`: ordinary names in a source table (snapshot rows only)."""
    return Table("names", (*required(id="int"), *nullable(key="varchar:20", payload="text")), ("id",))


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
            return scaled(unscaled, s)
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
        return self.db.script_header() + sql

    def expected_events(self) -> dict[str, int]:
        return {self.db.topic(name): m.events for name, m in self.models.items()}
