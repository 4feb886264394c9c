"""The command-line contract, and kill -9 inside the commit protocols: a real `lakecompact` process killed (SIGKILL)
right after a named step, then the same command run again: the view is exact, nothing is visible twice, nothing is
left behind.

Every step can be killed at (LAKECOMPACT_KILL_AT=<step>, lakecompact/crashpoints.py); each process start
costs a JVM, so the suite kills at one step of each protocol where the most is half done."""

from __future__ import annotations

import json
from datetime import date

import pytest
import sqlglot

from lakecompact.crashpoints import STEPS
from lakecompact.spark import ONE_SHOT_JIT
from tests.support.cli import ROOT, killed, minimal_config, sql_lines
from tests.support.cli import lakecompact as run
from tests.support.debezium import DATE, INT, TEXT, Topic, days, decimal, decimal_wire, write_kcat
from tests.support.layout import archived_batches, batch_folders, unconsumed_batches

pytestmark = pytest.mark.spark


def test_every_step_has_a_kill_point():
    source = "".join(p.read_text() for stage in ("landing", "compaction") for p in (ROOT / "lakecompact" / stage).glob("*.py"))
    assert all(f'crashpoints.reached("{step}")' in source for step in STEPS)


def test_the_command_line_contract_with_kills_inside_land_and_compact(tmp_path):
    """land, compact, sql, status and views as a user runs them (docs/design.md "Contract"), each of land and compact first
    killed half-way; one history, so that every process start (a JVM each) checks as much as it can. The table keeps
    row history, so the compaction killed half-way is one that also writes it (docs/design.md "Row history")."""
    config = minimal_config(tmp_path, "[defaults]\nrow_history = true\n")
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
    # exactly what `sql` prints: column order, decimals as numbers, a null printed as null (not left out)
    expected = [
        '{"id":1,"name":"a2","price":-3.10,"day":"2024-02-01","__op":"u","__deleted":false}',
        '{"id":2,"name":null,"price":0.99,"day":"2024-01-03","__op":"c","__deleted":false}',
    ]
    query = "SELECT id, name, price, day, __op, __deleted FROM lake.public_items ORDER BY id"

    assert killed(run(config, "land", kill_at="partitions-added"))  # the increment registered, no offsets
    rerun = run(config, "land")
    assert rerun.returncode == 0, rerun.stderr
    assert "land: batch 1 was interrupted; landing the same input again" in rerun.stdout

    assert killed(run(config, "compact", kill_at="swap"))  # committed, nothing archived or collected
    # base v1 and its not yet archived increment: each key once
    assert sql_lines(config, query) == expected
    finished = run(config, "compact")
    assert finished.returncode == 0, finished.stderr
    assert "nothing pending (base v1)" in finished.stdout  # the killed run's version stands, finished by this one
    assert sql_lines(config, query) == expected  # the base alone, the increment archived
    # as of the events' source time (1,700,000,000 s), the row history holds what the view holds
    as_of = run(config, "sql", "--as-of", "2023-11-14 22:13:20", "SELECT id, name FROM lake.public_items ORDER BY id")
    assert as_of.returncode == 0, as_of.stderr
    assert as_of.stdout.splitlines() == ['{"id":1,"name":"a2"}', '{"id":2,"name":null}']

    status = run(config, "status", "--json")
    assert status.returncode == 0, status.stderr
    [row] = [json.loads(line) for line in status.stdout.splitlines()]
    assert row["table"] == "lake.public_items"
    assert row["key"] == ["id"]
    assert row["base_version"] == 1
    assert (row["base_rows"], row["live_rows"]) == (3, 2)  # key 3 kept as a soft-deleted row
    assert (row["pending_batches"], row["pending_events"], row["quarantined"]) == (0, 0, 0)
    assert row["change_feed_versions"] == [1] and row["last_compaction"] and row["last_compaction_seconds"] > 0

    history = run(config, "history", "--table", "public_items", "--json")  # read from the manifests: no JVM
    assert history.returncode == 0, history.stderr
    [v1] = [json.loads(line) for line in history.stdout.splitlines()]
    assert (v1["version"], v1["state"], v1["events_in"], v1["rows"], v1["live_rows"]) == (1, "current", 5, 3, 2)
    unknown = run(config, "history", "--table", "nope")
    assert (unknown.returncode, unknown.stderr.strip()) == (2, "lakecompact: error: unknown table 'nope'; known tables: public_items")

    # row history is on: Trino gets `<t>_history` too, Hive has no form of it and says so
    for dialect, names in (("hive", ["lake.public_items"]), ("trino", ["lake.public_items", "lake.public_items_history"])):
        views = run(config, "views", "--dialect", dialect)
        assert views.returncode == 0, views.stderr
        statements = [s for s in sqlglot.parse(views.stdout, read=dialect) if s]
        assert all(s.sql(dialect=dialect).startswith("CREATE OR REPLACE VIEW") for s in statements)
        assert [s.this.sql(dialect="spark") for s in statements] == names, views.stdout[:200]
        skipped = "public_items_history (row_history) has a form for spark, trino, athena only"
        assert (skipped in views.stderr) == (dialect == "hive"), views.stderr

    table = tmp_path / "warehouse" / "lake" / "public_items"
    assert sorted(p.name for p in (table / "base").iterdir()) == ["v=1"]  # no orphan version
    assert not (table / "changes" / "_staging").exists() or not any((table / "changes" / "_staging").iterdir())
    assert not unconsumed_batches(table)  # everything landed was consumed, and archived
    assert batch_folders(table) == ["batch=1"] and archived_batches(table) == [1]  # landed once
    assert not (tmp_path / "warehouse" / "lake" / "_state" / "land-intent.json").exists()


def test_a_history_killed_at_each_step_of_compaction_is_exact_after_the_runs_that_follow(tmp_path):
    """Row history through six `lakecompact run` processes, each given a new batch of events (late, redelivered,
    deleted and re-inserted keys) and killed (SIGKILL) at one of the compaction's steps, in their order; each run
    first finishes what the one before left. Then a `compact`: every version of every key, begun and ended at
    its source time, and `sql --as-of` a moment between a change and a late event's splice."""
    # each `run` is killed within its first round: C1 alone, as the one-shot commands' JVMs have it (a `run`'s JVM
    # keeps C2 for the long life it has in production)
    config = minimal_config(tmp_path, "[defaults]\nrow_history = true\n"
                                      "[run]\ncompact_after_batches = 1\ninterval_seconds = 3600\nmetrics_port = 0\n"
                                      f'[spark.conf]\n"spark.driver.extraJavaOptions" = "{" ".join(ONE_SHOT_JIT)}"\n')
    (tmp_path / "events").mkdir()
    pg, t = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"]), 1_700_000_000_000

    def change(op: str, id_: int, name: str | None, lsn: int) -> dict:
        return pg.event(op, {"id": id_, "name": name}, lsn, ts_ms=t + lsn)

    batches = [
        [change("c", 1, "a", 100), change("c", 2, "b", 110)],
        [change("u", 1, "a2", 200), change("d", 2, "b", 210)],
        [change("u", 1, "a1", 150), change("c", 1, "a", 100)],  # late; a redelivery
        [change("c", 3, "c", 300), change("c", 2, "b2", 310)],  # a key deleted before, inserted again
        [change("u", 3, "c2", 400), change("u", 1, "a2", 200)],  # a redelivery
        [change("d", 1, "a2", 500), change("u", 2, "b3", 510)],
    ]
    steps = STEPS[STEPS.index("version-written"):]
    assert len(steps) == len(batches) == 6
    for n, (step, batch) in enumerate(zip(steps, batches, strict=True)):
        write_kcat(tmp_path / "events" / f"part-{n}.jsonl", batch)
        result = run(config, "run", kill_at=step)
        assert killed(result), f"run not killed at {step}: {result.returncode}\n{result.stdout}\n{result.stderr}"
    finished = run(config, "compact")
    assert finished.returncode == 0, finished.stderr

    versions = sql_lines(config, "SELECT id, name, unix_millis(__valid_from) - 1700000000000 AS f, "
                                 "unix_millis(__valid_to) - 1700000000000 AS t FROM lake.public_items_history "
                                 "ORDER BY id, f")
    assert [json.loads(line) for line in versions] == [
        {"id": 1, "name": "a", "f": 100, "t": 150}, {"id": 1, "name": "a1", "f": 150, "t": 200},
        {"id": 1, "name": "a2", "f": 200, "t": 500},
        {"id": 2, "name": "b", "f": 110, "t": 210}, {"id": 2, "name": "b2", "f": 310, "t": 510},
        {"id": 2, "name": "b3", "f": 510, "t": None},
        {"id": 3, "name": "c", "f": 300, "t": 400}, {"id": 3, "name": "c2", "f": 400, "t": None},
    ]
    as_of = run(config, "sql", "--as-of", "2023-11-14 22:13:20.205", "SELECT id, name FROM lake.public_items ORDER BY id")
    assert as_of.returncode == 0, as_of.stderr
    assert as_of.stdout.splitlines() == ['{"id":1,"name":"a2"}', '{"id":2,"name":"b"}']
    assert sql_lines(config, "SELECT id, name FROM lake.public_items ORDER BY id") == [
        '{"id":2,"name":"b3"}', '{"id":3,"name":"c2"}']
    status = run(config, "status", "--json")
    [row] = [json.loads(line) for line in status.stdout.splitlines()]
    assert (row["history_rows"], row["history_events"], row["pending_batches"]) == (8, 12, 0)
