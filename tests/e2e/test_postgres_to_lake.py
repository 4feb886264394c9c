"""PostgreSQL → Debezium → Kafka → `lakecompact land` (Kafka source) → compact: the view equals the table.

Tables in a schema of their own: `accounts` (primary key; numeric(12,2) and numeric(30,10), date,
timestamp(6), timestamptz, boolean, double, and a ~10 KB TEXT column kept out of line by TOAST under REPLICA
IDENTITY DEFAULT, which updates that leave it alone send as `__debezium_unavailable_value`), `orders`
(composite primary key, timestamp(3), a primary-key change) and `audit` (no primary key: insert-only, as
PostgreSQL refuses updates of such a table under a publication; some rows equal in every column). Rows exist
before the connector starts (the snapshot, op r); then a seeded random workload: inserts, updates, deletes,
re-inserts of deleted keys, one transaction that updates a key several times, one column added to `accounts`
halfway through the first phase and one to `orders` in the second. Land, compact, compare; more workload,
land, compare (base + pending increments), compact, compare: row by row, column by column, and the column
types DESIGN asks for. The counts compared are printed.

Also from the same run: a second lake with starting_offsets = "latest" and a topic pattern lands exactly what
arrived after its first run, and a table with columns named `key` and `payload` lands like any other.
Set LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES=1 to rewrite tests/fixtures/debezium/postgres.* from this run.
"""

from __future__ import annotations

import pytest

from tests.e2e import support

pytestmark = pytest.mark.e2e

SEED = 20260415


@pytest.fixture(scope="module")
def scenario(stack, spark, e2e_spark, tmp_path_factory):
    session = support.check_session(spark, e2e_spark)
    db = support.Postgres(stack, support.unique("e2e_pg"))
    return support.source_to_lake(session, stack, db, tmp_path_factory.mktemp("pg"), SEED, latest_lake=True,
                                  names_table=True)


def test_tables_with_a_key_equal_the_source_after_each_step(scenario):
    assert support.assert_equal(scenario.comparisons, keyed=True) > 0


def test_table_without_a_key_equals_the_source_after_each_step(scenario):
    """Append-only: every insert is a row, rows equal in every column too (in one batch, and one repeating a
    row of the first batch in the second)."""
    assert scenario.workload.copies_of_earlier_rows, "the workload copied no row of an earlier batch"
    assert support.assert_equal(scenario.comparisons, keyed=False) > 0


def test_debezium_sent_every_kind_of_event(scenario):
    ops = support.op_counts(scenario.messages)
    for needed in ("r", "c", "u", "d", "tombstone", "toast placeholder"):
        assert ops[needed] > 0, f"the workload made no {needed!r} events: {dict(ops)}"
    support.say(f"postgres events: {dict(ops)}")


def test_every_event_landed_exactly_once(scenario):
    events = sum(1 for m in scenario.messages if m["payload"] is not None and m["topic"] in scenario.topics)
    assert scenario.landed == events > 0


def test_starting_offsets_latest_starts_at_the_end_then_takes_all_that_came_after(scenario):
    """A lake with starting_offsets = "latest" (and a topic pattern, and a Kafka client option): its first run
    lands nothing but records where each partition ended; its next run takes everything from there."""
    extra = scenario.extra
    assert extra["latest_first_run"] == 0
    start = {f"{topic}:0": offset for topic, offset in extra["latest_start"].items()}
    assert extra["latest_recorded"] == start
    end = {f"{topic}:0": offset for topic, offset in extra["latest_end"].items()}
    assert extra["latest_next_plan"] == {name: {"start": start[name], "end": end[name]} for name in end}
    assert all(end[name] > start[name] for name in end)


def test_columns_named_key_and_payload(scenario):
    outcome = scenario.extra["names"]
    assert not isinstance(outcome, str), outcome
    support.assert_equal([outcome])
