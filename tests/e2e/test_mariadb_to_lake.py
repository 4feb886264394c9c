"""MariaDB → Debezium → Kafka → `lakecompact land` (Kafka source) → compact: the view equals the table.

The scenario of test_postgres_to_lake, in a MariaDB database of its own (row-based binlog, full row images):
`accounts` (primary key; DECIMAL(12,2) and DECIMAL(30,10), DATE, DATETIME(6), TIMESTAMP(6) written in a
+02:00 session and expected in UTC, BOOLEAN (= TINYINT(1), which Debezium sends as INT16), BIT(1) (a Connect
boolean), DOUBLE, a ~10 KB MEDIUMTEXT), `orders` (composite primary key, DATETIME(3), a primary-key change)
and `audit` (no primary key: insert-only, as an update would be a new row of an append-only table). Snapshot,
seeded random workload with a multi-statement transaction and one added column per keyed table; land,
compact, compare; land, compare, compact, compare, row by row. Set LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES=1 to
rewrite tests/fixtures/debezium/mariadb.* from this run.
"""

from __future__ import annotations

import pytest

from tests.e2e import support

pytestmark = pytest.mark.e2e

SEED = 20260416


@pytest.fixture(scope="module")
def scenario(stack, spark, e2e_spark, tmp_path_factory):
    session = support.check_session(spark, e2e_spark)
    db = support.MariaDb(stack, support.unique("e2e_maria"))
    return support.source_to_lake(session, stack, db, tmp_path_factory.mktemp("maria"), SEED)


def test_tables_with_a_key_equal_the_source_after_each_step(scenario):
    assert support.assert_equal(scenario.comparisons, keyed=True) > 0


def test_table_without_a_key_equals_the_source_after_each_step(scenario):
    """Append-only: every insert is a row, rows equal in every column too (in one batch, and one repeating a
    row of the first batch in the second)."""
    assert scenario.workload.copies_of_earlier_rows, "the workload copied no row of an earlier batch"
    assert support.assert_equal(scenario.comparisons, keyed=False) > 0


def test_debezium_sent_every_kind_of_event(scenario):
    ops = support.op_counts(scenario.messages)
    for needed in ("r", "c", "u", "d", "tombstone"):
        assert ops[needed] > 0, f"the workload made no {needed!r} events: {dict(ops)}"
    support.say(f"mariadb events: {dict(ops)}")


def test_every_event_landed_exactly_once(scenario):
    events = sum(1 for m in scenario.messages if m["payload"] is not None and m["topic"] in scenario.topics)
    assert scenario.landed == events > 0
