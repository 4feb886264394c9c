"""The command-line contract (DESIGN "Contract"): `python -m lakecompact --config FILE land|compact|sql|status`
with a minimal TOML config, rows printed as JSON lines, and clear errors for a bad config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
import sqlglot

from tests.support.debezium import DATE, INT, TEXT, Topic, decimal, decimal_wire, write_kcat

ROOT = Path(__file__).resolve().parents[1]


def lakecompact(config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR"}
    return subprocess.run(
        [sys.executable, "-m", "lakecompact", "--config", str(config), *args],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )


def minimal_config(tmp_path: Path, extra: str = "") -> Path:
    config = tmp_path / "lakecompact.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\n'
        'database  = "lake"\n'
        f"{extra}"
        "[source]\n"
        'kind  = "files"\n'
        f'paths = ["{tmp_path / "events"}/*.jsonl"]\n'
    )
    return config


def days(d: date) -> int:
    return (d - date(1970, 1, 1)).days


@pytest.mark.spark  # each command starts Spark in its own process: not for the quick `-m "not spark"` loop
def test_land_compact_sql_status(tmp_path):
    config = minimal_config(tmp_path)
    (tmp_path / "events").mkdir()
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT), ("price", decimal(10, 2)), ("day", DATE)], ["id"])
    write_kcat(tmp_path / "events" / "part-1.jsonl", [
        pg.event("c", {"id": 1, "name": "a", "price": decimal_wire("12.50", 2), "day": days(date(2024, 1, 2))}, 10),
        pg.event("c", {"id": 2, "name": None, "price": decimal_wire("0.99", 2), "day": days(date(2024, 1, 3))}, 20),
        pg.event("c", {"id": 3, "name": "c", "price": decimal_wire("1", 2), "day": days(date(2024, 1, 4))}, 30),
        pg.event("u", {"id": 1, "name": "a2", "price": decimal_wire("-3.10", 2), "day": days(date(2024, 2, 1))}, 40),
        pg.event("d", {"id": 3, "name": "c", "price": decimal_wire("1", 2), "day": days(date(2024, 1, 4))}, 50),
        pg.tombstone({"id": 3}),
    ])

    landed = lakecompact(config, "land")
    assert landed.returncode == 0, landed.stderr
    compacted = lakecompact(config, "compact")
    assert compacted.returncode == 0, compacted.stderr

    query = "SELECT id, name, price, day, __op, __deleted FROM lake.public_items ORDER BY id"
    result = lakecompact(config, "sql", query)
    assert result.returncode == 0, result.stderr
    # exactly what DataFrame.toJSON() writes: column order, decimals as numbers, null fields left out
    assert result.stdout.splitlines() == [
        '{"id":1,"name":"a2","price":-3.10,"day":"2024-02-01","__op":"u","__deleted":false}',
        '{"id":2,"price":0.99,"day":"2024-01-03","__op":"c","__deleted":false}',
    ]

    status = lakecompact(config, "status", "--json")
    assert status.returncode == 0, status.stderr
    [row] = [json.loads(line) for line in status.stdout.splitlines()]
    assert row["table"] == "lake.public_items"
    assert row["key"] == ["id"]
    assert row["base_version"] == 1
    assert (row["base_rows"], row["live_rows"]) == (3, 2)  # key 3 kept as a soft-deleted row
    assert (row["pending_batches"], row["pending_events"], row["quarantined"]) == (0, 0, 0)

    for dialect in ("hive", "trino"):
        views = lakecompact(config, "views", "--dialect", dialect)
        assert views.returncode == 0, views.stderr
        [statement] = [s for s in sqlglot.parse(views.stdout, read=dialect) if s]
        assert statement.sql(dialect=dialect).startswith("CREATE OR REPLACE VIEW")
        assert statement.this.sql(dialect="spark") == "lake.public_items", views.stdout[:200]


@pytest.mark.parametrize(
    "extra, section, key, expected",
    [
        ("[defaults]\nbuckets = \"eight\"\n", "", "defaults.buckets", "a whole number"),
        ("", 'path = ["/tmp/x/*.jsonl"]\n', "source.path", "paths"),  # unknown key: the close one is named
        ("databse = \"lake\"\n", "", "databse", "database"),
    ],
    ids=["wrong-type", "unknown-key-in-section", "unknown-top-level-key"],
)
def test_bad_config_exits_non_zero_naming_the_key(tmp_path, extra, section, key, expected):
    config = minimal_config(tmp_path, extra)
    if section:
        config.write_text(config.read_text() + section)
    result = lakecompact(config, "status")
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("lakecompact: error:"), result.stderr
    assert key in message and expected in message, message
    assert "Traceback" not in result.stderr
