"""`lakecompact verify` as an operator runs it: processes against the stack's PostgreSQL, on a lake landed from
the shipped examples. The source table holds one row as the lake does, one with another email, not the lake's
key 4, and a key the lake never saw: verify prints each by kind, writes them to `<t>_verify`, `status` counts
them, and it exits 1; a
source table that is not there is one line, exit 2; a database that does not answer one line, exit 6. (The lake against real Debezium, PostgreSQL and MariaDB, all
column types, equal and damaged: test_postgres_to_lake and test_mariadb_to_lake.) The package installed from its
wheel, outside the checkout, lands and verifies a table equal to its source."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from tests.e2e.support.common import unique
from tests.support.cli import ROOT, lakecompact, minimal_config, sql_lines
from tests.support.wheel import build_wheel, install_in_venv


def _config(tmp_path, stack, source_table: str, *, port: int | None = None, settle: int = 0):
    """settle 0: the lake is landed from the example's files, not from this database's log."""
    s = stack.POSTGRES
    return minimal_config(tmp_path, extra=(
        "[verify]\n"
        f'jdbc_url = "jdbc:postgresql://{s.host}:{port or s.port}/{s.database}"\n'
        f'user = "{s.user}"\n'
        f'password = "{s.password}"\n'
        f"settle_seconds = {settle}\n"
        "[spark.conf]\n"
        f'"spark.jars" = "{",".join(stack.jdbc_jars())}"\n'
        "[tables.public_customers]\n"
        f'source_table = "{source_table}"\n'))


def _values(row: dict) -> str:
    """A lake row of public_customers as the values of an INSERT into its source table."""
    return ", ".join("NULL" if v is None else "'" + str(v).replace("'", "''") + "'"
                     for v in (row["id"], row["name"], row["email"], row["bio"], row["signed_up"]))


def _create_source(stack, schema: str, rows: str) -> None:
    stack.pg_sql(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.customers (id int PRIMARY KEY, name text, "
                 f"email text, bio text, signed_up date);\nINSERT INTO {schema}.customers VALUES {rows};")


def _closed_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stderr(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if not line.startswith("lakecompact verify: finished")]


@pytest.mark.e2e
def test_verify_prints_what_differs_by_kind_writes_it_and_exits_1(stack, tmp_path):
    (tmp_path / "events").mkdir()
    shutil.copy(ROOT / "examples" / "events" / "part-1.jsonl", tmp_path / "events")
    schema = unique("e2e_verify")
    config = _config(tmp_path, stack, f"{schema}.customers")
    landed = lakecompact(config, "land")
    assert landed.returncode == 0, landed.stderr
    rows = {r["id"]: r for r in map(json.loads, sql_lines(
        config, "SELECT id, name, email, bio, signed_up FROM lake.public_customers")) if "id" in r}
    assert sorted(rows) == [1, 2, 4]

    _create_source(stack, schema, f"({_values(rows[1])}), ({_values({**rows[2], 'email': 'changed@example.com'})}), "
                                  "(9, 'never landed', NULL, NULL, NULL)")
    try:
        result = lakecompact(config, "verify", "--table", "public_customers")
        missing_table = lakecompact(_config(tmp_path, stack, f"{schema}.nope"), "verify", "--table", "public_customers")
        closed = _closed_port()
        # settle_seconds > 0: the source's log position is read first, over a connection of its own
        unreachable = lakecompact(_config(tmp_path, stack, f"{schema}.customers", port=closed, settle=120), "verify")
    finally:
        stack.pg_sql(f"DROP SCHEMA {schema} CASCADE;")

    assert result.returncode == 1, result.stderr
    found = [line.strip() for line in result.stdout.splitlines() if line.startswith("  public_customers: ")]
    assert found == [
        'public_customers: missing in the lake: key ["9"]',
        'public_customers: extra in the lake: key ["4"]',
        ('public_customers: different values: key ["2"]: email: source "changed@example.com", lake '
        f'{json.dumps(rows[2]["email"])}'),
    ]
    assert "DIFFERENT: 1 missing in the lake, 1 extra in the lake, 1 different values (3 source rows, 3 lake rows" \
        in result.stdout
    [line] = _stderr(result)
    assert line.startswith("lakecompact: error: verify: 1 of 1 tables differ from the source: public_customers; "
                           "what differs is in `lake`.`public_customers_verify`")
    written = sorted(sql_lines(config, "SELECT kind, key, columns FROM lake.public_customers_verify"))
    assert written == sorted(json.dumps(r, separators=(",", ":")) for r in (
        {"kind": "missing in the lake", "key": '["9"]', "columns": []},
        {"kind": "extra in the lake", "key": '["4"]', "columns": []},
        {"kind": "different values", "key": '["2"]', "columns": ["email"]}))

    status = lakecompact(config, "status", "--json")
    [row] = [r for r in map(json.loads, status.stdout.splitlines()) if r["table"] == "lake.public_customers"]
    assert row["verify_divergent"] == 3 and row["verified_at"] is not None

    assert unreachable.returncode == 6, unreachable.stderr
    assert _stderr(unreachable) == [
        (f"lakecompact: error: verify: connecting to jdbc:postgresql://{stack.POSTGRES.host}:{closed}/"
        f"{stack.POSTGRES.database}: the database did not answer: Connection refused")]

    assert missing_table.returncode == 2, missing_table.stderr
    assert _stderr(missing_table) == [
        (f"lakecompact: error: verify public_customers: reading {schema}.nope from jdbc:postgresql://"
        f"{stack.POSTGRES.host}:{stack.POSTGRES.port}/{stack.POSTGRES.database}: ERROR: relation "
        f'"{schema}.nope" does not exist')]


@pytest.mark.e2e
def test_the_installed_package_verifies_a_table_equal_to_its_source(stack, tmp_path):
    """Installed from its wheel in a venv outside the checkout, run from a folder outside it: `land` and `verify`
    against the stack's PostgreSQL (the JDBC driver named in the config, as a user names it)."""
    python = install_in_venv(build_wheel(tmp_path / "wheel"), tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "events").mkdir()
    shutil.copy(ROOT / "examples" / "events" / "part-1.jsonl", tmp_path / "events")
    schema = unique("e2e_verify_installed")
    config = _config(tmp_path, stack, f"{schema}.customers")
    landed = lakecompact(config, "land", python=python, cwd=work)
    assert landed.returncode == 0, landed.stderr
    rows = [json.loads(line) for line in sql_lines(
        config, "SELECT id, name, email, bio, signed_up FROM lake.public_customers ORDER BY id")]
    assert [r["id"] for r in rows] == [1, 2, 4]
    _create_source(stack, schema, ", ".join(f"({_values(r)})" for r in rows))
    try:
        result = lakecompact(config, "verify", "--table", "public_customers", python=python, cwd=work)
    finally:
        stack.pg_sql(f"DROP SCHEMA {schema} CASCADE;")
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("verify lake.public_customers")]
    assert line.startswith(f"verify lake.public_customers against {schema}.customers: equal (3 source rows, 3 lake "
                           "rows, 0 of "), result.stdout
